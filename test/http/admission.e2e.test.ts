/**
 * Back-pressure and the rate limit against paid work, end to end over the real devnet (anvil +
 * DevUSDC + the project's facilitator) with the official x402 client's proofs and a held target
 * (docs/operations.md, "Back-pressure" and "Rate limits"). Money is checked on chain.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { createPublicClient, http, type Address, type PublicClient } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/devnet.js";
import {
  ClientRateLimit,
  SnapshotAdmission,
  createApp,
  createChallengeFastPath,
  startServer,
  type RunningServer,
} from "../../src/http/index.js";
import { createPaymentGate } from "../../src/payment/index.js";
import {
  createSnapshotEngine,
  createUrlPolicy,
  type SnapshotEngine,
} from "../../src/snapshot/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../fixtures/facilitator-proxy.js";
import { startTarget } from "../fixtures/held-target.js";
import { closedPort } from "../fixtures/targets.js";
import { usdcBalance } from "../fixtures/usdc.js";
import { MemoryPaymentRecordStore } from "../../src/store/index.js";

const PRICE_UNITS = 50_000n;

let devnet: Devnet;
let chain: PublicClient;
let engine: SnapshotEngine;
let target: Awaited<ReturnType<typeof startTarget>>;
let allowedPorts: Set<number>;
/** Counts the facilitator calls: a refused request must make none. */
let proxy: FacilitatorProxy;
const opened: RunningServer[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  target = await startTarget();
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  const probePort = await closedPort("127.0.0.1");
  allowedPorts = new Set([target.port, probePort]);
  engine = createSnapshotEngine({
    timeoutMs: 20_000,
    maxRedirects: 10,
    allowedPorts,
    allowCidrs: ["127.0.0.0/8"],
    dnsServers: [],
    httpsProbePort: probePort,
  });
}, 120_000);

afterEach(async () => {
  target.release();
  await Promise.all(opened.splice(0).map((s) => s.close(1_000)));
});

afterAll(async () => {
  await proxy?.close();
  await engine?.close();
  await target?.close();
  await devnet?.close();
});

async function startService(opts: { admission?: SnapshotAdmission; perMinute?: number }) {
  const gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: devnet.payTo,
    networks: [devnet.network],
    priceUsdc: "0.05",
    facilitatorUrl: proxy.url,
    supportedRetryMs: 0,
    log: () => {},
  });
  expect(await gate.warmUp()).toBe(true);
  const urlPolicy = createUrlPolicy({ allowedPorts, allowCidrs: ["127.0.0.0/8"] });
  const rateLimit = opts.perMinute
    ? new ClientRateLimit(new RateLimiterMemory({ points: opts.perMinute, duration: 60 }))
    : undefined;
  const app = createApp({
    engine,
    urlPolicy,
    paymentMiddleware: gate.middleware,
    log: () => {},
    ...(opts.admission && { admission: opts.admission }),
    ...(rateLimit && { rateLimit }),
  });
  const front = createChallengeFastPath({
    urlPolicy,
    unpaidChallenge: gate.unpaidChallenge,
    ...(rateLimit && { rateLimit }),
  });
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front });
  opened.push(server);
  return server.url;
}

function post(base: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url: target.url }),
  });
}

function payer(i: number): PrivateKeyAccount {
  const key = devnet.payerPrivateKeys[i];
  if (!key) throw new Error(`no payer ${i}`);
  return privateKeyToAccount(key);
}

const balanceOf = (address: Address) => usdcBalance(chain, devnet.usdcAddress, address);

/** A proof by the official client for the challenge `challenge` (a 402). */
async function proofFor(challenge: Response, account: PrivateKeyAccount) {
  expect(challenge.status).toBe(402);
  const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required")!);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  const payload = await client.createPaymentPayload(required);
  return new x402HTTPClient(client).encodePaymentSignatureHeader(payload);
}

describe("back-pressure", () => {
  it(
    "over SNAPSHOT_MAX_CONCURRENCY a paid request is 503 before verify: nothing moves, its proof pays later",
    { timeout: 120_000 },
    async () => {
      const admission = new SnapshotAdmission(1);
      const base = await startService({ admission });
      const first = payer(0);
      const second = payer(1);
      const firstProof = await proofFor(await post(base), first);
      const secondProof = await proofFor(await post(base), second);
      const [firstBefore, secondBefore, payToBefore] = await Promise.all([
        balanceOf(first.address),
        balanceOf(second.address),
        balanceOf(devnet.payTo),
      ]);

      // One paid snapshot in flight, held at the target.
      const arrived = target.hold();
      const running = post(base, firstProof);
      await arrived;
      expect(admission.inFlight).toBe(1);

      const calls = { verifies: proxy.verifies.seen, settles: proxy.settles.seen };
      const refused = await post(base, secondProof);
      expect(refused.status).toBe(503);
      // Refused before verify: the facilitator never heard of it, and nothing of it moved.
      expect({ verifies: proxy.verifies.seen, settles: proxy.settles.seen }).toEqual(calls);
      expect(await balanceOf(second.address)).toBe(secondBefore);
      expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(((await refused.json()) as { error: string }).error).toMatch(/Nothing was charged/);
      // Unpaid requests still get their challenge, and the demo is not affected.
      expect((await post(base)).status).toBe(402);
      expect((await fetch(`${base}/demo/snapshot`)).status).toBe(200);

      target.release();
      const done = await running;
      expect(done.status).toBe(200);
      expect(admission.inFlight).toBe(0);

      // The refused proof was never verified nor claimed: it pays normally now.
      const retried = await post(base, secondProof);
      expect(retried.status).toBe(200);
      expect(retried.headers.get("payment-response")).toBeTruthy();

      expect(firstBefore - (await balanceOf(first.address))).toBe(PRICE_UNITS);
      expect(secondBefore - (await balanceOf(second.address))).toBe(PRICE_UNITS);
      expect((await balanceOf(devnet.payTo)) - payToBefore).toBe(2n * PRICE_UNITS);
    },
  );
});

describe("rate limit", () => {
  it(
    "a client over its free budget still pays: its paid request goes through and settles",
    { timeout: 120_000 },
    async () => {
      const base = await startService({ perMinute: 2 });
      const account = payer(4);
      const before = await balanceOf(account.address);
      const headers = await proofFor(await post(base), account);
      expect((await post(base)).status).toBe(402);
      const limited = await post(base);
      expect(limited.status).toBe(429);

      const paid = await post(base, headers);
      expect(paid.status).toBe(200);
      expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
    },
  );
});
