import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { paymentIdentifierResourceServerExtension } from "@x402/extensions/payment-identifier";
import type { ResilientFacilitatorClient } from "../facilitator/client.js";
import type { PaymentGateOptions } from "../gate-options.js";
import type { OfferReceipts } from "./offer-receipt.js";
import { PAID_ROUTE, paidRouteConfig } from "./priced-route.js";

/** The SDK's servers for the paid route: the resource server (verify, matching) and its HTTP face. */
export interface SdkServers {
  resourceServer: x402ResourceServer;
  /** Builds the route's 402 challenges (and fetches /supported through the facilitator). */
  httpServer: x402HTTPResourceServer;
}

/**
 * The SDK's resource server for the paid route, on our facilitator client; no hooks. Its
 * extensions: bazaar, payment-identifier, and offer-receipt (the service's signed offers).
 */
export function createSdkServers(
  options: PaymentGateOptions,
  facilitator: ResilientFacilitatorClient,
  offerReceipts: OfferReceipts,
): SdkServers {
  const resourceServer = new x402ResourceServer(facilitator);
  for (const network of options.networks) resourceServer.register(network, new ExactEvmScheme());
  resourceServer.registerExtension(bazaarResourceServerExtension);
  resourceServer.registerExtension(paymentIdentifierResourceServerExtension);
  resourceServer.registerExtension(offerReceipts.extension);
  const httpServer = new x402HTTPResourceServer(resourceServer, {
    [PAID_ROUTE]: paidRouteConfig(options),
  });
  return { resourceServer, httpServer };
}
