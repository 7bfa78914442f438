/**
 * Back-pressure and the rate limit against paid work, end to end over the real devnet (anvil +
 * DevUSDC + the project's facilitator) with the official x402 client's proofs and a held target
 * (docs/operations.md, "Back-pressure" and "Rate limits"). Money is checked on chain.
 */
import { RateLimiterMemory } from "rate-limiter-flexible";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ClientRateLimit, SnapshotAdmission } from "../../../src/http/index.js";
import type { SnapshotEngine } from "../../../src/snapshot/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { startTarget } from "../../fixtures/held-target.js";
import {
  PRICE_UNITS,
  challengeIn,
  devnetGate,
  localEngine,
  loopbackScope,
  postSnapshot,
  startGatedService,
  startPaidDevnet,
  v2Proof,
  type GatedService,
  type PaidDevnet,
  type Scope,
} from "../../fixtures/paid-devnet.js";
import { closedPort } from "../../fixtures/targets.js";

let devnet: PaidDevnet;
let engine: SnapshotEngine;
let target: Awaited<ReturnType<typeof startTarget>>;
let scope: Scope;
/** Counts the facilitator calls: a refused request must make none. */
let proxy: FacilitatorProxy;
const opened: GatedService[] = [];

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startTarget();
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  const probePort = await closedPort("127.0.0.1");
  scope = loopbackScope([target.port, probePort]);
  engine = localEngine(scope, probePort, 20_000);
}, 120_000);

afterEach(async () => {
  target.release();
  await Promise.all(opened.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  await proxy?.close();
  await engine?.close();
  await target?.close();
  await devnet?.close();
});

async function startService(opts: { admission?: SnapshotAdmission; perMinute?: number }) {
  const rateLimit = opts.perMinute
    ? new ClientRateLimit(new RateLimiterMemory({ points: opts.perMinute, duration: 60 }))
    : undefined;
  const service = await startGatedService({
    engine,
    scope,
    gate: devnetGate(devnet, proxy.url),
    fastPath: true,
    ...(opts.admission && { admission: opts.admission }),
    ...(rateLimit && { rateLimit }),
  });
  opened.push(service);
  expect(await service.gate.warmUp()).toBe(true);
  return service.url;
}

function post(base: string, headers: Record<string, string> = {}) {
  return postSnapshot(base, target.url, headers);
}

/** A proof by the official client for the challenge `challenge` (a 402). */
async function proofFor(challenge: Response, account: PrivateKeyAccount) {
  return (await v2Proof(account, challengeIn(challenge))).headers;
}

describe("back-pressure", () => {
  it(
    "over SNAPSHOT_MAX_CONCURRENCY a paid request is 503 before its proof is verified: nothing moves, its proof pays later",
    { timeout: 120_000 },
    async () => {
      const admission = new SnapshotAdmission(1);
      const base = await startService({ admission });
      const first = devnet.payer(0);
      const second = devnet.payer(1);
      const firstProof = await proofFor(await post(base), first);
      const secondProof = await proofFor(await post(base), second);
      const [firstBefore, secondBefore, payToBefore] = await Promise.all([
        devnet.balanceOf(first.address),
        devnet.balanceOf(second.address),
        devnet.balanceOf(devnet.payTo),
      ]);

      // One paid snapshot in flight, held at the target.
      const arrived = target.hold();
      const running = post(base, firstProof);
      await arrived;
      expect(admission.inFlight).toBe(1);

      const calls = { verifies: proxy.verifies.seen, settles: proxy.settles.seen };
      const refused = await post(base, secondProof);
      expect(refused.status).toBe(503);
      // The slot is taken before the proof is verified: a call the instance cannot run costs
      // the facilitator nothing, is never settled, and nothing of it moved.
      expect({ verifies: proxy.verifies.seen, settles: proxy.settles.seen }).toEqual(calls);
      expect(await devnet.balanceOf(second.address)).toBe(secondBefore);
      expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(((await refused.json()) as { error: string }).error).toMatch(/Nothing was charged/);
      // Unpaid requests still get their challenge, and the demo is not affected.
      expect((await post(base)).status).toBe(402);
      expect((await fetch(`${base}/demo/snapshot`)).status).toBe(200);

      target.release();
      const done = await running;
      expect(done.status).toBe(200);
      expect(admission.inFlight).toBe(0);

      // The refused proof was left claimed, never settled: it pays normally now.
      const retried = await post(base, secondProof);
      expect(retried.status).toBe(200);
      expect(retried.headers.get("payment-response")).toBeTruthy();

      expect(firstBefore - (await devnet.balanceOf(first.address))).toBe(PRICE_UNITS);
      expect(secondBefore - (await devnet.balanceOf(second.address))).toBe(PRICE_UNITS);
      expect((await devnet.balanceOf(devnet.payTo)) - payToBefore).toBe(2n * PRICE_UNITS);
    },
  );
});

describe("rate limit", () => {
  it(
    "a client over its free budget still pays: its paid request goes through and settles",
    { timeout: 120_000 },
    async () => {
      const base = await startService({ perMinute: 2 });
      const account = devnet.payer(4);
      const before = await devnet.balanceOf(account.address);
      const headers = await proofFor(await post(base), account);
      expect((await post(base)).status).toBe(402);
      const limited = await post(base);
      expect(limited.status).toBe(429);

      const paid = await post(base, headers);
      expect(paid.status).toBe(200);
      expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
    },
  );
});
