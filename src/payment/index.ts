/**
 * The payment layer's public face: x402 for the paid route, its answers, and the stores a
 * shared deployment replaces. Other folders import only from here.
 */
export { NO_STORE, jsonAnswer, toResponse } from "./answers/answer.js";
export type { Answer } from "./answers/answer.js";
export {
  ANSWER_CATALOGUE,
  DRAINING,
  INSTANCE_BUSY,
  INTERNAL_ERROR,
  NOT_FOUND,
  SNAPSHOT_NOT_FOUND,
  foreignOrigin,
  hostNotAllowed,
  methodNotAllowed,
  notReady,
  rateLimited,
  requestRefused,
  retryAfterSeconds,
  tooManyRefusedProofs,
} from "./answers/catalogue.js";
export type { AnswerCode } from "./answers/catalogue.js";
export { SnapshotRequestSchema } from "./x402/bazaar-discovery.js";
export { FacilitatorUnavailableError, ResilientFacilitatorClient } from "./facilitator/client.js";
export { createPaymentGate } from "./gate.js";
export { whenSent } from "./doors/http-route.js";
export type { PaidRoute, RouteCall } from "./doors/http-route.js";
export type { FormOutcome, FormPayment } from "./doors/page-form.js";
export type { PaymentGate } from "./gate.js";
export type { SnapshotAgainRoute } from "./snapshots/snapshot-again.js";
export { paidRecordOptionsFromConfig, paymentGateOptionsFromConfig } from "./gate-options.js";
export type { PaidRequestTimings, PaymentGateOptions } from "./gate-options.js";
export { RateLimiterPayerBudget, memoryPayerBudget } from "./ledger/payer-budget.js";
export { KEY_PREFIX, REDIS_COMMAND_TIMEOUT_MS } from "../store/index.js";
export { createSharedState } from "./shared-state.js";
export type { SharedState } from "./shared-state.js";
export { carriesProof } from "./x402/proof.js";
export type { McpPayment, McpToolResult } from "./doors/mcp-tool.js";
export { usdcAmount } from "./x402/priced-route.js";
export {
  canonicalize,
  didWebOf,
  loadServiceSigner,
  serviceUrlOf,
  verifyReportProof,
  type LoadedSigner,
  type PrivateJwk,
  type ServiceSigner,
} from "./signing/index.js";
export { challengeExample } from "./x402/challenge-example.js";
export type {
  FacilitatorOperation,
  FacilitatorResult,
  PaymentEvents,
  PaymentOutcome,
  ProtocolVersion,
} from "./telemetry.js";
