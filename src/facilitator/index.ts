/** The x402 facilitator: verifies and settles USDC payments on one chain (docs/facilitator.md). */
export { fetchRpcChainId, startFacilitator } from "./app.js";
export type { RunningFacilitator } from "./app.js";
