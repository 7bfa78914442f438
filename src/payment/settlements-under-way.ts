import { answerOf } from "./answer.js";
import { authorizationKey, type PaidIdentity } from "./paid-records.js";
import type { PaidStore } from "./paid-store.js";

/** Pending settlements remembered at once between the SDK's settle hook and the gate. */
const MAX_SETTLING = 10_000;

/** One paid request's report and whether its settlement went out with no known outcome. */
export interface PaidAttempt {
  report?: Response;
  unsettled?: boolean;
  /** Its report was kept as unsettled before settlement (dropped once answered). */
  kept?: boolean;
}

/** What the SDK settles: kept with a report so a retry can complete the settlement. */
export interface Settling {
  payload: unknown;
  requirements: unknown;
}

/**
 * The settlements under way on this instance, by authorization: what the SDK settles, and the
 * first attempts whose report is kept in the shared store right before.
 */
export class SettlementsUnderWay {
  /** What the SDK is settling: kept when the outcome is unknown. */
  private readonly settling = new Map<string, Settling>();
  /** First attempts under way: their report is kept before settlement. */
  private readonly attempts = new Map<
    string,
    { settlingKey: string; identity: PaidIdentity; attempt: PaidAttempt }
  >();

  constructor(private readonly records: PaidStore) {}

  /** Before the SDK settles: what it settles is remembered, a first attempt's report kept. */
  async beforeSettle(payload: unknown, requirements: unknown): Promise<void> {
    const key = authorizationKey(payload);
    if (key !== undefined) {
      if (this.settling.size >= MAX_SETTLING) this.settling.clear();
      const pending = { payload, requirements };
      this.settling.set(key, pending);
      await this.keepReport(key, pending);
    }
  }

  /** Runs a first attempt whose report, once made, is kept under `settlingKey` before settling. */
  async during<T>(
    identity: PaidIdentity,
    settlingKey: string,
    attempt: PaidAttempt,
    run: () => Promise<T>,
  ): Promise<T> {
    this.attempts.set(identity.authorizationKey, { settlingKey, identity, attempt });
    try {
      return await run();
    } finally {
      this.attempts.delete(identity.authorizationKey);
    }
  }

  /** The SDK's payload and requirements of this request's settlement, forgotten once taken. */
  take(identity: PaidIdentity): Settling | undefined {
    const pending = this.settling.get(identity.authorizationKey);
    this.settling.delete(identity.authorizationKey);
    return pending;
  }

  /**
   * Right before settlement, the report is kept as unsettled in the shared store: if this
   * process dies before answering, the retry (on any instance) learns the payment and gets it.
   */
  private async keepReport(authKey: string, pending: Settling): Promise<void> {
    const entry = this.attempts.get(authKey);
    if (!entry?.attempt.report) return;
    await this.records.keep(entry.settlingKey, {
      state: "unsettled",
      fingerprint: entry.identity.fingerprint,
      answer: await answerOf(entry.attempt.report.clone()),
      ...pending,
    });
    entry.attempt.kept = true;
  }
}
