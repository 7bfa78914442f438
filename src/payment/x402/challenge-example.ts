import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import type { PaymentRequiredV1 } from "@x402/core/schemas";
import { OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
import { snapshotOutputSchemaV1 } from "./bazaar-discovery.js";
import {
  RESOURCE_DESCRIPTION,
  RESOURCE_MIME_TYPE,
  offeredRequirement,
  paidResourceUrl,
  paidRouteConfig,
  type RouteOffer,
} from "./priced-route.js";
import { v1Challenge } from "./v1.js";

/** The `error` of an unpaid challenge: the v2 header's (the SDK's words) and the v1 body's. */
const UNPAID_ERROR_V2 = "Payment required";
const UNPAID_ERROR_V1 =
  "Payment required: x402 v2 in the PAYMENT-REQUIRED header, v1 in `accepts`.";

/** The unpaid 402 of an offer, as the route sends it: the v2 header, decoded and encoded, and the v1 body. */
export interface ChallengeExample {
  v2: PaymentRequired;
  header: string;
  v1: PaymentRequiredV1;
}

/**
 * The challenge the route sends without a proof, built from the offer alone (no facilitator):
 * what /openapi.json shows as the 402's example. The SDK builds the real one from the same
 * offer (paidRouteConfig), which a test holds this one to.
 */
export function challengeExample(offer: RouteOffer, publicUrl: string): ChallengeExample {
  const { extensions } = paidRouteConfig(offer);
  const accepts = offer.networks
    .map((network) => offeredRequirement(offer, network))
    .filter((entry): entry is PaymentRequirements => entry !== undefined);
  const v2: PaymentRequired = {
    x402Version: 2,
    error: UNPAID_ERROR_V2,
    resource: {
      url: paidResourceUrl(publicUrl),
      description: RESOURCE_DESCRIPTION,
      mimeType: RESOURCE_MIME_TYPE,
      serviceName: "secsnap",
    },
    accepts,
    ...(extensions && { extensions: withExampleOffers(withMethod(extensions), accepts.length) }),
  } as PaymentRequired;
  const header = encodePaymentRequiredHeader(v2);
  const v1 = v1Challenge(header, UNPAID_ERROR_V1, snapshotOutputSchemaV1());
  if (!v1) throw new Error("the example challenge does not decode");
  return { v2, header, v1 };
}

/** Stands for each offer's JWS, which the service signs per challenge (offer-receipt.ts). */
export const EXAMPLE_OFFER_JWS = "<JWS, EdDSA, kid did:web:<host>#<key thumbprint>>";

/** The route's offer-receipt declaration as the 402 carries it: one signed offer per entry. */
function withExampleOffers(
  extensions: Record<string, unknown>,
  entries: number,
): Record<string, unknown> {
  if (!(OFFER_RECEIPT in extensions)) return extensions;
  const offers = Array.from({ length: entries }, (_, acceptIndex) => ({
    format: "jws",
    acceptIndex,
    signature: EXAMPLE_OFFER_JWS,
  }));
  return { ...extensions, [OFFER_RECEIPT]: { info: { offers } } };
}

/**
 * The Bazaar input's method, which the SDK's server extension adds per request from the route:
 * in `info.input`, and narrowed to it in the schema.
 */
function withMethod(extensions: Record<string, unknown>): Record<string, unknown> {
  type Part = Record<string, unknown>;
  const bazaar = extensions.bazaar as
    | { info: Part & { input: Part }; schema: Part & { properties: Part & { input: Part } } }
    | undefined;
  if (!bazaar) return extensions;
  const input = bazaar.schema.properties.input;
  return {
    ...extensions,
    bazaar: {
      info: { ...bazaar.info, input: { ...bazaar.info.input, method: "POST" } },
      schema: {
        ...bazaar.schema,
        properties: {
          ...bazaar.schema.properties,
          input: {
            ...input,
            properties: {
              ...(input.properties as Part),
              method: { type: "string", enum: ["POST"] },
            },
          },
        },
      },
    },
  };
}
