/**
 * All environment in one typed, validated place (docs/contract.md §6.1): the service's, and the
 * stand-alone facilitator's FACILITATOR_* (docs/facilitator.md). A bad value stops the process
 * at start with one line naming the variable (§6.2). Each concern's variables are a table in
 * src/config/ (name, default, parser, meaning); this is their one entry. Imports nothing of the
 * layers above.
 */

export { ConfigError } from "./config-error.js";
export { NETWORK_IDS, TEST_NETWORKS } from "./networks.js";
export { CDP_FACILITATOR_URL, parseCdpApiKeySecret } from "./config/cdp.js";
export type { CdpApiKey } from "./config/cdp.js";
export { loadFacilitatorConfig } from "./config/facilitator.js";
export { defaultSnapshotConcurrency, loadOpsConfig } from "./config/ops.js";
export { DEFAULT_PRICE_USDC, loadPaymentConfig } from "./config/payment.js";
export type { PaymentConfig } from "./config/payment.js";
export { loadConfig } from "./config/service.js";
export type { Config, OperatorContact } from "./config/service.js";
export { DEFAULT_SNAPSHOT_CAPS, loadSnapshotConfig } from "./config/snapshot.js";
export type { SnapshotConfig } from "./config/snapshot.js";
export type { LogLevel } from "./config/telemetry.js";
