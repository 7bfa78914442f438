import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  VerifyResponse,
} from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import type { KeptAnswer, PaymentRecord, PaymentRecordStore } from "../../store/index.js";
import {
  authorizationKey,
  authorizationOf,
  callFingerprint,
  paymentIdKey,
  type Authorization,
} from "./authorization.js";
import type { ConflictCode } from "../answers/catalogue.js";
import type { ChainReader } from "./chain-check.js";
import { describeError } from "../describe-error.js";
import type { PaidRequestTimings } from "../gate-options.js";
import type { PayerBudget } from "./payer-budget.js";
import { settledReport, type ReportSigner } from "./settled-report.js";
import type { PaymentEvents, ProtocolVersion } from "../telemetry.js";

/**
 * The paid call as one state machine over the durable payment record (docs/payment.md, "The
 * payment record"). Framework-free: the HTTP route (src/payment/gate.ts) and any other transport
 * hand it a decoded proof and a way to run the work, and turn its outcome into their own answer.
 *
 *   acquire lease ─ verify ─▶ verified ─ run ─▶ report_kept ─▶ settling ─ settle ─▶ settled
 *                                        └─ 400 / client gone ─▶ free (counted)
 *
 * Every write lands before the outside step it prepares (verify, run, settle), and a write that
 * fails stops the call with a 503 before that step: money never moves on an unrecorded step. An
 * outcome the service cannot prove (time-out, 5xx, lost answer, `settlement_pending`, a failure
 * carrying a transaction, a refusal for a reason that can come after a send, any refusal once a
 * settle went out) stays `settling` until the chain says what happened.
 */

/** How long a claim lives unrenewed: a dead request or a stalled store holds a proof no longer. */
export const DEFAULT_LEASE_MS = 15_000;
/** Leases a paid answer may take to be handed over before it counts as not delivered. */
const FINISH_WAIT_LEASES = 4;
/** Cap on the Retry-After of "in progress": a live request answers well within it. */
const MAX_IN_PROGRESS_RETRY_AFTER_S = 5;

/** One paid call as a transport hands it over. */
export interface PaidCallInput {
  readonly version: 1 | 2;
  /** The decoded proof in the SDK's form (a v1 proof: x402Version 1, `accepted` its requirement). */
  readonly payload: PaymentPayload;
  /** The offered requirement the proof matched (the service's own network and asset). */
  readonly requirements: PaymentRequirements;
  /** The payer's payment id (payment-identifier), when the proof carries one. */
  readonly paymentId: string | undefined;
  /** The request's bytes as received: the same proof with other bytes is a 409. */
  readonly body: Uint8Array;
  /** Runs the paid work: status 200 is the report; anything else is answered and never charged. */
  run(signal: AbortSignal): Promise<KeptAnswer>;
  /** True once the client has gone: a report nobody receives is not charged. */
  clientGone(): boolean;
  /**
   * The settlement with the service's signed receipt (the same object when it has one already):
   * made once, when it settled, and kept in the record with it, so a replay of the same proof
   * carries the same receipt.
   */
  withReceipt?(settlement: SettleResponse): Promise<SettleResponse>;
  /** The instance's slots for the work, one taken before the proof is verified (none: no limit). */
  readonly admission?: WorkAdmission;
}

/** Slots for paid work (the HTTP layer's back-pressure), as the ledger takes one. */
export interface WorkAdmission {
  /** Takes a slot (undefined; `leave` once the work ran), or the 503 refusing it. */
  enter(): KeptAnswer | undefined;
  leave(): void;
}

