import { createHash, createHmac } from "node:crypto";
import {
  CompactSign,
  base64url,
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
  type JWSHeaderParameters,
} from "jose";

/**
 * The service's one signing key (docs/proof.md): Ed25519, `alg` EdDSA, named by its RFC 7638
 * thumbprint. It signs the reports' proofs, and whatever else the service vouches for with it.
 */
export interface ServiceSigner {
  /** The RFC 7638 thumbprint (SHA-256) of the public key: the `kid` of what it signs. */
  readonly kid: string;
  /**
   * A JWS compact serialisation of `payload` with the payload left out (RFC 7515 appendix F:
   * `header..signature`); the header is `alg` EdDSA and `kid`.
   */
  signDetached(payload: Uint8Array): Promise<string>;
  /**
   * A JWS compact serialisation of `payload`, `alg` EdDSA, its header `kid` and `header`'s
   * parameters (a `kid` there, e.g. a did:web URL naming this key, replaces the thumbprint).
   */
  sign(payload: Uint8Array, header?: JWSHeaderParameters): Promise<string>;
  /**
   * The bare Ed25519 signature of `input`, base64url: for a JWS whose signing input is built
   * elsewhere (@x402/extensions' offer-receipt `Signer.sign` takes exactly this).
   */
  signBytes(input: Uint8Array): Promise<string>;
  /** Every public key a verifier may need, as JWKs with `kid`, `alg` and `use`. */
  publicJwks(): JWK[];
  /**
   * An opaque URL-safe id of 128 bits for `seed` (HMAC-SHA256 under a secret derived from the
   * private key): the same for the same seed, unguessable without the key.
   */
  opaqueId(seed: string): string;
}

export const SIGNING_ALG = "EdDSA";

/** Bytes of an opaque id: 128 bits, 32 hex digits (hex, not base64url: an id never starts with `-`, which a shell's option parser would take for a flag). */
const OPAQUE_ID_BYTES = 16;

/** An Ed25519 private JWK (`kty` OKP, `crv` Ed25519, `x`, `d`). */
export type PrivateJwk = JWK & { kty: "OKP"; crv: "Ed25519"; x: string; d: string };

/** The signer of a private key given as a JWK (SIGNING_KEY, or the one kept in DATA_DIR). */
export async function signerFromJwk(jwk: PrivateJwk): Promise<ServiceSigner> {
  const publicJwk: JWK = { kty: jwk.kty, crv: jwk.crv, x: jwk.x };
  const kid = await calculateJwkThumbprint(publicJwk);
  const key = (await importJWK(jwk, SIGNING_ALG)) as CryptoKey;
  const sign = (payload: Uint8Array, header: JWSHeaderParameters = {}) =>
    new CompactSign(payload).setProtectedHeader({ kid, ...header, alg: SIGNING_ALG }).sign(key);
  const listed: JWK = { ...publicJwk, kid, alg: SIGNING_ALG, use: "sig" };
  const idSecret = createHash("sha256").update(`secsnap opaque ids\n${jwk.d}`).digest();
  return {
    kid,
    sign,
    async signDetached(payload) {
      const [header, , signature] = (await sign(payload)).split(".");
      return `${header}..${signature}`;
    },
    async signBytes(input) {
      const signature = await crypto.subtle.sign("Ed25519", key, input);
      return base64url.encode(new Uint8Array(signature));
    },
    publicJwks: () => [{ ...listed }],
    opaqueId: (seed) =>
      createHmac("sha256", idSecret)
        .update(seed)
        .digest()
        .subarray(0, OPAQUE_ID_BYTES)
        .toString("hex"),
  };
}

/** A new Ed25519 key, as the private JWK kept for it. */
export async function newPrivateJwk(): Promise<PrivateJwk> {
  const { privateKey } = await generateKeyPair(SIGNING_ALG, { crv: "Ed25519", extractable: true });
  return (await exportJWK(privateKey)) as PrivateJwk;
}
