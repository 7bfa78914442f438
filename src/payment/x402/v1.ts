/**
 * x402 v1 beside v2 on the same route (docs/payment.md "x402 v1"). The official SDK serves only
 * v2 on the server side, so this file is the thin translation between the generations:
 *  - the 402 body is the v1 challenge, made from the v2 one the SDK built (v1Challenge);
 *  - an `X-PAYMENT` proof enters the ledger as a v1 payload carrying the matching v2 requirement
 *    (v1AsSdkPayload), so every v2 rule — and the same record key — applies to it unchanged;
 *  - the facilitator gets it back in v1 form, on its v1 path (toFacilitatorV1);
 *  - the receipt goes out as `X-PAYMENT-RESPONSE`.
 */
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type {
  Network,
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
} from "@x402/core/types";
import type {
  PaymentPayloadV1,
  PaymentRequiredV1,
  PaymentRequirementsV1,
} from "@x402/core/schemas";
import { OFFER_RECEIPT } from "@x402/extensions/offer-receipt";
import { NETWORK_IDS } from "../../config.js";

/** The receipt header of each generation. */
export const V1_RECEIPT_HEADER = "x-payment-response";
export const V2_RECEIPT_HEADER = "payment-response";

/** v1 names networks by name (`base-sepolia`), v2 by CAIP-2 (`eip155:84532`). */
const V1_NAMES: ReadonlyMap<string, string> = new Map(
  Object.entries(NETWORK_IDS).map(([name, id]) => [id, name]),
);
const V2_IDS: ReadonlyMap<string, string> = new Map(Object.entries(NETWORK_IDS));

function v1NetworkName(network: string): string {
  return V1_NAMES.get(network) ?? network;
}

function v2NetworkId(name: string): Network {
  return (V2_IDS.get(name) ?? name) as Network;
}

/** A v2 requirement in v1 form, for the resource the challenge describes. */
function v1Requirement(
  accepted: PaymentRequirements,
  resource: PaymentRequired["resource"],
  outputSchema: Record<string, unknown>,
): PaymentRequirementsV1 {
  return {
    scheme: accepted.scheme,
    network: v1NetworkName(accepted.network),
    maxAmountRequired: accepted.amount,
    resource: resource.url,
    description: resource.description ?? "",
    mimeType: resource.mimeType ?? "application/json",
    outputSchema,
    payTo: accepted.payTo,
    maxTimeoutSeconds: accepted.maxTimeoutSeconds,
    asset: accepted.asset,
    extra: accepted.extra ?? null,
  };
}

/**
 * The v1 challenge (the 402 body) for the v2 one in a PAYMENT-REQUIRED header: the same offers,
 * under their v1 network names, and the same signed offers in `extensions` (the offer-receipt
 * extension's place in both generations). Undefined when the header cannot be read.
 */
export function v1Challenge(
  paymentRequiredHeader: string,
  error: string,
  outputSchema: Record<string, unknown>,
): (PaymentRequiredV1 & { extensions?: Record<string, unknown> }) | undefined {
  let required: PaymentRequired;
  try {
    required = decodePaymentRequiredHeader(paymentRequiredHeader);
  } catch {
    return undefined;
  }
  const signedOffers = required.extensions?.[OFFER_RECEIPT];
  return {
    x402Version: 1,
    error,
    accepts: required.accepts.map((accepted) =>
      v1Requirement(accepted, required.resource, outputSchema),
    ),
    ...(signedOffers !== undefined && { extensions: { [OFFER_RECEIPT]: signedOffers } }),
  };
}

/**
 * A v1 proof as the ledger and the SDK's resource server take it: still `x402Version: 1` (so the
 * facilitator client sends it down the v1 path), with the v2 requirement it pays for as
 * `accepted`, the resource it was offered for, and its `extensions` (a payment id).
 */
export function v1AsSdkPayload(
  proof: PaymentPayloadV1 & { extensions?: Record<string, unknown> },
  accepted: PaymentRequirements,
  resource: PaymentRequired["resource"],
): PaymentPayload {
  return {
    x402Version: 1,
    accepted: { ...accepted, scheme: proof.scheme },
    payload: proof.payload,
    resource,
    ...(proof.extensions && { extensions: proof.extensions }),
  };
}

/** The CAIP-2 network a v1 proof names (`base-sepolia` → `eip155:84532`). */
export function v1ProofNetwork(proof: PaymentPayloadV1): Network {
  return v2NetworkId(proof.network);
}

/**
 * A payload and requirement on their way to the facilitator: a v1 payload (v1AsSdkPayload)
 * goes back to v1 form, for the facilitator's v1 path; a v2 one is left as it is.
 */
export function toFacilitatorV1(
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): { payload: PaymentPayload; requirements: PaymentRequirements } {
  if (payload.x402Version !== 1) return { payload, requirements };
  const resource = payload.resource ?? { url: "", description: "", mimeType: "" };
  const v1Payload: PaymentPayloadV1 = {
    x402Version: 1,
    scheme: requirements.scheme,
    network: v1NetworkName(requirements.network),
    payload: payload.payload,
  };
  // The facilitator's v1 checks read the price, payee, asset, network and EIP-712 domain.
  const v1Requirements = v1Requirement(requirements, resource, {});
  return {
    payload: v1Payload as unknown as PaymentPayload,
    requirements: v1Requirements as unknown as PaymentRequirements,
  };
}
