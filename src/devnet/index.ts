/**
 * The embedded local payment network (docs/contract.md §7.7, docs/facilitator.md "Devnet"):
 * anvil posing as Base Sepolia, DevUSDC at its USDC address, funded accounts and a facilitator.
 */
export { startDevnet } from "./devnet.js";
export type { Devnet } from "./devnet.js";
export type { DevnetAccount } from "./constants.js";
export {
  DEFAULT_PAYER,
  DEV_USDC_ABI,
  DEVNET_ACCOUNTS,
  DEVNET_NETWORK,
  USDC_DECIMALS,
} from "./constants.js";
