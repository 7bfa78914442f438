import type { SupportedResponse } from "@x402/core/types";
import { ConfigError } from "../../config-error.js";
import { NETWORK_IDS } from "../../config.js";

/** One kind of payment the gate accepts, as a facilitator's /supported lists it. */
export interface PaymentKind {
  x402Version: number;
  scheme: string;
  network: string;
}

/**
 * The kinds the gate needs the facilitator to settle: `exact` on every configured network, in
 * x402 v2 (its CAIP-2 id) and v1 (its v1 name), the two generations the route serves. A
 * facilitator that lacks one stops the start.
 */
export function requiredKinds(networks: readonly string[]): PaymentKind[] {
  return networks.flatMap((network) => {
    const v1Name = Object.entries(NETWORK_IDS).find(([, id]) => id === network)?.[0];
    return [
      { x402Version: 2, scheme: "exact", network },
      ...(v1Name ? [{ x402Version: 1, scheme: "exact", network: v1Name }] : []),
    ];
  });
}

/** A facilitator that can never settle what the configuration offers: fix the configuration. */
export class FacilitatorMismatchError extends ConfigError {
  constructor(facilitatorUrl: string, missing: readonly PaymentKind[]) {
    const kinds = missing
      .map((kind) => `x402 v${kind.x402Version} "${kind.scheme}" on ${networkName(kind.network)}`)
      .join(", ");
    super(
      "X402_NETWORKS",
      `offers payments the facilitator at ${facilitatorUrl} does not support (${kinds}): ` +
        "change X402_NETWORKS or X402_FACILITATOR_URL",
    );
    this.name = "FacilitatorMismatchError";
  }
}

/** Throws FacilitatorMismatchError when /supported lacks a kind the gate needs. */
export function checkSupport(
  facilitatorUrl: string,
  supported: SupportedResponse,
  required: readonly PaymentKind[],
): void {
  const missing = required.filter(
    (need) =>
      !supported.kinds.some(
        (kind) =>
          kind.x402Version === need.x402Version &&
          kind.scheme === need.scheme &&
          kind.network === need.network,
      ),
  );
  if (missing.length > 0) throw new FacilitatorMismatchError(facilitatorUrl, missing);
}

function networkName(network: string): string {
  const name = Object.entries(NETWORK_IDS).find(([, id]) => id === network)?.[0];
  return name ? `${name} (${network})` : network;
}
