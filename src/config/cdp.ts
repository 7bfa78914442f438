import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { ConfigError } from "../config-error.js";
import type { Env } from "./read.js";

/** CDP's facilitator, as `@coinbase/x402` configures it. */
export const CDP_FACILITATOR_URL = "https://api.cdp.coinbase.com/platform/v2/x402";

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

/** CDP_API_KEY_ID + CDP_API_KEY_SECRET (the names @coinbase/x402 reads): both or neither. */
export function readCdpApiKey(env: Env): CdpApiKey | undefined {
  const apiKeyId = env.CDP_API_KEY_ID?.trim() || undefined;
  const apiKeySecret = env.CDP_API_KEY_SECRET?.trim() || undefined;
  if (!apiKeyId && !apiKeySecret) return undefined;
  if (!apiKeyId)
    throw new ConfigError("CDP_API_KEY_ID", "must be set when CDP_API_KEY_SECRET is set");
  if (!apiKeySecret) {
    throw new ConfigError("CDP_API_KEY_SECRET", "must be set when CDP_API_KEY_ID is set");
  }
  try {
    parseCdpApiKeySecret(apiKeySecret); // checked here so a bad key stops the start, not each call
  } catch (err) {
    // The message never contains the secret itself.
    throw new ConfigError("CDP_API_KEY_SECRET", (err as Error).message);
  }
  return { apiKeyId, apiKeySecret };
}
