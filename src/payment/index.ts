/**
 * The payment layer's public face: x402 for the paid route, its answers, and the stores a
 * shared deployment replaces. Other folders import only from here.
 */
export { NO_STORE, jsonAnswer, toResponse } from "./answer.js";
export type { Answer } from "./answer.js";
export {
  ANSWER_CATALOGUE,
  DRAINING,
  INSTANCE_BUSY,
  INTERNAL_ERROR,
  NOT_FOUND,
  foreignOrigin,
  hostNotAllowed,
  methodNotAllowed,
  notReady,
  rateLimited,
  requestRefused,
  retryAfterSeconds,
  tooManyRefusedProofs,
} from "./answer-catalogue.js";
export type { AnswerCode } from "./answer-catalogue.js";
export { SnapshotRequestSchema } from "./discovery.js";
export { FacilitatorUnavailableError, ResilientFacilitatorClient } from "./facilitator-client.js";
export { createPaymentGate } from "./gate.js";
export { whenSent } from "./paid-route.js";
export type { PaidRoute, RouteCall } from "./paid-route.js";
export type { FormPayment } from "./form-payment.js";
export type { PaymentGate } from "./gate.js";
export { paidRecordOptionsFromConfig, paymentGateOptionsFromConfig } from "./gate-options.js";
export type { PaidRequestTimings, PaymentGateOptions } from "./gate-options.js";
export { RateLimiterPayerBudget, memoryPayerBudget } from "./payer-budget.js";
export { KEY_PREFIX, REDIS_COMMAND_TIMEOUT_MS } from "../store/index.js";
export { createSharedState } from "./shared-state.js";
export type { SharedState } from "./shared-state.js";
export { carriesProof } from "./proof.js";
export type { McpPayment, McpToolResult } from "./mcp.js";
export { usdcAmount } from "./route.js";
export { challengeExample } from "./challenge-example.js";
export type {
  FacilitatorOperation,
  FacilitatorResult,
  PaymentEvents,
  PaymentOutcome,
  ProtocolVersion,
} from "./telemetry.js";
