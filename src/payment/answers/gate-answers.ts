import { payerOverBudget, paymentUnavailable, type UnavailableCode } from "./catalogue.js";
import type { Answer } from "./answer.js";
import type { PaymentEvents } from "../telemetry.js";

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

  unavailable(code: UnavailableCode): Answer {
    return paymentUnavailable(code, this.retryAfter);
  }

  /** The 503 of a failing shared store, counted as a store error. */
  storeDown(): Answer {
    this.events.storeError();
    return this.unavailable("store_unavailable");
  }

  overBudget(retryAfterMs: number): Answer {
    return payerOverBudget(retryAfterMs, this.perMinute);
  }
}
