export { createPaymentGate, paymentGateOptionsFromConfig, USDC_ADDRESSES } from "./gate.js";
export type { PaidRequestTimings, PaymentGate, PaymentGateOptions } from "./gate.js";
export { FacilitatorUnavailableError, ResilientFacilitatorClient } from "./facilitator-client.js";
export { MemoryReplayStore, paymentProofKey, paymentProofTtlMs } from "./replay-guard.js";
export type { ReplayStore } from "./replay-guard.js";
export { RateLimiterPayerBudget, memoryPayerBudget } from "./payer-budget.js";
export type { PayerBudget, Reservation } from "./payer-budget.js";
