/**
 * The payment ledger's state machine over the in-memory record store, with a scripted
 * facilitator and chain: which record each step writes before the next outside step, what a
 * retry of the same proof finds, and what the reconciler does with what nobody retries.
 */
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  VerifyResponse,
} from "@x402/core/types";
import { SettleError } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { authorizationKey, authorizationOf } from "../../../src/payment/ledger/authorization.js";
import type { ChainAnswer, ChainReader, Due } from "../../../src/payment/ledger/chain-check.js";
import { PaymentLedger, type PaidOutcome } from "../../../src/payment/ledger/ledger.js";
import { memoryPayerBudget } from "../../../src/payment/ledger/payer-budget.js";
import { Reconciler } from "../../../src/payment/ledger/reconciler.js";
import { NO_PAYMENT_EVENTS } from "../../../src/payment/telemetry.js";
import {
  MemoryPaymentRecordStore,
  type KeptAnswer,
  type PaymentRecord,
  type PaymentState,
} from "../../../src/store/index.js";

const NETWORK = "eip155:84532";
const USDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const TX = `0x${"ab".repeat(32)}`;
const REQUIREMENTS: PaymentRequirements = {
  scheme: "exact",
  network: NETWORK,
  asset: USDC,
  amount: "50000",
  payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  maxTimeoutSeconds: 300,
  extra: {},
};

let nonces = 0;
function proof(paymentId?: string, validBefore = Math.floor(Date.now() / 1000) + 600) {
  const nonce = `0x${(++nonces).toString(16).padStart(64, "0")}`;
  return {
    x402Version: 2,
    accepted: REQUIREMENTS,
    payload: {
      signature: "0x00",
      authorization: {
        from: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        to: REQUIREMENTS.payTo,
        value: "50000",
        validAfter: "0",
        validBefore: String(validBefore),
        nonce,
      },
    },
    ...(paymentId && {
      extensions: { "payment-identifier": { info: { required: false, id: paymentId } } },
    }),
  } as PaymentPayload;
}

const REPORT: KeptAnswer = {
  status: 200,
  headers: { "content-type": "application/json" },
  body: '{"requested_url":"https://example.com"}',
};

type SettleScript = () => Promise<SettleResponse>;
const settledOk: SettleScript = () =>
  Promise.resolve({ success: true, transaction: TX, network: NETWORK });

interface Harness {
  ledger: PaymentLedger;
  store: MemoryPaymentRecordStore;
  calls: { verify: number; settle: number; run: number };
  /** Every state written, in order. */
  writes: PaymentState[];
  settle: SettleScript;
  chain: ChainAnswer;
  /** The transfer each chain read was asked about. */
  reads: Due[];
  clock: { now: number };
}

function harness(options: { maxReleases?: number } = {}): Harness {
  const clock = { now: Date.now() };
  const store = new MemoryPaymentRecordStore({ now: () => clock.now });
  const h: Harness = {
    ledger: undefined as unknown as PaymentLedger,
    store,
    calls: { verify: 0, settle: 0, run: 0 },
    writes: [],
    settle: settledOk,
    chain: { kind: "no_rpc" },
    reads: [],
    clock,
  };
  const write = store.write.bind(store);
  store.write = (key, owner, record, ttl) => {
    h.writes.push(record.state);
    return write(key, owner, record, ttl);
  };
  const chain: ChainReader = {
    read: (_auth, due) => {
      h.reads.push(due);
      return Promise.resolve(h.chain);
    },
  };
  h.ledger = new PaymentLedger({
    store,
    verify: () => {
      h.calls.verify++;
      return Promise.resolve({ isValid: true } as VerifyResponse);
    },
    settle: () => {
      h.calls.settle++;
      return h.settle();
    },
    chain,
    budget: memoryPayerBudget(60),
    events: NO_PAYMENT_EVENTS,
    maxReleases: options.maxReleases ?? 3,
    recordTtlMs: 3_600_000,
    log: () => {},
  });
  return h;
}

function call(
  h: Harness,
  payload: PaymentPayload,
  options: { body?: string; answer?: KeptAnswer; gone?: boolean; paymentId?: string } = {},
): Promise<PaidOutcome> {
  return h.ledger.pay({
    version: 2,
    payload,
    requirements: REQUIREMENTS,
    paymentId: options.paymentId,
    body: Buffer.from(options.body ?? "https://example.com"),
    run: () => {
      h.calls.run++;
      return Promise.resolve(options.answer ?? REPORT);
    },
    clientGone: () => options.gone ?? false,
  });
}

