import {
  PaymentPayloadV1Schema,
  PaymentPayloadV2Schema,
  PaymentRequirementsV1Schema,
  PaymentRequirementsV2Schema,
} from "@x402/core/schemas";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import * as z from "zod";

/**
 * Parsing of POST /verify and /settle bodies. The SDK trusts its inputs (it reads
 * `payload.authorization.from` and friends without checking), so everything it will touch is
 * checked here first and a malformed request becomes a 400 instead of a TypeError.
 */

const hex = (bytes: number) =>
  z.string().regex(new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`), `must be ${bytes} bytes of hex`);
const address = hex(20);
const uintString = z.string().regex(/^\d{1,78}$/, "must be a decimal integer string");
const signature = z.string().regex(/^0x([0-9a-fA-F]{2})+$/, "must be hex bytes");

const eip3009Payload = z.object({
  signature,
  authorization: z.object({
    from: address,
    to: address,
    value: uintString,
    validAfter: uintString,
    validBefore: uintString,
    nonce: hex(32),
  }),
});

const permit2Payload = z.object({
  signature,
  permit2Authorization: z.object({
    from: address,
    spender: address,
    nonce: uintString,
    deadline: uintString,
    permitted: z.object({ token: address, amount: uintString }),
    witness: z.object({ to: address, validAfter: uintString }),
  }),
});

const exactEvmPayloadSchema = z.union([eip3009Payload, permit2Payload]);

type FacilitatorRequest = {
  paymentPayload: PaymentPayload;
  paymentRequirements: PaymentRequirements;
  /** Identifies the authorization being spent, to refuse concurrent settles of the same one. */
  authorizationKey: string;
  /** Token units asked for (v2 `amount`, v1 `maxAmountRequired`). */
  amount: string;
};

export type ParseResult =
  { ok: true; request: FacilitatorRequest } | { ok: false; reason: string; message: string };

function firstIssue(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  const issue = issues[0];
  if (!issue) return "is invalid";
  const path = issue.path.map(String).join(".");
  return path ? `${path}: ${issue.message}` : issue.message;
}

const UNSUPPORTED_VERSION: ParseResult = {
  ok: false,
  reason: "invalid_x402_version",
  message: "only x402Version 2 and 1 are supported",
};

/**
 * A verify/settle body. `networks` are the CAIP-2 networks served (v2); `networksV1` the same
 * chain under its v1 names, each to its CAIP-2 id.
 */
export function parseFacilitatorRequest(
  body: unknown,
  networks: readonly string[],
  networksV1: ReadonlyMap<string, string> = new Map(),
): ParseResult {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { ok: false, reason: "invalid_payload", message: "body must be a JSON object" };
  }
  const { x402Version, paymentPayload, paymentRequirements } = body as Record<string, unknown>;
  const payloadVersion = (paymentPayload as { x402Version?: unknown } | null)?.x402Version;
  if (x402Version === 1 || (x402Version === undefined && payloadVersion === 1)) {
    return parseV1Request(paymentPayload, paymentRequirements, networksV1);
  }
  if (x402Version !== undefined && x402Version !== 2) return UNSUPPORTED_VERSION;
  const payload = PaymentPayloadV2Schema.safeParse(paymentPayload);
  if (!payload.success) {
    if (typeof payloadVersion === "number" && payloadVersion !== 2) return UNSUPPORTED_VERSION;
    return {
      ok: false,
      reason: "invalid_payload",
      message: `paymentPayload.${firstIssue(payload.error.issues)}`,
    };
  }
  const requirements = PaymentRequirementsV2Schema.safeParse(paymentRequirements);
  if (!requirements.success) {
    return {
      ok: false,
      reason: "invalid_payment_requirements",
      message: `paymentRequirements.${firstIssue(requirements.error.issues)}`,
    };
  }
  if (requirements.data.scheme !== "exact") {
    return {
      ok: false,
      reason: "unsupported_scheme",
      message: `scheme ${JSON.stringify(requirements.data.scheme)} is not supported (only "exact")`,
    };
  }
  if (!networks.includes(requirements.data.network)) {
    return {
      ok: false,
      reason: "invalid_network",
      message: `network ${JSON.stringify(requirements.data.network)} is not served here (${networks.join(", ")})`,
    };
  }
  const inner = exactEvmPayloadSchema.safeParse(payload.data.payload);
  if (!inner.success) {
    return {
      ok: false,
      reason: "invalid_payload",
      message: `paymentPayload.payload.${firstIssue(inner.error.issues)}`,
    };
  }
  const auth = inner.data;
  const authorizationKey =
    "authorization" in auth
      ? `${requirements.data.network}|${requirements.data.asset.toLowerCase()}|${auth.authorization.from.toLowerCase()}|${auth.authorization.nonce.toLowerCase()}`
      : `${requirements.data.network}|permit2|${auth.permit2Authorization.from.toLowerCase()}|${auth.permit2Authorization.nonce}`;
  return {
    ok: true,
    request: {
      paymentPayload: payload.data as PaymentPayload,
      paymentRequirements: requirements.data as PaymentRequirements,
      authorizationKey,
      amount: requirements.data.amount,
    },
  };
}

/** An x402 v1 verify/settle body: the SDK's v1 schemas, an EIP-3009 payload, a served network. */
function parseV1Request(
  paymentPayload: unknown,
  paymentRequirements: unknown,
  networksV1: ReadonlyMap<string, string>,
): ParseResult {
  const payload = PaymentPayloadV1Schema.safeParse(paymentPayload);
  if (!payload.success) {
    return {
      ok: false,
      reason: "invalid_payload",
      message: `paymentPayload.${firstIssue(payload.error.issues)}`,
    };
  }
  const requirements = PaymentRequirementsV1Schema.safeParse(paymentRequirements);
  if (!requirements.success) {
    return {
      ok: false,
      reason: "invalid_payment_requirements",
      message: `paymentRequirements.${firstIssue(requirements.error.issues)}`,
    };
  }
  const { scheme, network, asset, maxAmountRequired } = requirements.data;
  if (scheme !== "exact" || payload.data.scheme !== "exact") {
    return {
      ok: false,
      reason: "unsupported_scheme",
      message: `scheme ${JSON.stringify(scheme)} is not supported (only "exact")`,
    };
  }
  const caip = networksV1.get(network);
  if (caip === undefined || payload.data.network !== network) {
    return {
      ok: false,
      reason: "invalid_network",
      message: `network ${JSON.stringify(payload.data.network)} is not served here (${[...networksV1.keys()].join(", ")})`,
    };
  }
  const inner = eip3009Payload.safeParse(payload.data.payload);
  if (!inner.success) {
    return {
      ok: false,
      reason: "invalid_payload",
      message: `paymentPayload.payload.${firstIssue(inner.error.issues)}`,
    };
  }
  const { from, nonce } = inner.data.authorization;
  return {
    ok: true,
    request: {
      // The SDK's facilitator routes by x402Version; its v1 scheme reads v1 fields.
      paymentPayload: payload.data as unknown as PaymentPayload,
      paymentRequirements: requirements.data as unknown as PaymentRequirements,
      // The same key as v2: one authorization is one settlement whichever generation carries it.
      authorizationKey: `${caip}|${asset.toLowerCase()}|${from.toLowerCase()}|${nonce.toLowerCase()}`,
      amount: maxAmountRequired,
    },
  };
}