/** What a paid call came to; the transport turns it into its answer. */
export type PaidOutcome =
  | {
      kind: "paid";
      report: KeptAnswer;
      settlement: SettleResponse;
      /**
       * Must be called once the answer was handed over (`delivered`) or could not be: a report
       * not delivered is served again on the retry of the same proof.
       */
      finish(delivered: boolean): Promise<void>;
    }
  /** The work's own refusal (a 400): never charged. */
  | { kind: "unpaid"; answer: KeptAnswer }
  | { kind: "client_gone" }
  /** A 402: the proof is refused for `reason`. */
  | {
      kind: "refused";
      reason: string;
      message: string;
      /** The facilitator refused the settlement (after the report was made), not the proof. */
      settlement?: { network: string };
    }
  | { kind: "conflict"; code: ConflictCode; retryAfterSeconds?: number }
  | { kind: "over_budget"; retryAfterMs: number }
  /** A 503 with `Retry-After`: nothing moved, or what moved is kept for the retry. */
  | { kind: "unavailable"; code: "facilitator_unavailable" | "settlement_unknown" }
  | { kind: "store_down" };

export interface LedgerParts {
  store: PaymentRecordStore;
  /** The facilitator's /verify (through the SDK's resource server). */
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse>;
  /** The facilitator's /settle, called directly: every answer of it is classified here. */
  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse>;
  chain: ChainReader;
  budget: PayerBudget;
  events: PaymentEvents;
  /** Counted releases after which a proof is refused (`payment_proof_exhausted`). */
  maxReleases: number;
  /** How long a record lives after its last write (X402_IDEMPOTENCY_TTL_SECONDS). */
  recordTtlMs: number;
  leaseMs?: number;
  onPaidRequest?: (timings: PaidRequestTimings) => void;
  /**
   * The report with its signed `proof` (signing/report-proof.ts), made once the payment settled
   * and kept in the record in its place: a replay serves the same bytes. None: kept as it is.
   */
  sign?: ReportSigner;
  log: (line: string) => void;
}

/** The reason (and words) of a proof released too often. */
const PROOF_EXHAUSTED = "payment_proof_exhausted";
function proofExhaustedMessage(releases: number): string {
  return `this payment proof was already used for ${releases} refused snapshots; sign a new one`;
}
const ALREADY_USED = "payment_already_used";
/** The reason of a proof whose nonce another transaction used, paying us nothing. */
const USED_ELSEWHERE = "authorization_used_elsewhere";

/** A facilitator settle answer that says the authorization was used already (maybe by us). */
const AUTHORIZATION_USED = /nonce_already_used|authorization.*used|nonce.*used/i;

/**
 * The settle refusals a facilitator gives before it sends a transaction: only these prove nothing
 * moved. Every other failure is unknown, because @x402/evm answers after broadcasting too: a send
 * whose answer was lost (the node took it) or that failed on a resend is
 * `invalid_exact_evm_transaction_failed` with no hash, a v1 send failure is the raw error
 * message, and receipt failures (`invalid_transaction_state`, `settlement_pending`, a transfer
 * event mismatch) come after the send; a facilitator's 409 `duplicate_settlement` means another
 * settle of the same authorization is under way. Sources: @x402/evm's exact scheme (settle runs
 * the checks of `verifyEIP3009` first, and names the reverts of its gas estimate), the verdict
 * reasons of x402 v1, and the 400s of this project's facilitator.
 */
const REFUSED_BEFORE_BROADCAST: ReadonlySet<string> = new Set([
  // The request itself (this project's facilitator: 400; any facilitator's verdict).
  "invalid_payload",
  "invalid_payment_requirements",
  "invalid_x402_version",
  "invalid_network",
  "invalid_scheme",
  "unsupported_scheme",
  "unsupported_payload_type",
  // @x402/evm exact: the checks settle runs before sending.
  "invalid_exact_evm_scheme",
  "invalid_exact_evm_network_mismatch",
  "invalid_exact_evm_missing_eip712_domain",
  "invalid_exact_evm_signature",
  "invalid_exact_evm_failed_to_parse_signature",
  "invalid_exact_evm_recipient_mismatch",
  "invalid_exact_evm_payload_authorization_valid_before",
  "invalid_exact_evm_payload_authorization_valid_after",
  "invalid_exact_evm_payload_authorization_value_mismatch",
  "invalid_exact_evm_authorization_value",
  "asset_not_deployed_contract",
  "eip6492_factory_not_allowed",
  // @x402/evm exact: the simulation or gas estimate reverted (nothing was sent).
  "invalid_exact_evm_insufficient_balance",
  "invalid_exact_evm_eip3009_not_supported",
  "invalid_exact_evm_token_name_mismatch",
  "invalid_exact_evm_token_version_mismatch",
  "invalid_exact_evm_transaction_simulation_failed",
  // x402 v1 verdicts (hosted facilitators).
  "insufficient_funds",
  "invalid_exact_evm_payload_signature",
  "invalid_exact_evm_payload_authorization_value",
  "invalid_exact_evm_payload_recipient_mismatch",
  "payment_expired",
]);

