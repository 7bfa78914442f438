import { randomBytes } from "node:crypto";
import type { FacilitatorConfig } from "@x402/core/server";
import type * as Jose from "jose";
import { CDP_FACILITATOR_URL, parseCdpApiKeySecret, type CdpApiKey } from "../../config.js";
import { SERVICE_VERSION } from "../../version.js";

/**
 * Auth for Coinbase's hosted (CDP) x402 facilitator without `@coinbase/x402`, which pulls in
 * the whole CDP SDK (Solana, axios, zod 3) for one function. CDP wants a fresh short-lived JWT
 * per request, signed with the API key, naming the one request it is good for (`uris`); the
 * claims and header follow `@coinbase/cdp-sdk`'s `generateJwt`.
 */

/** CDP's own default lifetime; short, because a token is made for each call anyway. */
const TOKEN_LIFETIME_SECONDS = 120;

export type CdpAuthHeaders = NonNullable<FacilitatorConfig["createAuthHeaders"]>;

/** jose is loaded on the first token, so a service without a CDP key never loads it. */
let jose: Promise<typeof Jose> | undefined;

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
    const { SignJWT } = await (jose ??= import("jose"));
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
