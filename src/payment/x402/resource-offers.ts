import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentRequired } from "@x402/core/types";
import {
  declarePaymentIdentifierExtension,
  PAYMENT_IDENTIFIER,
} from "@x402/extensions/payment-identifier";
import { MCP_SNAPSHOT_RESOURCE } from "../../routes.js";
import { describeError } from "../describe-error.js";
import { mcpSnapshotDiscoveryExtension } from "./bazaar-discovery.js";
import { offerReceiptDeclaration, offersFreshUntil } from "./offer-receipt.js";
import {
  RESOURCE_DESCRIPTION,
  RESOURCE_MIME_TYPE,
  paidRouteConfig,
  type RouteOffer,
} from "./priced-route.js";

/** Resource URLs remembered at once (without PUBLIC_URL the form's carries the client's Host). */
const REMEMBERED_RESOURCES = 64;

/**
 * The paid snapshot's PaymentRequired for a resource URL, built by the SDK from the route's
 * offer (the same accepts and signed offers as the HTTP 402) once /supported is known, then kept
 * while its offers are fresh: for the doors that have no HTTP request of their own to build it
 * from (MCP's tool, the page's form).
 */
export class ResourceOffers {
  private readonly built = new Map<string, { required: PaymentRequired; freshUntil: number }>();

  constructor(
    private readonly resourceServer: x402ResourceServer,
    private readonly offer: RouteOffer,
    private readonly log: (line: string) => void,
  ) {}

  /** The offers already built for this resource, if any and still fresh (no waiting). */
  known(url: string): PaymentRequired | undefined {
    const built = this.built.get(url);
    // Its signed offers about to expire: built (and signed) again.
    return built && Date.now() < built.freshUntil ? built.required : undefined;
  }

  async for(url: string): Promise<PaymentRequired | undefined> {
    const known = this.known(url);
    if (known) return known;
    try {
      const config = paidRouteConfig(this.offer);
      const options = Array.isArray(config.accepts) ? config.accepts : [config.accepts];
      // The route's options are plain values (no per-request functions): no context is read.
      const requirements = await this.resourceServer.buildPaymentRequirementsFromOptions(
        options,
        undefined as never,
      );
      const required = await this.resourceServer.createPaymentRequiredResponse(
        requirements,
        { url, description: RESOURCE_DESCRIPTION, mimeType: RESOURCE_MIME_TYPE },
        undefined,
        {
          // The MCP tool's Bazaar discovery (the page's form is no resource to discover).
          ...(url === MCP_SNAPSHOT_RESOURCE && mcpSnapshotDiscoveryExtension()),
          [PAYMENT_IDENTIFIER]: { info: declarePaymentIdentifierExtension(false).info },
          ...offerReceiptDeclaration(),
        },
      );
      if (this.built.size >= REMEMBERED_RESOURCES) this.built.clear();
      this.built.set(url, { required, freshUntil: offersFreshUntil(required) });
      return required;
    } catch (error) {
      this.log(`x402 challenge for ${url} failed: ${describeError(error)}`);
      return undefined;
    }
  }
}
