/**
 * CORS for browser x402 clients (docs/contract.md §7.6): in production any origin, and the
 * payment headers readable by the page; in devnet and local mode only the service's own origins.
 * One definition for the Hono app and the Node fast path.
 */
import { mcpHostAllowed } from "./mcp-host.js";

/**
 * Response headers browser x402 clients must be able to read (v2 and v1 receipts); Retry-After
 * for a 503 and 429.
 */
const CORS_EXPOSED_HEADERS = [
  "PAYMENT-REQUIRED",
  "PAYMENT-RESPONSE",
  "X-PAYMENT-RESPONSE",
  "Retry-After",
];

/** Response headers the page may read, as `Access-Control-Expose-Headers` lists them. */
export const CORS_EXPOSED = CORS_EXPOSED_HEADERS.join(",");

/** The CORS headers of every answer except the preflight. */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": CORS_EXPOSED,
};

/** CORS_HEADERS as a flat list `[name, value, …]`, as Node's writeHead takes headers. */
export const ANY_ORIGIN_CORS: readonly string[] = Object.entries(CORS_HEADERS).flat();

/** What the preflight allows (hono/cors options). */
export const CORS_PREFLIGHT = {
  origin: "*",
  allowMethods: ["GET", "HEAD", "POST", "OPTIONS"],
  // @x402/fetch's paid retry also sends an `Access-Control-Expose-Headers` request header; a
  // preflight that does not allow it stops the official client in every browser.
  // SIGN-IN-WITH-X: a payer's sign-in for its report again (GET /v1/snapshots/{id}).
  allowHeaders: [
    "Content-Type",
    "PAYMENT-SIGNATURE",
    "X-PAYMENT",
    "SIGN-IN-WITH-X",
    "Access-Control-Expose-Headers",
  ],
  exposeHeaders: CORS_EXPOSED_HEADERS,
  maxAge: 600,
};

/**
 * Devnet and local mode (docs/security.md, "Devnet and local mode"): whether a page of `origin`
 * may read answers through CORS. Only the service's own origins may: PUBLIC_URL's, and the one a
 * request reached at a host the Host rule allows (mcp-host.ts). Any other page gets no CORS
 * headers, so it can neither send a paid request signed with the public devnet key nor read an
 * answer.
 */
export function ownOrigin(
  publicUrl: string | undefined,
): (origin: string | undefined, requestUrl: string) => boolean {
  const publicOrigin = publicUrl === undefined ? undefined : new URL(publicUrl).origin;
  const publicHostname = publicUrl === undefined ? undefined : new URL(publicUrl).hostname;
  return (origin, requestUrl) => {
    if (origin === undefined || origin === "") return false;
    if (origin === publicOrigin) return true;
    const reached = new URL(requestUrl);
    return origin === reached.origin && mcpHostAllowed(reached.host, publicHostname);
  };
}

/**
 * The CORS headers of an answer written without the app (the Node fast path), as a flat list
 * `[name, value, …]`: the headers the app's CORS middleware gives the same request
 * (src/http/app.ts). In production CORS_HEADERS; in devnet and local mode `Vary: Origin`, and the
 * request's own origin with the exposed headers when ownOrigin allows it.
 */
export function nodeCors(
  devnet: boolean,
  publicUrl: string | undefined,
): (origin: string | undefined, requestUrl: string) => readonly string[] {
  if (!devnet) return () => ANY_ORIGIN_CORS;
  const own = ownOrigin(publicUrl);
  const otherOrigin = ["Vary", "Origin"];
  return (origin, requestUrl) =>
    origin !== undefined && own(origin, requestUrl)
      ? [
          ...otherOrigin,
          "Access-Control-Allow-Origin",
          origin,
          "Access-Control-Expose-Headers",
          CORS_EXPOSED,
        ]
      : otherOrigin;
}
