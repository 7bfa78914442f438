/**
 * POST /mcp in both eras of MCP (docs/contract.md §7.10, docs/mcp.md "Two eras"): the official
 * SDK v2 client in its default mode (2025, `initialize`), `auto` (probes `server/discover`) and
 * pinned to 2026-07-28, and the SDK 1.x client. Each lists the tools, calls demo_snapshot, gets
 * the PaymentRequired, pays once on the devnet (the chain checked: one transfer of the price) and
 * has the same proof refused again. Then raw requests: the current revision's header checks and
 * version refusal, with its HTTP statuses and JSON-RPC codes.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { challengeOf, connectedMcpClient, signedProof } from "../../fixtures/mcp-client.js";
import { PRICE_UNITS } from "../../fixtures/paid-devnet.js";
import { startPaidBed, type PaidBed } from "../../fixtures/paid-service.js";

const MODERN = "2026-07-28";

let bed: PaidBed;

beforeAll(async () => {
  bed = await startPaidBed();
}, 120_000);

afterAll(async () => {
  await bed?.close();
});

/** What each client does against POST /mcp, whatever its SDK. */
interface EraClient {
  /** The era the connection speaks. */
  protocolVersion(): string | undefined;
  toolNames(): Promise<string[]>;
  call(
    name: string,
    args: Record<string, unknown>,
    meta?: Record<string, unknown>,
  ): Promise<CallToolResult>;
  close(): Promise<void>;
}

type V2Mode = "default" | "auto" | { pin: string };

async function v2Client(mode: V2Mode): Promise<EraClient> {
  const client = new Client(
    { name: "secsnap-test", version: "1.0.0" },
    mode === "default" ? {} : { versionNegotiation: { mode } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(`${bed.service.url}/mcp`)));
  return {
    protocolVersion: () => client.getNegotiatedProtocolVersion(),
    toolNames: async () => (await client.listTools()).tools.map((t) => t.name).sort(),
    call: async (name, args, meta) =>
      (await client.callTool({
        name,
        arguments: args,
        ...(meta && { _meta: meta }),
      })) as CallToolResult,
    close: () => client.close(),
  };
}

async function v1Client(): Promise<EraClient> {
  const { client, tools } = await connectedMcpClient(bed.service.url);
  return {
    // SDK 1.x knows the 2025 revisions only.
    protocolVersion: () => undefined,
    toolNames: () => Promise.resolve(tools.map((t) => t.name).sort()),
    call: async (name, args, meta) =>
      (await client.callTool({
        name,
        arguments: args,
        ...(meta && { _meta: meta }),
      })) as CallToolResult,
    close: () => client.close(),
  };
}

const CLIENTS: {
  name: string;
  era: "2025" | "2026";
  connect: () => Promise<EraClient>;
  payer: number;
}[] = [
  { name: "SDK v2, default mode", era: "2025", connect: () => v2Client("default"), payer: 1 },
  { name: "SDK v2, auto mode", era: "2026", connect: () => v2Client("auto"), payer: 2 },
  {
    name: `SDK v2, pinned to ${MODERN}`,
    era: "2026",
    connect: () => v2Client({ pin: MODERN }),
    payer: 3,
  },
  { name: "SDK 1.x", era: "2025", connect: v1Client, payer: 4 },
];

describe.each(CLIENTS)("POST /mcp with the $name client", ({ era, connect, payer }) => {
  it("speaks its era, lists the tools and serves the demo free", async () => {
    const client = await connect();
    if (era === "2026") expect(client.protocolVersion()).toBe(MODERN);
    else expect(client.protocolVersion()).not.toBe(MODERN);
    expect(await client.toolNames()).toEqual(["demo_snapshot", "snapshot"]);
    const demo = await client.call("demo_snapshot", {});
    expect(demo.isError).toBeFalsy();
    expect(demo.structuredContent).toMatchObject({ _demo: true });
    await client.close();
  });

  it("gets the PaymentRequired, pays once (one transfer of the price), and a replay of the proof moves nothing", async () => {
    const client = await connect();
    const account = bed.payer(payer);
    const fromBlock = await bed.chain.getBlockNumber();
    const [payerBefore, payeeBefore] = [
      await bed.balanceOf(account.address),
      await bed.balanceOf(bed.devnet.payTo),
    ];
    const required: PaymentRequired = challengeOf(
      await client.call("snapshot", { url: bed.target.url }),
    );
    expect(required.resource.url).toBe("mcp://tool/snapshot");
    expect(await bed.balanceOf(account.address)).toBe(payerBefore);

    const proof = await signedProof(required, account);
    const paid = await client.call("snapshot", { url: bed.target.url }, { "x402/payment": proof });
    expect(paid.isError, JSON.stringify(paid)).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({
      requested_url: bed.target.url,
      reachable: true,
    });
    const settlement = paid._meta?.["x402/payment-response"] as SettleResponse;
    expect(settlement).toMatchObject({ success: true, network: bed.devnet.network });
    expect(await bed.balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
    expect(await bed.balanceOf(bed.devnet.payTo)).toBe(payeeBefore + PRICE_UNITS);

    const replay = await client.call(
      "snapshot",
      { url: bed.target.url },
      { "x402/payment": proof },
    );
    expect(replay.isError).toBe(true);
    expect((replay.structuredContent as { error?: string }).error).toBe("payment_already_used");
    const transfers = await bed.transfersFrom(account.address, fromBlock);
    expect(transfers.map((t) => [t.args.to, t.args.value])).toEqual([
      [bed.devnet.payTo, PRICE_UNITS],
    ]);
    expect(await bed.balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
    expect(await bed.balanceOf(bed.devnet.payTo)).toBe(payeeBefore + PRICE_UNITS);
    await client.close();
  });
});
