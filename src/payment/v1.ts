/**
 * x402 v1 beside v2 on the same route (docs/payment.md "x402 v1"). The official SDK serves only
 * v2 on the server side, so this file is the thin translation between the generations; the
 * SDK's v1 types and schemas, its resource server (hooks, replay guard, settlement) and its
 * facilitator client (which sends a payload's own x402Version) do the rest:
 *  - the 402 body is the v1 challenge, made from the v2 one the SDK built (v1Challenge);
 *  - an `X-PAYMENT` proof enters the SDK as a v1 payload carrying the matching v2 requirement
 *    (V1ProofAdapter), so every v2 rule applies to it unchanged;
 *  - the facilitator gets it back in v1 form, on its v1 path (toFacilitatorV1);
 *  - the receipt goes out as `X-PAYMENT-RESPONSE`.
 */
import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import { x402HTTPResourceServer } from "@x402/core/server";
import type {
  HTTPAdapter,
  HTTPProcessResult,
  HTTPRequestContext,
  PaywallConfig,
  RoutesConfig,
  x402ResourceServer,
} from "@x402/core/server";
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
import { NETWORK_IDS } from "../config.js";
import {
  RESOURCE_DESCRIPTION,
  RESOURCE_MIME_TYPE,
  offeredRequirement,
  paidResourceUrl,
  type RouteOffer,
} from "./route.js";

/** The v1 proof header and its receipt header. */
export const V1_PROOF_HEADER = "x-payment";
const V1_RECEIPT_HEADER = "x-payment-response";
/** The v2 receipt header the SDK sets, renamed for v1 clients. */
const V2_RECEIPT_HEADER = "payment-response";

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
 * under their v1 network names. Undefined when the header cannot be read.
 */
export function v1Challenge(
  paymentRequiredHeader: string,
  error: string,
  outputSchema: Record<string, unknown>,
): PaymentRequiredV1 | undefined {
  let required: PaymentRequired;
  try {
    required = decodePaymentRequiredHeader(paymentRequiredHeader);
  } catch {
    return undefined;
  }
  return {
    x402Version: 1,
    error,
    accepts: required.accepts.map((accepted) =>
      v1Requirement(accepted, required.resource, outputSchema),
    ),
  };
}

/**
 * A v1 payload as the SDK's resource server takes it: still `x402Version: 1` (so the facilitator
 * client sends it down the v1 path), with the v2 requirement it pays for as `accepted` (the SDK
 * matches v1 payloads by its scheme and network) and the resource it was offered for.
 */
function v1AsSdkPayload(
  proof: PaymentPayloadV1,
  offered: (network: Network) => PaymentRequirements | undefined,
  resource: PaymentRequired["resource"],
): PaymentPayload {
  const network = v2NetworkId(proof.network);
  const accepted = offered(network) ?? {
    // Not offered: the SDK finds no matching requirement and answers 402.
    scheme: proof.scheme,
    network,
    asset: "",
    amount: "0",
    payTo: "",
    maxTimeoutSeconds: 0,
    extra: {},
  };
  return {
    x402Version: 1,
    accepted: { ...accepted, scheme: proof.scheme },
    payload: proof.payload,
    resource,
  };
}

/**
 * The request as the SDK reads it, with an `X-PAYMENT` proof (and no v2 one) handed over as a
 * PAYMENT-SIGNATURE carrying the v1 payload (v1AsSdkPayload).
 */
class V1ProofAdapter implements HTTPAdapter {
  private readonly proof: string;

  constructor(
    private readonly inner: HTTPAdapter,
    proof: PaymentPayloadV1,
    offered: (network: Network) => PaymentRequirements | undefined,
    resource: PaymentRequired["resource"],
  ) {
    this.proof = encodePaymentSignatureHeader(v1AsSdkPayload(proof, offered, resource));
  }

  getHeader(name: string): string | undefined {
    return name.toLowerCase() === "payment-signature" ? this.proof : this.inner.getHeader(name);
  }
  getMethod(): string {
    return this.inner.getMethod();
  }
  getPath(): string {
    return this.inner.getPath();
  }
  getUrl(): string {
    return this.inner.getUrl();
  }
  getAcceptHeader(): string {
    return this.inner.getAcceptHeader();
  }
  getUserAgent(): string {
    return this.inner.getUserAgent();
  }
  getQueryParams(): Record<string, string | string[]> {
    return this.inner.getQueryParams?.() ?? {};
  }
  getQueryParam(name: string): string | string[] | undefined {
    return this.inner.getQueryParam?.(name);
  }
  getBody(): unknown {
    return this.inner.getBody?.();
  }
}

/**
 * The SDK's HTTP resource server, reading an `X-PAYMENT` proof too: a request carrying one (and
 * no PAYMENT-SIGNATURE, which wins) is processed as the v1 payload it holds (V1ProofAdapter).
 */
export class DualGenerationHttpServer extends x402HTTPResourceServer {
  constructor(
    server: x402ResourceServer,
    routes: RoutesConfig,
    private readonly offer: RouteOffer,
  ) {
    super(server, routes);
  }

  override processHTTPRequest(
    context: HTTPRequestContext,
    paywallConfig?: PaywallConfig,
  ): Promise<HTTPProcessResult> {
    const { adapter } = context;
    const header = adapter.getHeader(V1_PROOF_HEADER);
    if (!header || adapter.getHeader("payment-signature")) {
      return super.processHTTPRequest(context, paywallConfig);
    }
    let proof: PaymentPayloadV1;
    try {
      // proof.ts has read it with bounded work before; this is the SDK's own decoding.
      proof = decodePaymentSignatureHeader(header) as unknown as PaymentPayloadV1;
    } catch {
      return super.processHTTPRequest(context, paywallConfig);
    }
    const resource = {
      url:
        this.offer.publicUrl !== undefined
          ? paidResourceUrl(this.offer.publicUrl)
          : adapter.getUrl(),
      description: RESOURCE_DESCRIPTION,
      mimeType: RESOURCE_MIME_TYPE,
    };
    const v1Adapter = new V1ProofAdapter(
      adapter,
      proof,
      (network) => offeredRequirement(this.offer, network),
      resource,
    );
    return super.processHTTPRequest({ ...context, adapter: v1Adapter }, paywallConfig);
  }
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

/** A v1 request's answer carries its receipt under the v1 header name. */
export function renameReceiptForV1(response: Response): void {
  const receipt = response.headers.get(V2_RECEIPT_HEADER);
  if (receipt === null) return;
  response.headers.delete(V2_RECEIPT_HEADER);
  response.headers.set(V1_RECEIPT_HEADER, receipt);
}