function keyOf(payload: PaymentPayload): string {
  return authorizationKey(authorizationOf(payload, REQUIREMENTS)!);
}

async function record(h: Harness, payload: PaymentPayload): Promise<PaymentRecord | undefined> {
  return h.store.get(keyOf(payload));
}

describe("a paid call", () => {
  it("writes verified, report_kept and settling before settling, then settled; served once", async () => {
    const h = harness();
    const payload = proof();
    const outcome = await call(h, payload);
    expect(outcome).toMatchObject({
      kind: "paid",
      report: REPORT,
      settlement: { transaction: TX },
    });
    expect(h.writes).toEqual(["verified", "report_kept", "settling", "settled"]);
    if (outcome.kind !== "paid") throw new Error("not paid");
    await outcome.finish(true);
    expect(await record(h, payload)).toMatchObject({ state: "settled", delivered: true });

    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "payment_already_used",
    });
    expect(h.calls).toEqual({ verify: 1, settle: 1, run: 1 });
  });

  it("a report that was not delivered (client gone during settle) is served to the retry", async () => {
    const h = harness();
    const payload = proof();
    const first = await call(h, payload);
    if (first.kind !== "paid") throw new Error("not paid");
    await first.finish(false);

    const retry = await call(h, payload);
    expect(retry).toMatchObject({ kind: "paid", report: REPORT, settlement: { transaction: TX } });
    if (retry.kind === "paid") await retry.finish(true);
    expect(h.calls).toEqual({ verify: 1, settle: 1, run: 1 });
    expect((await call(h, payload)).kind).toBe("refused");
  });

  it("a payment id gets the same answer again; the id with another body is a conflict", async () => {
    const h = harness();
    const payload = proof("pay_0123456789abcdef");
    const first = await call(h, payload, { paymentId: "pay_0123456789abcdef" });
    if (first.kind !== "paid") throw new Error("not paid");
    await first.finish(true);
    const again = await call(h, payload, { paymentId: "pay_0123456789abcdef" });
    expect(again).toMatchObject({ kind: "paid", report: REPORT });
    if (again.kind === "paid") await again.finish(true);
    const other = await call(h, payload, { paymentId: "pay_0123456789abcdef", body: "other" });
    expect(other).toMatchObject({ kind: "conflict", code: "payment_id_conflict" });
    expect(h.calls.settle).toBe(1);
  });
});

describe("work nobody paid for", () => {
  it("a 400 frees the proof, counted; past maxReleases it is exhausted", async () => {
    const h = harness({ maxReleases: 2 });
    const payload = proof();
    const refusedReport = { ...REPORT, status: 400 };
    expect(await call(h, payload, { answer: refusedReport })).toMatchObject({ kind: "unpaid" });
    expect(await record(h, payload)).toMatchObject({ state: "free", releases: 1 });
    expect((await call(h, payload, { gone: true })).kind).toBe("client_gone");
    expect(await record(h, payload)).toMatchObject({ state: "free", releases: 2 });
    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "payment_proof_exhausted",
    });
    expect(h.calls.settle).toBe(0);
  });

  it("a clear settle refusal frees the proof uncounted and says why", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () =>
      Promise.resolve({
        success: false,
        errorReason: "invalid_exact_evm_insufficient_balance",
        transaction: "",
        network: NETWORK,
      });
    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "invalid_exact_evm_insufficient_balance",
    });
    // Free with no releases: as if never claimed.
    expect(await record(h, payload)).toBeUndefined();
    h.settle = settledOk;
    expect((await call(h, payload)).kind).toBe("paid");
  });
});