/** One call under way: its key, fingerprint and the payer's id key. */
interface Call {
  readonly input: PaidCallInput;
  readonly version: ProtocolVersion;
  readonly auth: Authorization;
  readonly key: string;
  readonly fingerprint: string;
  readonly idKey: string | undefined;
  readonly started: number;
  verified?: number;
  handled?: number;
}

/** What one settle attempt came to. */
type Settled =
  | { kind: "settled"; settlement: SettleResponse }
  | { kind: "refused"; reason: string }
  | { kind: "used"; reason: string }
  | { kind: "unknown"; why: string; transaction: string | undefined };

export class PaymentLedger {
  private readonly leaseMs: number;
  /** This process's lease owners: unique across instances and restarts. */
  private readonly instance = randomUUID();
  private sequence = 0;
  /** Calls under way here, so draining can wait for their settlements. */
  private readonly active = new Set<Promise<unknown>>();

  constructor(private readonly parts: LedgerParts) {
    this.leaseMs = parts.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /** Calls in flight on this instance (settlements included). */
  get underWay(): number {
    return this.active.size;
  }

  /** Resolves once no call is under way here (each is bounded by its facilitator time-outs). */
  async drain(): Promise<void> {
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
  }

  /** A new lease owner id: one per call, never reused. */
  newOwner(role: string): string {
    return `${role}:${this.instance}:${++this.sequence}`;
  }

  pay(input: PaidCallInput): Promise<PaidOutcome> {
    const auth = authorizationOf(input.payload, input.requirements);
    if (!auth) {
      return Promise.resolve(
        refused("invalid_payload", rejection("invalid_payload", "no EIP-3009 authorization")),
      );
    }
    const key = authorizationKey(auth);
    const call: Call = {
      input,
      version: input.version === 1 ? "1" : "2",
      auth,
      key,
      fingerprint: callFingerprint(key, input.body),
      idKey: input.paymentId !== undefined ? paymentIdKey(auth.from, input.paymentId) : undefined,
      started: performance.now(),
    };
    const running = this.held(call).then((outcome) => {
      this.report(call, outcome);
      return outcome;
    });
    this.active.add(running);
    void running.finally(() => this.active.delete(running));
    return running;
  }

  /** The lease taken (or not), the record's state decides; the lease goes when the call ends. */
  private async held(call: Call): Promise<PaidOutcome> {
    const { store, log } = this.parts;
    const owner = this.newOwner("call");
    let acquired;
    try {
      acquired = await store.acquire(call.key, owner, this.leaseMs, {
        fingerprint: call.fingerprint,
        version: call.input.version,
      });
    } catch (error) {
      log(`payment record store failed: ${describeError(error)}`);
      return { kind: "store_down" };
    }
    if (acquired.held) {
      // A copy of a proof in use by another request (metrics: replayed).
      this.parts.events.payment(call.version, "replayed");
      return inProgress(acquired.record);
    }
    const lease = new HeldLease(store, call.key, owner, this.leaseMs, this.parts.recordTtlMs, log);
    lease.current = acquired.record;
    let outcome: PaidOutcome = { kind: "store_down" };
    try {
      outcome = await this.step(call, lease, acquired.record);
    } catch (error) {
      log(`payment record store failed: ${describeError(error)}`);
    } finally {
      // A paid answer keeps the lease until it is handed over (finish), so delivery is recorded.
      if (outcome.kind !== "paid") await lease.release();
    }
    if (outcome.kind === "paid") {
      let finished: Promise<void> | undefined;
      const finish = (delivered: boolean) => (finished ??= this.finish(lease, delivered));
      // A transport that never says: the lease goes anyway, the answer taken as not delivered.
      setTimeout(() => void finish(false), this.leaseMs * FINISH_WAIT_LEASES).unref();
      return { ...outcome, finish };
    }
    return outcome;
  }

  /** What the record as found asks for next. */
  private step(
    call: Call,
    lease: HeldLease,
    prior: PaymentRecord | undefined,
  ): Promise<PaidOutcome> {
    if (!prior) return this.fresh(call, lease, 0);
    const kept = prior.state === "report_kept" || prior.state === "settling";
    if (kept && prior.fingerprint !== call.fingerprint) {
      return Promise.resolve(conflict("payment_proof_conflict"));
    }
    switch (prior.state) {
      case "claimed":
      case "verified":
        // A request that died (or lost its lease) before settling: nothing moved, start over.
        return this.fresh(call, lease, prior.releases);
      case "free":
        if (prior.releases >= this.parts.maxReleases) {
          this.parts.events.payment(call.version, "replayed");
          return Promise.resolve(
            refused(
              PROOF_EXHAUSTED,
              rejection(PROOF_EXHAUSTED, proofExhaustedMessage(prior.releases)),
            ),
          );
        }
        return this.fresh(call, lease, prior.releases);
      case "report_kept":
      case "settling":
        return this.resolve(call, lease, prior);
      case "settled":
        return this.served(call, lease, prior);
    }
  }

  /**
   * Take a slot → verify → bind the payment id → verified → run → report_kept → settle. The slot
   * comes first: a call the instance could not run is refused before the facilitator is asked, so
   * a crowd costs no verifications it would refuse; a proof that fails gives its slot back at
   * once. Refused, the record is still `claimed`, so its release forgets it and the proof stays
   * usable.
   */
  private async fresh(call: Call, lease: HeldLease, releases: number): Promise<PaidOutcome> {
    const { admission } = call.input;
    const refusal = admission?.enter();
    if (refusal) return { kind: "unpaid", answer: refusal };
    try {
      return await this.verifyThenRun(call, lease, releases);
    } finally {
      admission?.leave();
    }
  }

  private async verifyThenRun(
    call: Call,
    lease: HeldLease,
    releases: number,
  ): Promise<PaidOutcome> {
    const { input } = call;
    const { events, log } = this.parts;
    let verdict: VerifyResponse;
    try {
      verdict = await this.parts.verify(input.payload, input.requirements);
    } catch (error) {
      if (error instanceof VerifyError && error.statusCode < 500) {
        verdict = {
          isValid: false,
          invalidReason: error.invalidReason ?? "invalid_payment",
          ...(error.invalidMessage !== undefined && { invalidMessage: error.invalidMessage }),
        };
      } else {
        log(`x402 facilitator verify failed: ${describeError(error)}`);
        return { kind: "unavailable", code: "facilitator_unavailable" };
      }
    }
    if (!verdict.isValid) {
      events.payment(call.version, "refused");
      const reason = verdict.invalidReason ?? "invalid_payment";
      return refused(reason, rejection(reason, verdict.invalidMessage));
    }
    // Only a verified proof binds its id: a forged one naming another's address binds nothing.
    if (!(await this.bindPaymentId(call))) return conflict("payment_id_conflict");
    return this.verifiedRun(call, lease, releases);
  }

  /** Whether the call's payment id (if any) is bound to this proof and body, binding it if free. */
  private async bindPaymentId(call: Call): Promise<boolean> {
    if (call.idKey === undefined) return true;
    const bound = await this.parts.store.bindPaymentId(
      call.idKey,
      { authorizationKey: call.key, fingerprint: call.fingerprint },
      this.parts.recordTtlMs,
    );
    return bound.authorizationKey === call.key && bound.fingerprint === call.fingerprint;
  }

  /** verified → run → report_kept → settle. */
  private async verifiedRun(call: Call, lease: HeldLease, releases: number): Promise<PaidOutcome> {
    const { input } = call;
    const { budget, events, log } = this.parts;
    call.verified = performance.now();
    events.payment(call.version, "verified");
    const verified: PaymentRecord = {
      key: call.key,
      state: "verified",
      fingerprint: call.fingerprint,
      version: input.version,
      payload: input.payload,
      requirements: input.requirements,
      releases,
      ...(call.idKey !== undefined && { paymentIdKey: call.idKey }),
      ...(call.auth.validBefore !== undefined && { validBefore: call.auth.validBefore }),
      updatedAt: Date.now(),
    };
    if (!(await lease.write(verified))) return { kind: "store_down" };

    const reservation = await budget.reserve(call.auth.from).catch((error: unknown) => {
      log(`payer budget store failed: ${describeError(error)}`);
      return undefined;
    });
    if (!reservation) return { kind: "store_down" };
    if (!reservation.ok) {
      events.rateLimited("payer");
      return { kind: "over_budget", retryAfterMs: reservation.retryAfterMs };
    }
    let report: KeptAnswer;
    try {
      report = await input.run(lease.signal);
    } finally {
      call.handled = performance.now();
    }
    const gone = input.clientGone();
    if (gone || report.status !== 200) {
      // Work nobody paid for: the proof is given back, counted (SNAPSHOT_PROOF_RELEASES).
      await lease
        .write({ ...verified, state: "free", releases: releases + 1 })
        .catch((error: unknown) => log(`payment record store failed: ${describeError(error)}`));
      return gone ? { kind: "client_gone" } : { kind: "unpaid", answer: report };
    }
    const kept: PaymentRecord = { ...verified, state: "report_kept", report };
    if (!(await lease.write(kept))) return { kind: "store_down" };
    return this.settle(call, lease, kept);
  }

  /** settling → settle → settled, free (refused) or still settling (unknown). */
  private async settle(call: Call, lease: HeldLease, record: PaymentRecord): Promise<PaidOutcome> {
    const { events, log } = this.parts;
    // A settle of this authorization may have gone out before (the record was settling).
    const sentBefore = record.state === "settling";
    const settling: PaymentRecord = { ...record, state: "settling" };
    if (!(await lease.write(settling))) return { kind: "store_down" };
    const answer = await this.settleOnce(call);
    switch (answer.kind) {
      case "settled":
        return this.settled(call, lease, settling, answer.settlement);
      case "refused":
        // After a settle of ours went out, a refusal proves nothing: @x402/evm checks validBefore
        // (and a hosted facilitator the balance) before the nonce, so the transfer that landed
        // can be what is refused. The chain decides, as for any unknown outcome.
        if (sentBefore) {
          log(`x402 settlement outcome unknown: ${answer.reason} after an earlier settle`);
          events.payment(call.version, "unknown_settlement");
          return unknownOutcome();
        }
        events.payment(call.version, "refused");
        // A clear refusal: nothing moved, and it was not the payer's doing: not counted.
        await lease
          .write({ ...settling, state: "free" })
          .catch((error: unknown) => log(`payment record store failed: ${describeError(error)}`));
        return settlementRefused(answer.reason, call);
      case "used":
        // "Already used": by our own earlier settlement, or by the payer (its own authorization
        // of the nonce, or a cancel): the chain says whether it paid us.
        return this.resolve(call, lease, settling, { reason: answer.reason, sentBefore });
      case "unknown": {
        log(`x402 settlement outcome unknown: ${answer.why}`);
        // The transaction, when one is known, lets the retry and the reconciler read its receipt.
        if (answer.transaction) {
          await lease
            .write({ ...settling, transaction: answer.transaction })
            .catch((error: unknown) => log(`payment record store failed: ${describeError(error)}`));
        }
        events.payment(call.version, "unknown_settlement");
        return unknownOutcome();
      }
    }
  }

  /** One /settle, its answer sorted: only a reason given before a send is a refusal. */
  private async settleOnce(call: Call): Promise<Settled> {
    let settlement: SettleResponse;
    try {
      settlement = await this.parts.settle(call.input.payload, call.input.requirements);
    } catch (error) {
      if (!(error instanceof SettleError) || error.statusCode >= 500) {
        return { kind: "unknown", why: describeError(error), transaction: undefined };
      }
      settlement = {
        success: false,
        errorReason: error.errorReason ?? error.message,
        ...(error.errorMessage !== undefined && { errorMessage: error.errorMessage }),
        transaction: error.transaction ?? "",
        network: call.input.requirements.network,
      };
    }
    if (settlement.success) return { kind: "settled", settlement };
    const reason = settlement.errorReason ?? "settlement_failed";
    if (settlement.transaction) {
      return { kind: "unknown", why: reason, transaction: settlement.transaction };
    }
    if (AUTHORIZATION_USED.test(`${reason} ${settlement.errorMessage ?? ""}`)) {
      return { kind: "used", reason };
    }
    if (REFUSED_BEFORE_BROADCAST.has(reason)) return { kind: "refused", reason };
    return { kind: "unknown", why: reason, transaction: undefined };
  }

  /**
   * A record whose settlement may have moved money (report_kept, settling): the chain decides;
   * not used → settle (again: EIP-3009 moves money once at most); without an RPC, settle and
   * read the facilitator's answer. `afterUsed`: a settle just said "already used" (and whether
   * one of ours had gone out before).
   */
  private async resolve(
    call: Call,
    lease: HeldLease,
    record: PaymentRecord,
    afterUsed?: { reason: string; sentBefore: boolean },
  ): Promise<PaidOutcome> {
    const { log } = this.parts;
    const { auth, input } = call;
    const answer = await this.parts.chain.read(auth, input.requirements, record.transaction);
    switch (answer.kind) {
      case "used":
        return this.settled(call, lease, record, chainSettlement(call, answer.transaction));
      case "used_elsewhere":
        // The payer spent the nonce on another authorization: nothing paid, nothing can move.
        log(`x402 authorization used by ${answer.transaction}, which paid nothing to payTo`);
        return this.nothingPaid(call, lease, record, settlementRefused(USED_ELSEWHERE, call));
      case "canceled":
        return this.nothingPaid(
          call,
          lease,
          record,
          refused("authorization_canceled", "Payment settlement failed: authorization_canceled"),
        );
      case "pending":
      case "unreadable":
        log(`x402 settlement still unknown: ${answer.kind === "pending" ? "pending" : answer.why}`);
        return unknownOutcome();
      case "no_rpc":
        if (!afterUsed) return this.settle(call, lease, record);
        // The facilitator's word is all there is. "Already used" on our first settle cannot be
        // ours (a cancel, or the payer's own use of the nonce): refused. After a settle of ours
        // went out it may be ours or the payer's: only the chain can tell, so it stays unknown.
        if (afterUsed.sentBefore) {
          log("x402 settlement unknown: no RPC (X402_RPC_URL_*) to read the nonce's transaction");
          return unknownOutcome();
        }
        return this.nothingPaid(call, lease, record, settlementRefused(afterUsed.reason, call));
      case "unused":
        // Used, says the facilitator, unused, says the chain: not known yet.
        if (afterUsed) return unknownOutcome();
        return this.settle(call, lease, record);
    }
  }

  /** Nothing was paid and nothing can move any more: the record is freed, the proof refused. */
  private async nothingPaid(
    call: Call,
    lease: HeldLease,
    record: PaymentRecord,
    refusal: PaidOutcome,
  ): Promise<PaidOutcome> {
    const { events, log } = this.parts;
    events.payment(call.version, "refused");
    await lease
      .write({ ...record, state: "free" })
      .catch((error: unknown) => log(`payment record store failed: ${describeError(error)}`));
    return refusal;
  }

  /** One transfer moved: record it, and the report goes out whatever the store says. */
  private async settled(
    call: Call,
    lease: HeldLease,
    record: PaymentRecord,
    settled: SettleResponse,
  ): Promise<PaidOutcome> {
    const { budget, events, log } = this.parts;
    const recovered = record.state === "settling" && call.verified === undefined;
    // The money moved: a receipt that cannot be signed leaves it out, never the report.
    const settlement = call.input.withReceipt
      ? await call.input.withReceipt(settled).catch((error: unknown) => {
          log(`x402 receipt not signed: ${describeError(error)}`);
          return settled;
        })
      : settled;
    const done: PaymentRecord = {
      ...record,
      report: await settledReport(
        requireReport(record),
        { key: call.key, auth: call.auth, transaction: settlement.transaction },
        this.parts.sign,
        log,
      ),
      state: "settled",
      settlement,
      transaction: settlement.transaction,
      delivered: false,
    };
    // Not written: the record stays settling, and the chain tells the retry it was paid.
    await lease
      .write(done)
      .catch((error: unknown) => log(`payment record store failed: ${describeError(error)}`));
    events.payment(call.version, recovered ? "recovered" : "settled");
    // Paid for: the snapshot no longer counts against the payer's unpaid budget.
    await budget.refund(call.auth.from).catch((error: unknown) => {
      log(`payer budget store failed: ${describeError(error)}`);
    });
    return paid(requireReport(done), settlement);
  }

  /** A settled record: served once, or again for its payment id. */
  private async served(call: Call, lease: HeldLease, record: PaymentRecord): Promise<PaidOutcome> {
    const { events } = this.parts;
    const settlement = record.settlement as SettleResponse;
    if (!record.delivered) {
      // Paid, but the answer never reached the client (lost, hung up, instance died).
      if (record.fingerprint !== call.fingerprint) {
        return conflict("payment_proof_conflict");
      }
      events.payment(call.version, "recovered");
      return paid(requireReport(record), await this.receiptKept(call, lease, record, settlement));
    }
    if (call.idKey !== undefined && record.paymentIdKey === call.idKey) {
      // The id's own proof with another body: what its binding would have said, unverified.
      if (record.fingerprint !== call.fingerprint) return conflict("payment_id_conflict");
      events.payment(call.version, "idempotent_hit");
      return paid(requireReport(record), settlement);
    }
    events.payment(call.version, "replayed");
    return refused(ALREADY_USED, rejection(ALREADY_USED));
  }

  /**
   * The settlement with its receipt: one the reconciler settled has none yet, so it is signed
   * now and kept with the record (unwritten, the next answer signs again).
   */
  private async receiptKept(
    call: Call,
    lease: HeldLease,
    record: PaymentRecord,
    settlement: SettleResponse,
  ): Promise<SettleResponse> {
    const signed = await call.input.withReceipt?.(settlement).catch((error: unknown) => {
      this.parts.log(`x402 receipt not signed: ${describeError(error)}`);
      return settlement;
    });
    if (!signed || signed === settlement) return settlement;
    await lease
      .write({ ...record, settlement: signed })
      .catch((error: unknown) =>
        this.parts.log(`payment record store failed: ${describeError(error)}`),
      );
    return signed;
  }

  /** The paid answer was handed over (or not): recorded, then the lease goes. */
  private async finish(lease: HeldLease, delivered: boolean): Promise<void> {
    const record = lease.current;
    if (delivered && record?.state === "settled" && !record.delivered) {
      await lease
        .write({ ...record, delivered: true })
        .catch((error: unknown) =>
          this.parts.log(`payment record store failed: ${describeError(error)}`),
        );
    }
    await lease.release();
  }

  private report(call: Call, outcome: PaidOutcome): void {
    if (call.verified === undefined) return;
    const finished = performance.now();
    const handled = call.handled ?? call.verified;
    this.parts.onPaidRequest?.({
      verifyMs: call.verified - call.started,
      handlerMs: handled - call.verified,
      settleMs: finished - handled,
      totalMs: finished - call.started,
      status: statusOf(outcome),
    });
  }
}

/** The status an HTTP transport answers an outcome with. */
export function statusOf(outcome: PaidOutcome): number {
  switch (outcome.kind) {
    case "paid":
      return 200;
    case "unpaid":
      return outcome.answer.status;
    case "client_gone":
      return 499;
    case "refused":
      return 402;
    case "conflict":
      return 409;
    case "over_budget":
      return 429;
    case "unavailable":
    case "store_down":
      return 503;
  }
}

/** A lease held by one call: renewed while it runs, fencing every write. */
class HeldLease {
  /** The record as this call last wrote (or found) it. */
  current: PaymentRecord | undefined;
  private readonly lost = new AbortController();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly store: PaymentRecordStore,
    private readonly key: string,
    private readonly owner: string,
    private readonly leaseMs: number,
    private readonly ttlMs: number,
    private readonly log: (line: string) => void,
  ) {
    this.timer = setInterval(() => this.renew(), Math.max(1, Math.floor(leaseMs / 3))).unref();
  }

