/**
 * POST /mcp end to end (docs/contract.md §7.10): a real devnet (anvil + DevUSDC + the project's
 * facilitator), the service wired as `secsnap serve` wires it, and the official MCP SDK client on
 * its default path (listTools, then callTool), paying with the official x402 client. Every step
 * is a result, never an exception; each paid case checks the chain.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { SettleResponse } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { Ajv2020 as Ajv } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withPayment } from "x402-mcp";
import {
  callSnapshot,
  challengeOf,
  connectedMcpClient,
  signedProof,
  textOf,
} from "../../fixtures/mcp-client.js";
import { startPaidBed, type PaidBed } from "../../fixtures/paid-service.js";

const PRICE_UNITS = 50_000n;

let bed: PaidBed;

beforeAll(async () => {
  bed = await startPaidBed();
}, 120_000);

afterAll(async () => {
  await bed?.close();
});

const connected = () => connectedMcpClient(bed.service.url);
const call = callSnapshot;
const signed = signedProof;

describe("POST /mcp with the official MCP SDK client", () => {
  it("lists snapshot and demo_snapshot, and serves the demo free", async () => {
    const { client, tools } = await connected();
    expect(tools.map((t) => t.name).sort()).toEqual(["demo_snapshot", "snapshot"]);
    const demo = (await client.callTool({
      name: "demo_snapshot",
      arguments: {},
    })) as CallToolResult;
    expect(demo.isError).toBeFalsy();
    expect(demo.structuredContent).toMatchObject({ _demo: true });
    await client.close();
  });

  it("answers an unpaid call with the PaymentRequired for mcp://tool/snapshot", async () => {
    const { client } = await connected();
    const required = challengeOf(await call(client, bed.target.url));
    expect(required.x402Version).toBe(2);
    expect(required.resource.url).toBe("mcp://tool/snapshot");
    expect(required.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: bed.devnet.network,
        amount: String(PRICE_UNITS),
        payTo: bed.devnet.payTo,
        asset: bed.devnet.usdcAddress,
      }),
    ]);
    await client.close();
  });

  it("refuses an invalid or blocked URL with a SnapshotError, asking no payment, moving nothing", async () => {
    const { client } = await connected();
    const account = bed.payer(3);
    const before = await bed.balanceOf(account.address);
    const blocked = await call(client, "http://169.254.169.254/latest/meta-data");
    expect(blocked.isError).toBe(true);
    expect(blocked.structuredContent).toMatchObject({ error_type: "ssrf" });
    expect(blocked.structuredContent).not.toHaveProperty("accepts");
    // Even with a valid proof for a valid call, an invalid URL is refused before payment.
    const required = challengeOf(await call(client, bed.target.url));
    const payload = await signed(required, account);
    const invalid = await call(client, "not a url at all", { "x402/payment": payload });
    expect(invalid.isError).toBe(true);
    expect(invalid.structuredContent).toMatchObject({ error_type: "invalid_url" });
    expect(invalid._meta?.["x402/payment-response"]).toBeUndefined();
    expect(await bed.balanceOf(account.address)).toBe(before);
    await client.close();
  });

  it("serves a paid call: the report validates against the listed output schema, 50000 moved once, a proof served once", async () => {
    const { client, tools } = await connected();
    const account = bed.payer(4);
    const [payerBefore, payeeBefore] = [
      await bed.balanceOf(account.address),
      await bed.balanceOf(bed.devnet.payTo),
    ];
    const payload = await signed(challengeOf(await call(client, bed.target.url)), account);
    const paid = await call(client, bed.target.url, { "x402/payment": payload });
    expect(paid.isError, textOf(paid)).toBeFalsy();
    const schema = tools.find((t) => t.name === "snapshot")!.outputSchema!;
    // Formats (date-time) are not the point here: the shape is.
    const validate = new Ajv({ strict: false, validateFormats: false }).compile(schema);
    expect(validate(paid.structuredContent), JSON.stringify(validate.errors)).toBe(true);
    expect(paid.structuredContent).toMatchObject({
      requested_url: bed.target.url,
      reachable: true,
    });
    const settlement = paid._meta?.["x402/payment-response"] as SettleResponse;
    expect(settlement).toMatchObject({ success: true, network: bed.devnet.network });
    const receipt = await bed.chain.getTransactionReceipt({
      hash: settlement.transaction as `0x${string}`,
    });
    expect(receipt.status).toBe("success");
    expect(await bed.balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
    expect(await bed.balanceOf(bed.devnet.payTo)).toBe(payeeBefore + PRICE_UNITS);

    // The same proof again: served once.
    const again = await call(client, bed.target.url, { "x402/payment": payload });
    expect(again.isError).toBe(true);
    expect((again.structuredContent as { error?: string } | undefined)?.error).toBe(
      "payment_already_used",
    );
    expect(await bed.balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
    await client.close();
  });

  it("gives the same result again for a payment id, one transfer; a base64 proof is read too", async () => {
    const { client } = await connected();
    const account = bed.payer(5);
    const before = await bed.balanceOf(account.address);
    const id = generatePaymentId();
    const payload = await signed(challengeOf(await call(client, bed.target.url)), account, id);
    const encoded = Buffer.from(JSON.stringify(payload)).toString("base64");
    const first = await call(client, bed.target.url, { "x402/payment": encoded });
    expect(first.isError, textOf(first)).toBeFalsy();
    const second = await call(client, bed.target.url, { "x402/payment": payload });
    expect(second.isError, textOf(second)).toBeFalsy();
    expect(second.structuredContent).toEqual(first.structuredContent);
    expect(second._meta?.["x402/payment-response"]).toEqual(first._meta?.["x402/payment-response"]);
    expect(await bed.balanceOf(account.address)).toBe(before - PRICE_UNITS);
    await client.close();
  });

  it("answers GET and DELETE with 405 (stateless: no stream, no session)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const response = await fetch(`${bed.service.url}/mcp`, {
        method,
        headers: { accept: "text/event-stream" },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toContain("POST");
      await response.text();
    }
  });

  it("is paid by the x402-mcp 0.0.5 client in its x402 v1 form, one transfer", async () => {
    const { client, tools } = await connected();
    const account = bed.payer(6);
    const before = await bed.balanceOf(account.address);
    // The MCP client shape x402-mcp wraps (the ai SDK's), over the official SDK client.
    const aiShaped = {
      isClosed: false,
      assertCapability: () => {},
      request: (r: { request: never; resultSchema: never; options?: never }) =>
        client.request(r.request, r.resultSchema, r.options),
      tools: () =>
        Promise.resolve(
          Object.fromEntries(
            tools.map((t) => [
              t.name,
              {
                inputSchema: { jsonSchema: t.inputSchema },
                execute: (args: Record<string, unknown>) =>
                  client.callTool({ name: t.name, arguments: args }),
              },
            ]),
          ),
        ),
    };
    const paying = await withPayment(aiShaped as never, { account, network: "base-sepolia" });
    const wrapped = (await (paying as unknown as { tools(): Promise<unknown> }).tools()) as Record<
      string,
      { execute(args: unknown, options: unknown): Promise<unknown> }
    >;
    // Its v1 form without a usable payment: the v1 challenge, in that form.
    const refused = await call(client, bed.target.url, { "x402.payment": "not-a-payment" });
    expect(refused.isError).toBe(true);
    const challenge = refused.structuredContent as {
      x402Version: number;
      accepts: Record<string, unknown>[];
    };
    expect(challenge.x402Version).toBe(1);
    expect(challenge.accepts[0]).toMatchObject({
      network: "base-sepolia",
      maxAmountRequired: String(PRICE_UNITS),
      resource: "mcp://tool/snapshot",
    });
    const { paymentAuthorization } = (await wrapped.generatePaymentAuthorization!.execute(
      { paymentRequirements: challenge.accepts[0] },
      { toolCallId: "1", messages: [] },
    )) as { paymentAuthorization: string };
    const paid = (await wrapped.snapshot!.execute(
      { url: bed.target.url, paymentAuthorization },
      { toolCallId: "2", messages: [] },
    )) as CallToolResult;
    expect(paid.isError, JSON.stringify(paid)).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ requested_url: bed.target.url });
    expect(paid._meta?.["x402.payment-response"]).toMatchObject({ success: true });
    expect(await bed.balanceOf(account.address)).toBe(before - PRICE_UNITS);
    await client.close();
  });
});
