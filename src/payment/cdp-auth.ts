import { createPrivateKey, createPublicKey, randomBytes, type KeyObject } from "node:crypto";
import type { FacilitatorConfig } from "@x402/core/server";
import { SignJWT } from "jose";
import { SERVICE_VERSION } from "../version.js";

/**
 * Auth for Coinbase's hosted (CDP) x402 facilitator without `@coinbase/x402`, which pulls in
 * the whole CDP SDK (Solana, axios, zod 3) for one function. CDP wants a fresh short-lived JWT
 * per request, signed with the API key, naming the one request it is good for (`uris`); the
 * claims and header follow `@coinbase/cdp-sdk`'s `generateJwt`.
 */

/** CDP's facilitator, as `@coinbase/x402` configures it. */
export const CDP_FACILITATOR_URL = "https://api.cdp.coinbase.com/platform/v2/x402";

/** CDP's own default lifetime; short, because a token is made for each call anyway. */
const TOKEN_LIFETIME_SECONDS = 120;

export type CdpAuthHeaders = NonNullable<FacilitatorConfig["createAuthHeaders"]>;

export interface CdpApiKey {
  /** The key's id (CDP_API_KEY_ID), sent as `kid` and `sub`. */
  apiKeyId: string;
  /** CDP_API_KEY_SECRET: an EC P-256 PEM key, or base64 of a 64-byte Ed25519 seed + public key. */
  apiKeySecret: string;
}

export interface CdpSigningKey {
  alg: "ES256" | "EdDSA";
  key: KeyObject;
}

/**
 * The signing key in a CDP API key secret, in either format CDP issues. Throws an Error whose
 * message says what is wrong without echoing the secret.
 */
export function parseCdpApiKeySecret(secret: string): CdpSigningKey {
  const trimmed = secret.trim();
  if (trimmed.includes("-----BEGIN")) {
    // A PEM pasted into a one-line env var often arrives with literal "\n" (as in CDP's JSON key file).
    const pem = trimmed.replace(/\\n/g, "\n");
    let key: KeyObject;
    try {
      key = createPrivateKey(pem); // node reads both SEC1 ("EC PRIVATE KEY") and PKCS#8
    } catch {
      throw new Error("is a PEM block but not a readable private key");
    }
    if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      throw new Error("is a PEM key but not an EC P-256 private key (CDP signs with ES256)");
    }
    return { alg: "ES256", key };
  }
  // Strict base64: Buffer.from(_, "base64") silently skips junk, which would hide a bad paste.
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, "base64") : undefined;
  if (bytes?.length !== 64) {
    throw new Error(
      "must be an EC P-256 PEM private key or base64 of a 64-byte Ed25519 key (as CDP issues them)",
    );
  }
  const d = bytes.subarray(0, 32).toString("base64url");
  const x = bytes.subarray(32).toString("base64url");
  const key = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d, x }, format: "jwk" });
  // The second half is the public key of the first: a mismatch means a damaged or mixed-up
  // secret, which would otherwise only show up as 401s from CDP.
  if (createPublicKey(key).export({ format: "jwk" }).x !== x) {
    throw new Error("is 64 bytes but its public half does not match its private half");
  }
  return { alg: "EdDSA", key };
}

/**
 * The SDK's `createAuthHeaders` for CDP: each call signs a fresh `Authorization: Bearer <jwt>`
 * for verify, settle and supported, each token bound to its own method and path. Throws at
 * once (not per request) when the secret is unusable.
 */
export function createCdpAuthHeaders(
  options: CdpApiKey & { facilitatorUrl?: string },
): CdpAuthHeaders {
  const signing = parseCdpApiKeySecret(options.apiKeySecret);
  const url = new URL(options.facilitatorUrl ?? CDP_FACILITATOR_URL);
  // `uris` is "METHOD host/path" with no scheme, as CDP's generateJwt writes it; the path is
  // where HTTPFacilitatorClient sends the call (base URL without trailing slash + "/verify").
  const base = `${url.host}${url.pathname.replace(/\/+$/, "")}`;
  // Optional; tells CDP which integration the traffic comes from (@coinbase/x402 sends one too).
  const correlation = `sdk_language=typescript,source=secsnap,source_version=${encodeURIComponent(SERVICE_VERSION)}`;

  const token = async (method: "GET" | "POST", endpoint: string): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      sub: options.apiKeyId,
      iss: "cdp",
      uris: [`${method} ${base}/${endpoint}`],
    })
      .setProtectedHeader({
        alg: signing.alg,
        kid: options.apiKeyId,
        typ: "JWT",
        // Random per token, as CDP's generateJwt does, so no two tokens are alike.
        nonce: randomBytes(16).toString("hex"),
      })
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + TOKEN_LIFETIME_SECONDS)
      .sign(signing.key);
  };
  const headers = async (method: "GET" | "POST", endpoint: string) => ({
    Authorization: `Bearer ${await token(method, endpoint)}`,
    "Correlation-Context": correlation,
  });

  return async () => {
    const [verify, settle, supported] = await Promise.all([
      headers("POST", "verify"),
      headers("POST", "settle"),
      headers("GET", "supported"),
    ]);
    return { verify, settle, supported };
  };
}