describe("a settlement with no known outcome", () => {
  it("settlement_pending with a transaction: 503, kept settling with the hash; the chain decides", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () =>
      Promise.resolve({
        success: false,
        errorReason: "settlement_pending",
        transaction: TX,
        network: NETWORK,
      });
    expect(await call(h, payload)).toMatchObject({ kind: "unavailable" });
    expect(await record(h, payload)).toMatchObject({ state: "settling", transaction: TX });

    h.chain = { kind: "pending", transaction: TX };
    expect((await call(h, payload)).kind).toBe("unavailable");
    h.chain = { kind: "used", transaction: TX };
    const retry = await call(h, payload);
    expect(retry).toMatchObject({ kind: "paid", report: REPORT, settlement: { transaction: TX } });
    expect(h.calls).toEqual({ verify: 1, settle: 1, run: 1 });
  });

  it("a failure carrying a transaction is unknown, never a refusal", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () =>
      Promise.resolve({
        success: false,
        errorReason: "transaction_failed",
        transaction: TX,
        network: NETWORK,
      });
    expect((await call(h, payload)).kind).toBe("unavailable");
    expect(await record(h, payload)).toMatchObject({ state: "settling", transaction: TX });
  });

  it("a refusal for a reason given after a send (no hash, or a duplicate) is unknown; the chain decides", async () => {
    // @x402/evm: the node took the transaction but its answer was lost; v1: the raw error;
    // this project's facilitator while another settle of the authorization runs.
    for (const [errorReason, status] of [
      ["invalid_exact_evm_transaction_failed", 200],
      ["transaction_failed", 200],
      ["invalid_transaction_state", 200],
      ["HTTP request failed. URL: http://127.0.0.1:8545", 200],
      ["duplicate_settlement", 409],
    ] as const) {
      const h = harness();
      const payload = proof();
      const answer: SettleResponse = {
        success: false,
        errorReason,
        transaction: "",
        network: NETWORK,
      };
      h.settle = () =>
        status === 200 ? Promise.resolve(answer) : Promise.reject(new SettleError(status, answer));
      expect((await call(h, payload)).kind, errorReason).toBe("unavailable");
      expect(await record(h, payload)).toMatchObject({ state: "settling", report: REPORT });

      h.chain = { kind: "used", transaction: TX };
      expect(await call(h, payload)).toMatchObject({ kind: "paid", report: REPORT });
      expect(h.calls).toEqual({ verify: 1, settle: 1, run: 1 });
    }
  });

  it("a lost answer without an RPC: 'already used' on the retry stays unknown, never taken as paid", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () => Promise.reject(new Error("socket hang up"));
    expect((await call(h, payload)).kind).toBe("unavailable");
    h.settle = () =>
      Promise.resolve({
        success: false,
        errorReason: "nonce_already_used",
        transaction: "",
        network: NETWORK,
      });
    // Ours, or the payer's own use of the nonce: only the chain can tell.
    expect((await call(h, payload)).kind).toBe("unavailable");
    expect(await record(h, payload)).toMatchObject({ state: "settling", report: REPORT });
    expect(h.calls).toEqual({ verify: 1, settle: 2, run: 1 });
  });

  it("'already used' on the first settle, without an RPC, is not taken as paid", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () =>
      Promise.resolve({
        success: false,
        errorReason: "nonce_already_used",
        transaction: "",
        network: NETWORK,
      });
    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "nonce_already_used",
    });
  });

  it("the chain says unused: the retry settles the kept report, no second snapshot", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () => Promise.reject(new Error("timeout"));
    expect((await call(h, payload)).kind).toBe("unavailable");
    h.chain = { kind: "unused" };
    h.settle = settledOk;
    expect((await call(h, payload)).kind).toBe("paid");
    expect(h.calls).toEqual({ verify: 1, settle: 2, run: 1 });
  });

  it("used on chain by a transaction that paid nothing: refused, freed, the report never served", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () => Promise.reject(new Error("timeout"));
    await call(h, payload);
    h.chain = { kind: "used_elsewhere", transaction: TX };
    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "authorization_used_elsewhere",
    });
    // The chain was asked about the transfer the offer is due: its price to its payTo.
    expect(h.reads.at(-1)).toMatchObject({
      payTo: REQUIREMENTS.payTo,
      amount: REQUIREMENTS.amount,
    });
    // Free with no releases: forgotten; nothing settled again.
    expect(await record(h, payload)).toBeUndefined();
    expect(h.calls).toEqual({ verify: 1, settle: 1, run: 1 });
  });

  it("'already used' on the first settle, the chain says used elsewhere: refused, never paid", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () =>
      Promise.resolve({
        success: false,
        errorReason: "invalid_exact_evm_nonce_already_used",
        transaction: "",
        network: NETWORK,
      });
    h.chain = { kind: "used_elsewhere", transaction: TX };
    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "authorization_used_elsewhere",
    });
    expect(await record(h, payload)).toBeUndefined();
  });

  it("canceled on chain: refused, the report never served", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () => Promise.reject(new Error("timeout"));
    await call(h, payload);
    h.chain = { kind: "canceled" };
    expect(await call(h, payload)).toMatchObject({
      kind: "refused",
      reason: "authorization_canceled",
    });
  });
});

