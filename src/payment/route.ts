import type { RouteConfig } from "@x402/core/server";
import type { Network, PaymentRequirements } from "@x402/core/types";
import { getDefaultAsset } from "@x402/evm";
import { parseUnits } from "viem";
import { NETWORK_IDS } from "../config.js";
import { snapshotDiscoveryExtension } from "./discovery.js";

/** The one priced route (docs/contract.md §1.2). */
export const PAID_ROUTE = "POST /v1/snapshot";

/** USDC per network (docs/contract.md §7.1). Devnet puts its token at the Base Sepolia address. */
const USDC_ADDRESSES: Readonly<Record<string, `0x${string}`>> = {
  [NETWORK_IDS.base]: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  [NETWORK_IDS["base-sepolia"]]: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
};
const USDC_DECIMALS = 6;

/** A decimal USDC price as the token's integer amount: "0.05" → "50000". */
export function usdcAmount(priceUsdc: string): string {
  return parseUnits(priceUsdc, USDC_DECIMALS).toString();
}

/** What the route asks for: the payee, the networks offered and the price. */
export interface RouteOffer {
  payTo: `0x${string}`;
  networks: readonly Network[];
  priceUsdc: string;
  /** Public URL of the resource in the challenge; default the request URL. */
  resourceUrl?: string;
}

const MAX_TIMEOUT_SECONDS = 300;
/** What the challenges say the resource is. */
export const RESOURCE_DESCRIPTION = "Live security-hygiene snapshot of one public URL";
export const RESOURCE_MIME_TYPE = "application/json";

/** USDC on a network with the EIP-712 domain (name, version) the payer signs over. */
function usdcOn(network: Network): {
  asset: `0x${string}`;
  extra: { name: string; version: string };
} {
  const asset = USDC_ADDRESSES[network];
  if (!asset) throw new Error(`no USDC address known for network ${network}`);
  const { name, version } = getDefaultAsset(network);
  return { asset, extra: { name, version } };
}

/** The `exact` requirement the route offers on `network`, or undefined if it is not offered. */
export function offeredRequirement(
  offer: RouteOffer,
  network: Network,
): PaymentRequirements | undefined {
  if (!offer.networks.includes(network)) return undefined;
  return {
    scheme: "exact",
    network,
    amount: usdcAmount(offer.priceUsdc),
    payTo: offer.payTo,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    ...usdcOn(network),
  };
}

/** The SDK's configuration of the paid route: one `exact` USDC entry per network. */
export function paidRouteConfig(offer: RouteOffer): RouteConfig {
  const amount = usdcAmount(offer.priceUsdc);
  return {
    accepts: offer.networks.map((network) => {
      const { asset, extra } = usdcOn(network);
      return {
        scheme: "exact",
        network,
        payTo: offer.payTo,
        price: { amount, asset, extra },
        maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      };
    }),
    ...(offer.resourceUrl !== undefined && { resource: offer.resourceUrl }),
    description: RESOURCE_DESCRIPTION,
    mimeType: RESOURCE_MIME_TYPE,
    serviceName: "secsnap",
    extensions: snapshotDiscoveryExtension(),
    unpaidResponseBody: () => ({
      contentType: "application/json",
      body: { error: "Payment required: x402 v2 in the PAYMENT-REQUIRED header, v1 in `accepts`." },
    }),
    settlementFailedResponseBody: (_ctx, failure) => ({
      contentType: "application/json",
      body: { error: `Payment settlement failed: ${failure.errorReason}` },
    }),
  };
}