  /** Aborted when the lease is lost: the work may stop, no write of this call lands any more. */
  get signal(): AbortSignal {
    return this.lost.signal;
  }

  private renew(): void {
    this.store.renew(this.key, this.owner, this.leaseMs).then(
      (ours) => {
        if (!ours) this.lose();
      },
      (error: unknown) =>
        this.log(`payment record store could not renew a lease: ${describeError(error)}`),
    );
  }

  private lose(): void {
    clearInterval(this.timer);
    this.lost.abort(new Error("payment record lease lost"));
  }

  /** Writes while the lease is ours; false (nothing written) when it is not. Rejects: store down. */
  async write(record: PaymentRecord): Promise<boolean> {
    const ok = await this.store.write(this.key, this.owner, record, this.ttlMs);
    if (ok) this.current = record;
    else this.lose();
    return ok;
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    // The store down: the lease ends by itself within leaseMs.
    await this.store.release(this.key, this.owner).catch((error: unknown) => {
      this.log(`payment record store could not release a lease: ${describeError(error)}`);
    });
  }
}

function paid(report: KeptAnswer, settlement: SettleResponse): PaidOutcome {
  return { kind: "paid", report, settlement, finish: () => Promise.resolve() };
}

/** A refused proof in words: the reason, and why when there is more to say. */
function rejection(reason: string, words?: string): string {
  return words ? `Payment rejected (${reason}): ${words}` : `Payment rejected: ${reason}`;
}

