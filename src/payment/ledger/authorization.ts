import { createHash } from "node:crypto";
import type { PaymentPayload } from "@x402/core/types";
import {
  PAYMENT_IDENTIFIER,
  extractAndValidatePaymentIdentifier,
} from "@x402/extensions/payment-identifier";
import { NETWORK_IDS } from "../../config.js";

/**
 * What the payment record is keyed by (docs/payment.md, "The payment record"): the EIP-3009
 * authorization itself — the thing the token moves money for at most once — named the same way
 * whichever x402 generation carried it. Nothing here knows HTTP or a protocol generation's types.
 */

/** An EIP-3009 authorization as the ledger keys and checks it. */
export interface Authorization {
  /** CAIP-2 (`eip155:84532`), also for a v1 proof that said `base-sepolia`. */
  readonly network: string;
  /** The token, lower-case. */
  readonly asset: string;
  readonly from: `0x${string}`;
  readonly nonce: `0x${string}`;
  /** Epoch seconds after which the token refuses it: nothing can move for it any more. */
  readonly validBefore: number | undefined;
}

const V2_IDS: ReadonlyMap<string, string> = new Map(Object.entries(NETWORK_IDS));

/** A network as CAIP-2: v1 names (`base`, `base-sepolia`) map to their ids, ids stay. */
export function caip2Network(network: string): string {
  return V2_IDS.get(network) ?? network;
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/**
 * The authorization a proof carries, on the requirement it matched (whose network and asset are
 * the service's own, so the key does not depend on how the client spelled them).
 */
export function authorizationOf(
  payload: unknown,
  requirement: { network: string; asset: string },
): Authorization | undefined {
  const auth = (payload as { payload?: { authorization?: unknown } } | null)?.payload
    ?.authorization;
  if (typeof auth !== "object" || auth === null) return undefined;
  const { from, nonce, validBefore } = auth as Record<string, unknown>;
  if (typeof from !== "string" || typeof nonce !== "string") return undefined;
  const before = Number(validBefore);
  return {
    network: caip2Network(requirement.network),
    asset: requirement.asset.toLowerCase(),
    from: from.toLowerCase() as `0x${string}`,
    nonce: nonce.toLowerCase() as `0x${string}`,
    validBefore: Number.isFinite(before) ? before : undefined,
  };
}

/** The canonical key: network, asset, payer, nonce — what the token treats as one payment. */
export function authorizationKey(auth: Authorization): string {
  return sha256(`eip3009|${auth.network}|${auth.asset}|${auth.from}|${auth.nonce}`);
}

/** The authorization and the request body: the same key with another body is a 409. */
export function callFingerprint(key: string, body: Uint8Array): string {
  // The bytes as received; text of valid UTF-8 hashes as before, so records stay comparable.
  return createHash("sha256").update(`${key}\n`).update(body).digest("hex");
}

export type PaymentIdReading = { ok: true; id: string | undefined } | { ok: false; why: string };

/**
 * The payer's payment id (`payment-identifier` extension), v1 and v2 alike. A malformed one is
 * refused: the client asked for idempotency and would silently not get it.
 */
export function paymentIdOf(payload: unknown): PaymentIdReading {
  // Only the id is read: a schema the client sends along is not compiled (cost is the client's).
  const declared = (payload as { extensions?: Record<string, unknown> } | null)?.extensions?.[
    PAYMENT_IDENTIFIER
  ];
  if (declared === undefined) return { ok: true, id: undefined };
  const info = (declared as { info?: unknown } | null)?.info;
  const { id, validation } = extractAndValidatePaymentIdentifier({
    extensions: { [PAYMENT_IDENTIFIER]: { info } },
  } as unknown as PaymentPayload);
  if (!validation.valid) {
    return { ok: false, why: `payment-identifier is invalid: ${validation.errors?.join("; ")}` };
  }
  return { ok: true, id: id ?? undefined };
}

/** A payment id is the payer's: scoped by payer so nobody can block another payer's id. */
export function paymentIdKey(from: string, id: string): string {
  return sha256(`payment-id|${from.toLowerCase()}|${id}`);
}
