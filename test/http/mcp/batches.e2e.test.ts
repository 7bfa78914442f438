/**
 * POST /mcp budgets messages, not requests (docs/contract.md §7.10, docs/mcp.md "Budgets and
 * batches"), on the real devnet (anvil + DevUSDC + the project's facilitator behind a proxy that
 * counts its /verify calls): a JSON-RPC batch is refused whole, nothing in it verified; a proof
 * in the `_meta` of any tool but `snapshot` is ignored, so the call stays a free answer under the
 * client's budget; and an admission slot is taken before a proof is verified and given back as
 * soon as the proof fails, so a call the instance cannot run costs no verification.
 */
import type { PaymentPayload, PaymentRequired, SettleResponse } from "@x402/core/types";
import { RateLimiterMemory } from "rate-limiter-flexible";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ClientRateLimit,
  SnapshotAdmission,
  createApp,
  startServer,
  type RunningServer,
} from "../../../src/http/index.js";
import { createPaymentGate, type PaymentGate } from "../../../src/payment/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { signedProof } from "../../fixtures/mcp-client.js";
import {
  PRICE_UNITS,
  devnetGate,
  startCountingTarget,
  startPaidDevnet,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";

let devnet: PaidDevnet;
let target: CountingTarget;
let proxy: FacilitatorProxy;
const opened: { gate: PaymentGate; server: RunningServer }[] = [];

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
}, 120_000);

afterAll(async () => {
  for (const { gate, server } of opened) {
    gate.close();
    await server.close(1_000);
  }
  await proxy?.close();
  await target?.close();
  await devnet?.close();
});

/** The service as `serve` wires /mcp, paid on the devnet through the proxy. */
async function startService(options: { perMinute?: number; maxInFlight?: number }) {
  const gate = createPaymentGate(devnetGate(devnet, proxy.url));
  const rateLimit =
    options.perMinute !== undefined
      ? new ClientRateLimit(new RateLimiterMemory({ points: options.perMinute, duration: 60 }))
      : undefined;
  const app = createApp({
    engine: target.engine,
    urlPolicy: createUrlPolicy(target.scope),
    payment: gate.route,
    mcpPayment: gate.mcp,
    admission: new SnapshotAdmission(options.maxInFlight),
    log: () => {},
    ...(rateLimit && { rateLimit }),
  });
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
  opened.push({ gate, server });
  return server.url;
}

type Message = { jsonrpc: "2.0"; id: number; method: string; params: object };

function message(id: number, method: string, params: object = {}): Message {
  return { jsonrpc: "2.0", id, method, params };
}

