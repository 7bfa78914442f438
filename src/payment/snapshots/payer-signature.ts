/**
 * The payer's sign-in: its EIP-4361 message and the EIP-191 signature over it, checked as the
 * `sign-in-with-x` extension's `verifySIWxSignature` checks them, in a twentieth of its time (it
 * took 2 ms, most of a re-fetch: docs/benchmarks.md, "Payment"):
 * - the message is written by viem's `createSiweMessage` (its field checks, string formatting),
 *   where the extension's formatter builds the `siwe` package's SiweMessage, which parses its own
 *   text again with the EIP-4361 ABNF grammar (0.3 ms). A message of any shape our challenge does
 *   not produce goes to the extension itself, so both always sign-check the same text (a test
 *   holds the two formatters equal on our shape);
 * - the signer's key is recovered by libsecp256k1 (the `secp256k1` package's native binding),
 *   about 45 µs where viem's JavaScript recovery takes 1.2–1.6 ms, and its address compared, as
 *   viem's `verifyMessage` does.
 */
import {
  verifySIWxSignature,
  type EVMMessageVerifier,
  type SIWxPayload,
  type SIWxVerifyResult,
} from "@x402/extensions/sign-in-with-x";
import secp256k1 from "secp256k1";
import { getAddress, hashMessage, isAddress, isAddressEqual, isHex, toHex } from "viem";
import { publicKeyToAddress } from "viem/accounts";
import { createSiweMessage } from "viem/siwe";

/** r ‖ s ‖ v: 65 bytes, as every EOA wallet signs. */
const SIGNATURE_HEX_LENGTH = 2 + 65 * 2;
const EVM_CHAIN = /^eip155:([0-9]{1,15})$/;

/** The recovery id of `v`: 0/1 or the legacy 27/28 (viem's `toRecoveryBit`), else undefined. */
function recoveryIdOf(v: number): 0 | 1 | undefined {
  if (v === 0 || v === 27) return 0;
  if (v === 1 || v === 28) return 1;
  return undefined;
}

/**
 * True when `signature` is `address`'s EIP-191 signature of `message`. Anything unreadable (not
 * 65 bytes of hex, another `v`, r or s out of range) is false, never a throw: the extension then
 * answers "Signature verification failed", as with its default verifier.
 */
export const verifyPayerSignature: EVMMessageVerifier = ({ address, message, signature }) => {
  if (!isHex(signature) || signature.length !== SIGNATURE_HEX_LENGTH) return Promise.resolve(false);
  // Checked hex of the right length, so Node's decoder (which skips what is not hex) reads it whole.
  const bytes = Buffer.from(signature.slice(2), "hex");
  const recovery = recoveryIdOf(bytes[64]!);
  if (recovery === undefined) return Promise.resolve(false);
  try {
    const digest = hashMessage(message, "bytes");
    const key = secp256k1.ecdsaRecover(bytes.subarray(0, 64), recovery, digest, false);
    return Promise.resolve(isAddressEqual(address, publicKeyToAddress(toHex(key))));
  } catch {
    return Promise.resolve(false);
  }
};

/** An ISO time exactly as `Date#toISOString` writes it (viem writes it back so). */
const isCanonicalTime = (time: string | undefined): time is string =>
  time !== undefined && !Number.isNaN(Date.parse(time)) && new Date(time).toISOString() === time;

/**
 * The EIP-4361 text of a sign-in shaped as our challenge asks (a statement, an expiry, no
 * `notBefore` or `requestId`, canonical times, a checksummed address), by viem; undefined for any
 * other shape, which the extension formats itself.
 */
export function siweMessageOf(payload: SIWxPayload): string | undefined {
  const chain = EVM_CHAIN.exec(payload.chainId);
  const { statement, issuedAt, expirationTime, address } = payload;
  if (!chain || !statement || payload.notBefore !== undefined) return undefined;
  if (payload.requestId !== undefined || payload.version !== "1") return undefined;
  if (!isCanonicalTime(issuedAt) || !isCanonicalTime(expirationTime)) return undefined;
  if (!isAddress(address, { strict: false }) || getAddress(address) !== address) return undefined;
  try {
    return createSiweMessage({
      address,
      chainId: Number(chain[1]),
      domain: payload.domain,
      uri: payload.uri,
      version: "1",
      nonce: payload.nonce,
      statement,
      issuedAt: new Date(issuedAt),
      expirationTime: new Date(expirationTime),
      ...(payload.resources !== undefined && { resources: payload.resources }),
    });
  } catch {
    return undefined; // a field viem refuses: the extension judges it
  }
}

/** Whether the sign-in is signed by its `address`: the extension's verdict, as it words it. */
export async function verifySignIn(payload: SIWxPayload): Promise<SIWxVerifyResult> {
  const message = siweMessageOf(payload);
  if (message === undefined) {
    return verifySIWxSignature(payload, { evmVerifier: verifyPayerSignature });
  }
  const signed = await verifyPayerSignature({
    address: payload.address as `0x${string}`,
    message,
    signature: payload.signature as `0x${string}`,
  });
  return signed
    ? { isValid: true, payer: payload.address }
    : {
        isValid: false,
        invalidReason: "invalid_siwx_signature",
        invalidMessage: "Signature verification failed",
      };
}
