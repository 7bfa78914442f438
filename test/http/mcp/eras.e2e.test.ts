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
import { validateDiscoveryExtension } from "@x402/extensions/bazaar";
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

/** The Bazaar discovery of the MCP tool: `info.input` of type `mcp`, valid by its own schema. */
function expectMcpBazaar(required: PaymentRequired): void {
  const bazaar = required.extensions?.["bazaar"] as { info: { input: unknown } } | undefined;
  expect(bazaar?.info.input).toEqual({
    type: "mcp",
    toolName: "snapshot",
    transport: "streamable-http",
    inputSchema: {
      type: "object",
      properties: { url: { type: "string", maxLength: expect.any(Number) } },
      required: ["url"],
      additionalProperties: false,
    },
    example: { url: "https://example.com" },
  });
  expect(validateDiscoveryExtension(bazaar as never)).toEqual({ valid: true });
}

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
    const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
    const [payerBefore, payeeBefore] = [
      await bed.balanceOf(account.address),
      await bed.balanceOf(bed.devnet.payTo),
    ];
    const required: PaymentRequired = challengeOf(
      await client.call("snapshot", { url: bed.target.url }),
    );
    expect(required.resource.url).toBe("mcp://tool/snapshot");
    expectMcpBazaar(required);
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

/** The 2026-07-28 per-request envelope of a raw request. */
const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1.0.0" },
};

/** A raw POST /mcp: status, and the JSON-RPC answer. */
async function raw(
  message: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<{
  status: number;
  body: {
    result?: Record<string, unknown>;
    error?: { code: number; message: string; data?: unknown };
    id?: unknown;
  };
}> {
  const response = await fetch(`${bed.service.url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: "2.0", ...message }),
  });
  expect(response.headers.get("content-type")).toContain("application/json");
  return { status: response.status, body: (await response.json()) as never };
}

/** A 2026-07-28 tools/call of `name`, its headers matching its body. */
function modernCall(id: number, name: string, args: Record<string, unknown>, meta = {}) {
  return {
    message: {
      id,
      method: "tools/call",
      params: { name, arguments: args, _meta: { ...ENVELOPE, ...meta } },
    },
    headers: { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name },
  };
}

describe(`POST /mcp's ${MODERN} answers to raw requests`, () => {
  it("offers 2026-07-28 on server/discover; its results carry resultType complete, the PaymentRequired in the tool result", async () => {
    const discovered = await raw(
      { id: 1, method: "server/discover", params: { _meta: ENVELOPE } },
      { "mcp-protocol-version": MODERN, "mcp-method": "server/discover" },
    );
    expect(discovered.status).toBe(200);
    expect(discovered.body.result).toMatchObject({
      supportedVersions: [MODERN],
      capabilities: { tools: {} },
      resultType: "complete",
    });
    const listed = await raw(
      { id: 2, method: "tools/list", params: { _meta: ENVELOPE } },
      { "mcp-protocol-version": MODERN, "mcp-method": "tools/list" },
    );
    expect(listed.body.result).toMatchObject({
      resultType: "complete",
      ttlMs: expect.any(Number),
      cacheScope: expect.any(String),
    });
    const { message, headers } = modernCall(3, "snapshot", { url: bed.target.url });
    const unpaid = await raw(message, headers);
    expect(unpaid.status).toBe(200);
    expect(unpaid.body.id).toBe(3);
    expect(unpaid.body.result).toMatchObject({
      resultType: "complete",
      isError: true,
      structuredContent: { x402Version: 2, resource: { url: "mcp://tool/snapshot" } },
    });
  });

  it("refuses a header that disagrees with the body: HTTP 400, -32020, nothing charged", async () => {
    const account = bed.payer(5);
    const before = await bed.balanceOf(account.address);
    const { message: unpaid, headers } = modernCall(1, "snapshot", { url: bed.target.url });
    const required = (await raw(unpaid, headers)).body.result!.structuredContent as PaymentRequired;
    const proof = await signedProof(required, account);
    const { message } = modernCall(
      2,
      "snapshot",
      { url: bed.target.url },
      { "x402/payment": proof },
    );
    const mismatches: Record<string, string>[] = [
      { ...headers, "mcp-method": "tools/list" },
      { ...headers, "mcp-name": "demo_snapshot" },
      { ...headers, "mcp-protocol-version": "2025-06-18" },
      { "mcp-protocol-version": MODERN, "mcp-name": "snapshot" },
    ];
    for (const mismatched of mismatches) {
      const answer = await raw(message, mismatched);
      expect(answer.status, JSON.stringify(mismatched)).toBe(400);
      expect(answer.body.error?.code, JSON.stringify(mismatched)).toBe(-32020);
      expect(answer.body.id).toBe(2);
    }
    expect(await bed.balanceOf(account.address)).toBe(before);
    // The same proof with matching headers is then served, once.
    const paid = await raw(message, headers);
    expect(paid.body.result).toMatchObject({
      resultType: "complete",
      structuredContent: { reachable: true },
    });
    expect(await bed.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });

  it("refuses an unsupported protocol version with HTTP 400 and -32022 naming the supported one", async () => {
    const { message } = modernCall(
      7,
      "demo_snapshot",
      {},
      {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
      },
    );
    const answer = await raw(message, {
      "mcp-protocol-version": "2099-01-01",
      "mcp-method": "tools/call",
      "mcp-name": "demo_snapshot",
    });
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: -32022,
      data: { supported: [MODERN], requested: "2099-01-01" },
    });
    expect(answer.body.id).toBe(7);
  });

  it("refuses a 2026-07-28 version header on a request without the envelope: HTTP 400, -32602", async () => {
    const answer = await raw(
      { id: 8, method: "tools/call", params: { name: "demo_snapshot", arguments: {} } },
      { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "demo_snapshot" },
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error?.code).toBe(-32602);
  });

  it("answers GET and DELETE with 405 in either era", async () => {
    for (const method of ["GET", "DELETE"]) {
      for (const version of [MODERN, "2025-11-25"]) {
        const response = await fetch(`${bed.service.url}/mcp`, {
          method,
          headers: { accept: "text/event-stream", "mcp-protocol-version": version },
        });
        expect(response.status, `${method} ${version}`).toBe(405);
        await response.text();
      }
    }
  });
});
