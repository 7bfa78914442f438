import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayloadV1 } from "@x402/core/schemas";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { v1AsSdkPayload, v1ProofNetwork } from "./v1.js";

/**
 * The proof in the SDK's form and the offer it matched: a v2 proof by the SDK's own matching
 * (its `accepted` is the offer), a v1 proof by scheme and network, its v1 name made CAIP-2.
 * Shared by every transport (the HTTP route, POST /mcp).
 */
export function matchOffer(
  resourceServer: x402ResourceServer,
  version: 1 | 2,
  payload: unknown,
  required: PaymentRequired,
): { payload: PaymentPayload; requirements: PaymentRequirements } | undefined {
  const { accepts, resource } = required;
  if (version === 2) {
    const v2 = payload as PaymentPayload;
    const requirements = resourceServer.findMatchingRequirements(accepts, v2);
    return requirements && { payload: v2, requirements };
  }
  const v1 = payload as PaymentPayloadV1 & { extensions?: Record<string, unknown> };
  const network = v1ProofNetwork(v1);
  const requirements = accepts.find((a) => a.network === network && a.scheme === v1.scheme);
  return requirements && { payload: v1AsSdkPayload(v1, requirements, resource), requirements };
}
