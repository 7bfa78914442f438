/**
 * What `secsnap pay` and `secsnap mcp` share before a proof leaves: the offer chosen from the
 * API's challenge, the payer's account, and the one signed proof with its payment id
 * (docs/payment.md, "Paying from the command line").
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { getDefaultAsset } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  PAYMENT_IDENTIFIER,
  generatePaymentId,
  isPaymentIdentifierExtension,
} from "@x402/extensions/payment-identifier";
import { privateKeyToAccount } from "viem/accounts";
import type { LocalAccount } from "viem/accounts";
import { NETWORK_IDS } from "../../config.js";
import { DEFAULT_PAYER, DEVNET_NETWORK } from "../../devnet/index.js";
import { UsageError } from "../command.js";
import { authorizationOf, networkLabel, type SignedAuthorization } from "./charge.js";
import { MAINNET, NETWORK_NAMES, checkedKey } from "./options.js";
import type { Answer } from "./send.js";

/** Characters of a refusal's body shown. */
const MAX_BODY_SHOWN = 2_000;

/** An offer these commands can pay: exact USDC (the SDK's address for that network), an amount. */
function payable(offer: PaymentRequirements): boolean {
  if (offer.scheme !== "exact" || !NETWORK_NAMES[offer.network]) return false;
  const usdcAsset = getDefaultAsset(offer.network).asset;
  return (
    offer.asset.toLowerCase() === usdcAsset.toLowerCase() &&
    /^\d{1,30}$/.test(offer.amount) &&
    /^0x[0-9a-fA-F]{40}$/.test(offer.payTo)
  );
}

/** Refused before anything is signed, or the service said no. */
export class PaymentRefused extends Error {
  override name = "PaymentRefused";
}

/** The challenge of an unpaid 402 (the v2 header, else the v1 body), read by the SDK. */
export function challengeOf(unpaid: Answer): PaymentRequired {
  return new x402HTTPClient(new x402Client()).getPaymentRequiredResponse(
    (name) => unpaid.response.headers.get(name),
    unpaid.body,
  );
}

/**
 * The offer to pay, among `allowed` networks (undefined: any). Base mainnet only when it is
 * allowed by name or when it is the only payable offer: with a testnet offered too, real money
 * is never the default.
 */
export function chooseOffer(
  challenge: PaymentRequired,
  allowed: readonly string[] | undefined,
): PaymentRequirements {
  const offers = challenge.accepts.filter(payable);
  const offered = challenge.accepts.map((a) => `${a.scheme} on ${networkLabel(a.network)}`);
  const within = allowed ? offers.filter((o) => allowed.includes(o.network)) : offers;
  const offer = within.find((o) => o.network !== MAINNET) ?? within[0];
  if (offer) return offer;
  if (allowed) {
    throw new PaymentRefused(
      `--network ${allowed.map((n) => NETWORK_NAMES[n]).join(" or ")} is not offered by the API (it offers ${offered.join(", ") || "nothing"})`,
    );
  }
  throw new PaymentRefused(
    `the API offers no payment this client can make (USDC, scheme exact, on ${Object.keys(NETWORK_IDS).join(" or ")}); it offers ${offered.join(", ") || "nothing"}`,
  );
}

/**
 * The payer. The devnet's public test key only when the service marks the offer as its devnet
 * (`extra.devnet`, docs/contract.md §7.7) on the devnet chain: Base Sepolia alone is a real
 * testnet, where a public key's funds are anyone's.
 */
export function chooseAccount(
  key: string | undefined,
  offer: PaymentRequirements | undefined,
): { account: LocalAccount; note?: string } {
  if (key) return { account: privateKeyToAccount(checkedKey(key)) };
  if (offer?.extra?.devnet === true && offer.network === DEVNET_NETWORK) {
    const account = privateKeyToAccount(DEFAULT_PAYER.privateKey);
    return {
      account,
      note: `devnet: paying from anvil test account ${DEFAULT_PAYER.index} (${account.address}); set SECSNAP_PRIVATE_KEY to use another`,
    };
  }
  throw new UsageError(
    offer
      ? `the API asks for payment on ${networkLabel(offer.network)}: set SECSNAP_PRIVATE_KEY to the payer's private key`
      : "set SECSNAP_PRIVATE_KEY to the payer's private key",
  );
}

/** An answer's body for one line: no control characters from the service, bounded. */
export function describeBody(body: unknown): string {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ").slice(0, MAX_BODY_SHOWN);
}

export interface SignedProof {
  /** The proof's request headers, sent unchanged on every resend. */
  proof: Record<string, string>;
  /** Its payment id (`payment-identifier`), the same on every resend. */
  paymentId: string;
  /** Its EIP-3009 authorization, for the chain reading when no answer tells what was charged. */
  authorization: SignedAuthorization | undefined;
  /** The settlement a 200 reports, if its header can be read. */
  settlement(response: Response): SettleResponse | undefined;
}

/** One proof for `offer` (x402 v2, or v1 for a v1 challenge), signed by the SDK's exact EVM scheme. */
export async function signProof(
  challenge: PaymentRequired,
  offer: PaymentRequirements,
  account: LocalAccount,
): Promise<SignedProof> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  const http = new x402HTTPClient(client);
  const payload = await client.createPaymentPayload(
    challenge.x402Version === 1 ? challenge : { ...challenge, accepts: [offer] },
  );
  // A fresh id per call, the same on every resend: the service answers a resend as the first
  // send. Not signed (only the authorization is), so it is added after signing, to v1 too.
  const paymentId = generatePaymentId();
  payload.extensions = withPaymentId(payload.extensions ?? undefined, paymentId);
  return {
    proof: http.encodePaymentSignatureHeader(payload),
    paymentId,
    authorization: authorizationOf(payload, offer),
    settlement: (response) => {
      try {
        return http.getPaymentSettleResponse((name) => response.headers.get(name));
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The payload's extensions with this call's payment id, whether or not the challenge declared
 * the extension (an x402 v1 challenge cannot): a service that reads it answers a resend of this
 * proof as it answered the first send, and one that does not ignores it.
 */
function withPaymentId(
  extensions: Record<string, unknown> | undefined,
  id: string,
): Record<string, unknown> {
  const declared = extensions?.[PAYMENT_IDENTIFIER];
  const required = isPaymentIdentifierExtension(declared) ? declared.info.required : false;
  return { ...extensions, [PAYMENT_IDENTIFIER]: { info: { required, id } } };
}
