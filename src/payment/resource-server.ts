import { x402ResourceServer } from "@x402/core/server";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { paymentIdentifierResourceServerExtension } from "@x402/extensions/payment-identifier";
import type { ResilientFacilitatorClient } from "./facilitator-client.js";
import { NOT_RUN_STATUSES } from "./gate-answers.js";
import type { PaymentGateOptions } from "./gate-options.js";
import { guardReplays, type ReplayStore } from "./replay-guard.js";
import { PAID_ROUTE, paidRouteConfig } from "./route.js";
import type { SettlementsUnderWay } from "./settlements-under-way.js";
import { DualGenerationHttpServer } from "./v1.js";

/**
 * The SDK's resource server for the paid route, on our facilitator client, its hooks guarding
 * replays and remembering what it settles.
 */
export function createHttpResourceServer(
  options: PaymentGateOptions,
  facilitator: ResilientFacilitatorClient,
  hooks: {
    store: ReplayStore;
    maxReleases: number;
    underWay: SettlementsUnderWay;
  },
  log: (line: string) => void,
): x402HTTPResourceServer {
  const resourceServer = new x402ResourceServer(facilitator);
  for (const network of options.networks) resourceServer.register(network, new ExactEvmScheme());
  resourceServer.registerExtension(bazaarResourceServerExtension);
  resourceServer.registerExtension(paymentIdentifierResourceServerExtension);
  guardReplays(resourceServer, hooks.store, hooks.maxReleases, NOT_RUN_STATUSES, log);
  // Remembered so a settlement with no known outcome can be completed on the client's retry.
  resourceServer.onBeforeSettle(({ paymentPayload, requirements }) =>
    hooks.underWay.beforeSettle(paymentPayload, requirements),
  );
  // The SDK's HTTP server, with x402 v1 proofs read too (v1.ts).
  return new DualGenerationHttpServer(
    resourceServer,
    { [PAID_ROUTE]: paidRouteConfig(options) },
    options,
  );
}
