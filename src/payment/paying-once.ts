import type { Context, Next } from "hono";
import { encodePaymentResponseHeader } from "@x402/core/http";
import { answerOf, errorAnswer, toResponse, type Answer } from "./answer.js";
import { describeError } from "./describe-error.js";
import type { GateAnswers } from "./gate-answers.js";
import type { PaidIdentity, PaidRecord, SettlementRecovery } from "./paid-records.js";
import { paidKeys, type Lease, type PaidKeys, type PaidStore } from "./paid-store.js";
import type { PayerBudget } from "./payer-budget.js";
import type { PaidAttempt, SettlementsUnderWay } from "./settlements-under-way.js";
import { versionOf, type PaymentEvents, type ProtocolVersion } from "./telemetry.js";
import type { VerifyRunSettle } from "./verify-run-settle.js";

/** Answer for a payment id (or proof) used with another proof or body, or still in progress. */
const CONFLICT_STATUS = 409;
const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;

interface PayingOnceParts {
  records: PaidStore;
  underWay: SettlementsUnderWay;
  recovery: SettlementRecovery;
  budget: PayerBudget;
  answers: GateAnswers;
  events: PaymentEvents;
  log: (line: string) => void;
  verifyRunSettle: VerifyRunSettle;
}

/**
 * Paying once (docs/payment.md): one request at a time per payment id (or proof); a kept
 * answer is served again for its payment id, an unsettled report once its payment is known;
 * the same key with another proof or body is a 409. A report kept right before settlement
 * (`settling`) is completed by whoever holds the lock next, so a request whose instance died
 * after settling still gets its report (docs/operations.md).
 */
export class PayingOnce {
  constructor(private readonly parts: PayingOnceParts) {}

  async pay(
    c: Context,
    next: Next,
    payer: string,
    identity: PaidIdentity,
  ): Promise<Response | void> {
    const { records, answers, events, log } = this.parts;
    const keys = paidKeys(identity);
    let held: Lease | undefined;
    let record: PaidRecord | undefined;
    let settlingRecord: PaidRecord | undefined;
    try {
      held = await records.lock(keys.lock);
      record = await records.read(keys.record);
      if (!record && (held || !identity.idempotent)) {
        settlingRecord = await records.read(keys.settling);
      }
      if (!held && !record && settlingRecord && !identity.idempotent) {
        // Settling elsewhere, or its instance died doing it: wait for the lock, then finish.
        held = await records.waitForLock(keys.lock);
        if (held) {
          record = await records.read(keys.record);
          settlingRecord = await records.read(keys.settling);
        }
      }
    } catch (error) {
      log(`paid record store failed: ${describeError(error)}`);
      await held?.release();
      return toResponse(answers.storeDown());
    }
    try {
      const conflicting = (r: PaidRecord | undefined) =>
        r !== undefined && r.fingerprint !== identity.fingerprint;
      if (conflicting(record) || (held && conflicting(settlingRecord))) {
        return toResponse(
          conflict(
            identity.idempotent
              ? "This payment id was already used with another payment proof or request body."
              : "This payment proof was already used with another request body.",
          ),
        );
      }
      if (record?.state === "served") {
        events.payment(versionOf(c), "idempotent_hit");
        return toResponse(record.answer);
      }
      if (!held) {
        // Without an id, today's rule answers a concurrent copy: the proof is served once.
        return record || identity.idempotent || settlingRecord
          ? toResponse(inProgress())
          : await this.parts.verifyRunSettle(c, next, payer);
      }
      const kept = record ?? settlingRecord;
      if (kept?.state === "unsettled") {
        const version = versionOf(c);
        return toResponse(await this.settleKept(keys, kept, identity, payer, version));
      }
      return await this.firstAttempt(c, next, payer, keys, identity);
    } catch (error) {
      log(`paid record store failed: ${describeError(error)}`);
      return toResponse(answers.storeDown());
    } finally {
      await held?.release();
    }
  }

  private async firstAttempt(
    c: Context,
    next: Next,
    payer: string,
    keys: PaidKeys,
    identity: PaidIdentity,
  ): Promise<Response | void> {
    const { records, underWay, events } = this.parts;
    const attempt: PaidAttempt = {};
    const returned = await underWay.during(identity, keys.settling, attempt, () =>
      this.parts.verifyRunSettle(c, next, payer, attempt),
    );
    const pending = underWay.take(identity);
    if (attempt.unsettled && attempt.report && pending) {
      const record: PaidRecord = {
        state: "unsettled",
        fingerprint: identity.fingerprint,
        answer: await answerOf(attempt.report),
        ...pending,
      };
      await records.keep(keys.record, record);
      if (attempt.kept) await records.forget(keys.settling);
      events.payment(versionOf(c), "unknown_settlement");
      c.res = toResponse(this.unsettledAnswer());
      return c.res;
    }
    const answer = returned ?? c.res;
    if (identity.idempotent && answer.status === 200) {
      const served = await answerOf(answer);
      await records.keep(keys.record, {
        state: "served",
        fingerprint: identity.fingerprint,
        answer: served,
      });
      if (attempt.kept) await records.forget(keys.settling);
      // The SDK's answer was read here: the route answers this copy.
      c.res = toResponse(served);
      return c.res;
    }
    // Answered (settled and served, or refused): the report kept before settlement goes.
    if (attempt.kept) await records.forget(keys.settling);
    return returned;
  }

  /** The kept report once its payment is known made; 402 if refused; 503 while unknown. */
  private async settleKept(
    keys: PaidKeys,
    record: Extract<PaidRecord, { state: "unsettled" }>,
    identity: PaidIdentity,
    payer: string,
    version: ProtocolVersion,
  ): Promise<Answer> {
    const { records, recovery, budget, events, log } = this.parts;
    const outcome = await recovery.recover(record.payload, record.requirements);
    if (outcome.kind === "unknown") {
      log(`x402 settlement still unknown: ${outcome.why}`);
      return this.unsettledAnswer();
    }
    if (outcome.kind === "refused") {
      events.payment(version, "refused");
      await Promise.all([records.forget(keys.record), records.forget(keys.settling)]);
      return errorAnswer(402, `Payment settlement failed: ${outcome.reason}`);
    }
    events.payment(version, "recovered");
    // Paid for after all: the snapshot no longer counts against the payer's unpaid budget.
    await budget.refund(payer).catch((error: unknown) => {
      log(`payer budget store failed: ${describeError(error)}`);
    });
    const answer: Answer = {
      ...record.answer,
      headers: {
        ...record.answer.headers,
        "payment-response": encodePaymentResponseHeader(outcome.settlement),
      },
    };
    if (identity.idempotent) {
      await records.keep(keys.record, { state: "served", fingerprint: record.fingerprint, answer });
    } else {
      await records.forget(keys.record);
    }
    await records.forget(keys.settling);
    return answer;
  }

  private unsettledAnswer(): Answer {
    return this.parts.answers.unavailable(
      "the settlement's outcome is unknown; retry with the same payment proof to get the " +
        "report once the payment is known, never charged twice",
    );
  }
}

function conflict(message: string, headers: Record<string, string> = {}): Answer {
  return errorAnswer(CONFLICT_STATUS, message, headers);
}

function inProgress(): Answer {
  return conflict(
    "A request with this payment is in progress; retry after it finishes to get its answer.",
    { "retry-after": String(IN_PROGRESS_RETRY_AFTER_SECONDS) },
  );
}