/** POST /mcp of `body` (one message, a batch, or any text) as the SDK client sends it. */
function post(base: string, body: unknown): Promise<Response> {
  return fetch(`${base}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function snapshotCall(id: number, meta?: Record<string, unknown>): Message {
  return message(id, "tools/call", {
    name: "snapshot",
    arguments: { url: target.url },
    ...(meta && { _meta: meta }),
  });
}

/** One call's tool result. */
async function resultOf(response: Response): Promise<{
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { text: string }[];
  _meta?: Record<string, unknown>;
}> {
  const body = await response.text();
  expect(response.status, body).toBe(200);
  return (JSON.parse(body) as { result: Awaited<ReturnType<typeof resultOf>> }).result;
}

async function challenge(base: string): Promise<PaymentRequired> {
  const result = await resultOf(await post(base, snapshotCall(1)));
  return result.structuredContent as unknown as PaymentRequired;
}

/**
 * A proof in the official client's shape that the facilitator refuses: signed by payer 6 for an
 * authorization naming payer 7 as the payer.
 */
async function forgedProof(required: PaymentRequired): Promise<PaymentPayload> {
  const payload = await signedProof(required, devnet.payer(6));
  const exact = payload.payload as { authorization: Record<string, unknown> };
  const from: Address = devnet.payer(7).address;
  return { ...payload, payload: { ...exact, authorization: { ...exact.authorization, from } } };
}

async function expectBatchRefused(response: Response): Promise<void> {
  expect(response.status).toBe(400);
  expect(response.headers.get("content-type")).toBe("application/json");
  expect(await response.json()).toEqual({
    jsonrpc: "2.0",
    error: { code: -32600, message: "Invalid Request: batches are not supported" },
    id: null,
  });
}

describe("POST /mcp counts messages", () => {
  it("refuses a batch whole: 15 paid calls with forged proofs reach no /verify, 100 tools/list no answer", async () => {
    const base = await startService({});
    const required = await challenge(base);
    // Each proof echoes the challenge's extensions (≈ 3.6 KB): 15 stay under the 64 KiB read.
    const proofs = await Promise.all(Array.from({ length: 15 }, () => forgedProof(required)));
    const verifiesBefore = proxy.verifies.seen;

    const calls = proofs.map((proof, i) => snapshotCall(i + 1, { "x402/payment": proof }));
    // Over the 16 KiB the unpaid fast path reads: the route reads it before the SDK.
    expect(JSON.stringify(calls).length).toBeGreaterThan(16 * 1024);
    await expectBatchRefused(await post(base, calls));
    expect(proxy.verifies.seen - verifiesBefore).toBe(0);
    const lists = Array.from({ length: 100 }, (_, i) => message(i + 1, "tools/list"));
    await expectBatchRefused(await post(base, lists));

    // One message per request: each forged proof costs one /verify, in its own request.
    const single = await resultOf(await post(base, calls[0]));
    expect(single.isError).toBe(true);
    expect(single.structuredContent).toHaveProperty("accepts");
    expect(proxy.verifies.seen - verifiesBefore).toBe(1);
  });

  it("reads at most 64 KiB of a request: a larger message is a 413, unanswered", async () => {
    const base = await startService({});
    const padded = message(1, "tools/list", { _meta: { padding: "x".repeat(70 * 1024) } });
    const refused = await post(base, padded);
    expect(refused.status).toBe(413);
    expect(((await refused.json()) as { error: { code: number } }).error.code).toBe(-32000);
    expect((await post(base, message(2, "tools/list"))).status).toBe(200);
  });

  it("ignores a proof in demo_snapshot's _meta: not verified, and a free answer under the budget", async () => {
    const base = await startService({ perMinute: 2 });
    // The budget's two free answers: the challenge, and the demo.
    const proof = await forgedProof(await challenge(base));
    const verifiesBefore = proxy.verifies.seen;
    const demo = (meta: Record<string, unknown>) =>
      post(base, message(2, "tools/call", { name: "demo_snapshot", arguments: {}, _meta: meta }));
    const served = await resultOf(await demo({ "x402/payment": proof }));
    expect(served.structuredContent).toMatchObject({ _demo: true });
    const limited = await demo({ "x402/payment": proof });
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as { error_type: string }).error_type).toBe("rate_limited");
    expect(proxy.verifies.seen - verifiesBefore).toBe(0);
  });

  it("takes the admission slot before verify: while a forged proof is at /verify, a genuine paid call is busy, unverified and uncharged; the slot comes back and it pays once", async () => {
    const base = await startService({ maxInFlight: 1 });
    const required = await challenge(base);
    const payer = devnet.payer(3);
    const before = await devnet.balanceOf(payer.address);
    const hold = proxy.holdNextVerify();
    const forged = post(base, snapshotCall(1, { "x402/payment": await forgedProof(required) }));
    await hold.reached;

    const genuine = snapshotCall(2, { "x402/payment": await signedProof(required, payer) });
    const verifiesBefore = proxy.verifies.seen;
    const busy = await resultOf(await post(base, genuine));
    expect(busy.isError).toBe(true);
    expect(busy.content[0]?.text).toMatch(/Too many snapshots in progress.*Nothing was charged/);
    expect(proxy.verifies.seen).toBe(verifiesBefore);
    expect(await devnet.balanceOf(payer.address)).toBe(before);

    hold.release();
    const refused = await resultOf(await forged);
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toHaveProperty("accepts");

    // The forged proof gave its slot back: the same genuine proof now pays, once.
    const paid = await resultOf(await post(base, genuine));
    expect(paid.isError, paid.content[0]?.text).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ requested_url: target.url });
    const settlement = paid._meta?.["x402/payment-response"] as SettleResponse;
    expect(settlement).toMatchObject({ success: true, network: devnet.network });
    expect(before - (await devnet.balanceOf(payer.address))).toBe(PRICE_UNITS);
  });
});