function refused(reason: string, message: string): PaidOutcome {
  return { kind: "refused", reason, message };
}

function settlementRefused(reason: string, call: Call): PaidOutcome {
  return {
    kind: "refused",
    reason,
    message: `Payment settlement failed: ${reason}`,
    settlement: { network: call.input.requirements.network },
  };
}

function conflict(code: ConflictCode): PaidOutcome {
  return { kind: "conflict", code };
}

function inProgress(record: PaymentRecord | undefined): PaidOutcome {
  const left = (record?.lease?.expiresAt ?? Date.now()) - Date.now();
  const seconds = Math.min(MAX_IN_PROGRESS_RETRY_AFTER_S, Math.max(1, Math.ceil(left / 1000)));
  return {
    kind: "conflict",
    code: "payment_in_progress",
    retryAfterSeconds: seconds,
  };
}

function unknownOutcome(): PaidOutcome {
  return { kind: "unavailable", code: "settlement_unknown" };
}

/** The settle response the chain vouches for (the transaction found in the token's events). */
function chainSettlement(call: Call, transaction: string): SettleResponse {
  return {
    success: true,
    transaction,
    network: call.input.requirements.network,
    payer: call.auth.from,
  };
}

function requireReport(record: PaymentRecord): KeptAnswer {
  if (!record.report) throw new Error(`payment record in ${record.state} without a report`);
  return record.report;
}
