/**
 * What the payment layer tells about its work, for metrics (docs/operations.md, "Metrics"). The
 * layer only calls these; the service implements them (src/http/operations/metrics.ts), tests and
 * the benchmarks leave the no-op default.
 */

/** x402 protocol generation of a paid request: "2" (PAYMENT-SIGNATURE) or "1" (X-PAYMENT). */
export type ProtocolVersion = "1" | "2";

export type PaymentOutcome =
  /** The facilitator verified the proof and this instance claimed it. */
  | "verified"
  /** Settled on chain; the report went out. */
  | "settled"
  /** A proof the facilitator refused, or one nobody could read. */
  | "refused"
  /** A proof already served, or in use by another request (the payment ledger). */
  | "replayed"
  /** A kept answer served again for its payment id. */
  | "idempotent_hit"
  /** Settlement went out with no known outcome; the report is kept for the retry. */
  | "unknown_settlement"
  /** A kept report served once its payment turned out made. */
  | "recovered";

export type FacilitatorOperation = "verify" | "settle" | "supported";
/** ok: it answered; rejected: it answered no (4xx); unavailable: down, slow, 5xx, garbage. */
export type FacilitatorResult = "ok" | "rejected" | "unavailable";

export interface PaymentEvents {
  payment(version: ProtocolVersion, outcome: PaymentOutcome): void;
  facilitatorCall(
    operation: FacilitatorOperation,
    result: FacilitatorResult,
    seconds: number,
  ): void;
  /** A request refused by a rate limit: `payer` is the unpaid budget of one payer. */
  rateLimited(limit: "ip" | "payer"): void;
  /** The shared state store (Redis) failed a call or its connection. */
  storeError(): void;
}

export const NO_PAYMENT_EVENTS: PaymentEvents = {
  payment: () => {},
  facilitatorCall: () => {},
  rateLimited: () => {},
  storeError: () => {},
};