describe("leases", () => {
  it("a lease held by a live request is a conflict with Retry-After", async () => {
    const h = harness();
    const payload = proof();
    await h.store.acquire(keyOf(payload), "other", 15_000, { fingerprint: "x", version: 2 });
    const outcome = await call(h, payload);
    expect(outcome).toMatchObject({ kind: "conflict", retryAfterSeconds: expect.any(Number) });
    expect(h.calls.verify).toBe(0);
  });

  it("a verified record whose request died (lease expired): verified again, nothing moved before", async () => {
    const h = harness();
    const payload = proof();
    const key = keyOf(payload);
    await h.store.acquire(key, "dead", 15_000, { fingerprint: "x", version: 2 });
    const stale = await h.store.get(key);
    await h.store.write(key, "dead", { ...stale!, state: "verified" }, 3_600_000);
    h.clock.now += 16_000;
    expect((await call(h, payload)).kind).toBe("paid");
    expect(h.calls.verify).toBe(1);
  });

  it("a write that fails before settle is a 503 and nothing is settled", async () => {
    const h = harness();
    const payload = proof();
    const write = h.store.write.bind(h.store);
    h.store.write = (key, owner, rec, ttl) =>
      rec.state === "settling" ? Promise.reject(new Error("down")) : write(key, owner, rec, ttl);
    expect((await call(h, payload)).kind).toBe("store_down");
    expect(h.calls.settle).toBe(0);
    expect(await record(h, payload)).toMatchObject({ state: "report_kept" });
  });
});

describe("the canonical key", () => {
  it("is the same for a v1 network name and its CAIP-2 id, whatever the address case", () => {
    const payload = proof();
    const v2 = authorizationOf(payload, { network: NETWORK, asset: USDC });
    const v1 = authorizationOf(payload, { network: "base-sepolia", asset: USDC.toLowerCase() });
    expect(authorizationKey(v1!)).toBe(authorizationKey(v2!));
  });
});

describe("the reconciler", () => {
  function reconciler(h: Harness): Reconciler {
    return new Reconciler({
      store: h.store,
      chain: { read: () => Promise.resolve(h.chain) },
      leaseMs: 15_000,
      recordTtlMs: 3_600_000,
      newOwner: () => h.ledger.newOwner("reconciler"),
      log: () => {},
      now: () => h.clock.now,
    });
  }

  it("moves a settling record whose transfer is on chain to settled; the retry gets it", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () => Promise.reject(new Error("timeout"));
    await call(h, payload);
    h.chain = { kind: "used", transaction: TX };
    expect(await reconciler(h).once()).toEqual({ settled: 1, freed: 0 });
    expect(await record(h, payload)).toMatchObject({ state: "settled", transaction: TX });
    expect(await call(h, payload)).toMatchObject({ kind: "paid", report: REPORT });
    expect(h.calls.settle).toBe(1);
  });

  it("frees a record whose nonce a transaction that paid nothing used; the retry is refused", async () => {
    const h = harness();
    const payload = proof();
    h.settle = () => Promise.reject(new Error("timeout"));
    await call(h, payload);
    h.chain = { kind: "used_elsewhere", transaction: TX };
    expect(await reconciler(h).once()).toEqual({ settled: 0, freed: 1 });
    expect(await record(h, payload)).toBeUndefined();
    expect(h.calls.settle).toBe(1);
  });

  it("frees an expired authorization nothing used, and never settles", async () => {
    const h = harness();
    const payload = proof(undefined, Math.floor(h.clock.now / 1000) + 30);
    h.settle = () => Promise.reject(new Error("timeout"));
    await call(h, payload);
    h.chain = { kind: "unused" };
    expect(await reconciler(h).once()).toEqual({ settled: 0, freed: 0 });
    h.clock.now += 120_000;
    expect(await reconciler(h).once()).toEqual({ settled: 0, freed: 1 });
    // Free with no releases: forgotten, as if never claimed.
    expect(await record(h, payload)).toBeUndefined();
    expect(h.calls.settle).toBe(1);
  });
});

describe("draining", () => {
  it("waits for a settlement under way", async () => {
    const h = harness();
    let answer = (_: SettleResponse) => {};
    h.settle = () => new Promise((resolve) => (answer = resolve));
    const pending = call(h, proof());
    await expect.poll(() => h.calls.settle).toBe(1);
    let drained = false;
    const drain = h.ledger.drain().then(() => (drained = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(drained).toBe(false);
    answer({ success: true, transaction: TX, network: NETWORK });
    await drain;
    expect((await pending).kind).toBe("paid");
  });
});
