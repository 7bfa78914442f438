import { errorAnswer, type Answer } from "./answer.js";
import type { PaymentEvents } from "./telemetry.js";

/** Answer of a payer over its budget. The snapshot handler never answers it. */
const OVER_BUDGET_STATUS = 429;
/** Answer while payment cannot be processed (docs/contract.md §7.5). */
const UNAVAILABLE_STATUS = 503;

export const PAYMENT_FAILED = errorAnswer(500, "Payment processing failed.");
/** Why a paid request is a 503 while the shared store (memory, or Redis) fails. */
const STORE_DOWN = "payment state store unavailable";

/**
 * The gate's answers in place of the snapshot: payment unavailable (503 with `retryAfter`
 * seconds), or a payer over budget (429 naming `perMinute` when it is known).
 */
export class GateAnswers {
  constructor(
    private readonly retryAfter: string,
    private readonly perMinute: number | undefined,
    private readonly events: PaymentEvents,
  ) {}

  unavailable(why: string): Answer {
    return errorAnswer(
      UNAVAILABLE_STATUS,
      `Payment infrastructure unavailable (${why}); retry later.`,
      { "retry-after": this.retryAfter },
    );
  }

  /** The 503 of a failing shared store, counted as a store error. */
  storeDown(): Answer {
    this.events.storeError();
    return this.unavailable(STORE_DOWN);
  }

  overBudget(retryAfterMs: number): Answer {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    const limit = this.perMinute !== undefined ? ` (at most ${this.perMinute} a minute)` : "";
    return errorAnswer(
      OVER_BUDGET_STATUS,
      `Too many unpaid snapshots for this payer${limit}: refused targets and closed ` +
        `connections count; retry in ${seconds} s. Nothing was charged.`,
      { "retry-after": String(seconds) },
    );
  }
}
