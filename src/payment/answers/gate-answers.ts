import {
  CLIENT_GONE,
  PAYMENT_FAILED,
  payerOverBudget,
  paymentConflict,
  paymentUnavailable,
  type UnavailableCode,
} from "./catalogue.js";
import type { Answer } from "./answer.js";
import type { PaidCallOutcome } from "../paid-call.js";
import type { PaymentEvents } from "../telemetry.js";

/** The outcomes every door answers alike, with the catalogue's answers. */
export type CatalogueOutcome = Exclude<
  PaidCallOutcome,
  { kind: "paid" | "payment_required" | "unreadable_proof" | "refused" }
>;

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

  /** The catalogue's answer to an outcome every door answers alike. */
  of(outcome: CatalogueOutcome): Answer {
    switch (outcome.kind) {
      case "offers_failed":
        return PAYMENT_FAILED;
      case "unpaid":
        return outcome.answer;
      case "client_gone":
        // Nobody receives it; the status is for the log.
        return CLIENT_GONE;
      case "conflict":
        return paymentConflict(outcome.code, outcome.retryAfterSeconds);
      case "over_budget":
        return this.overBudget(outcome.retryAfterMs);
      case "unavailable":
        return this.unavailable(outcome.code);
      case "store_down":
        return this.storeDown();
    }
  }
}
