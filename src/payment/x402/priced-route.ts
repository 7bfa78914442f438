import type { RouteConfig } from "@x402/core/server";
import type { Network, PaymentRequirements } from "@x402/core/types";
import {
  declarePaymentIdentifierExtension,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";
import { parseUnits } from "viem";
import { networkById, USDC_DECIMALS } from "../../networks.js";
import { PATHS } from "../../routes.js";
import { snapshotDiscoveryExtension } from "./bazaar-discovery.js";
import { offerReceiptDeclaration } from "./offer-receipt.js";

/** The one priced route (docs/contract.md §1.2). */
export const PAID_ROUTE = `POST ${PATHS.snapshot}`;

/** A decimal USDC price as the token's integer amount: "0.05" → "50000". */
export function usdcAmount(priceUsdc: string): string {
  return parseUnits(priceUsdc, USDC_DECIMALS).toString();
}

/** What the route asks for: the payee, the networks offered and the price. */
export interface RouteOffer {
  payTo: `0x${string}`;
  networks: readonly Network[];
  priceUsdc: string;
  /**
   * The networks are the embedded devnet (docs/contract.md §7.7): each entry's `extra` says
   * `devnet: true`, the one sign by which `secsnap pay` may pay with the devnet's public test key.
   */
  devnet?: boolean;
  /**
   * The service's public base URL (PUBLIC_URL, no trailing slash): the resource of every
   * challenge is this plus the route's path. Default: the request's own URL.
   */
  publicUrl?: string;
}

/** The paid resource's URL under a public base URL (docs/contract.md §6.1). */
export function paidResourceUrl(publicUrl: string): string {
  return `${publicUrl}${PATHS.snapshot}`;
}

const MAX_TIMEOUT_SECONDS = 300;
/** What the challenges say the resource is. */
export const RESOURCE_DESCRIPTION = "Live security-hygiene snapshot of one public URL";
export const RESOURCE_MIME_TYPE = "application/json";

/**
 * USDC on a network with the EIP-712 domain (name, version) the payer signs over, and the
 * devnet marker when the network is the embedded devnet (its token sits at Base Sepolia's address).
 */
function usdcOn(
  network: Network,
  devnet: boolean | undefined,
): {
  asset: `0x${string}`;
  extra: { name: string; version: string; devnet?: true };
} {
  const usdc = networkById(network)?.usdc;
  if (!usdc) throw new Error(`no USDC address known for network ${network}`);
  const { name, version } = usdc.domain;
  return {
    asset: usdc.address,
    extra: { name, version, ...(devnet && { devnet: true as const }) },
  };
}

/** The requirement the route offers on `network` (undefined when not offered): the 402's entry. */
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
    ...usdcOn(network, offer.devnet),
  };
}

/** The SDK's configuration of the paid route: one `exact` USDC entry per network. */
export function paidRouteConfig(offer: RouteOffer): RouteConfig {
  const amount = usdcAmount(offer.priceUsdc);
  return {
    accepts: offer.networks.map((network) => {
      const { asset, extra } = usdcOn(network, offer.devnet);
      return {
        scheme: "exact",
        network,
        payTo: offer.payTo,
        price: { amount, asset, extra },
        maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      };
    }),
    ...(offer.publicUrl !== undefined && { resource: paidResourceUrl(offer.publicUrl) }),
    description: RESOURCE_DESCRIPTION,
    mimeType: RESOURCE_MIME_TYPE,
    serviceName: "secsnap",
    extensions: {
      ...snapshotDiscoveryExtension(),
      // Optional for clients: a paid retry with the same id gets the same answer (docs/payment.md).
      // Its `info` only: clients need no more, and the JSON schema would grow every challenge.
      [PAYMENT_IDENTIFIER]: { info: declarePaymentIdentifierExtension(false).info },
      // Signed offers in every 402, signed receipts in every settlement (docs/contract.md §7.11).
      ...offerReceiptDeclaration(),
    },
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
