/**
 * CORS for browser x402 clients (docs/contract.md §7.6): any origin, and the payment headers
 * readable by the page. One definition for the Hono app and the Node fast path.
 */

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

/** The CORS headers of every answer except the preflight. */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": CORS_EXPOSED_HEADERS.join(","),
};

/** What the preflight allows (hono/cors options). */
export const CORS_PREFLIGHT = {
  origin: "*",
  allowMethods: ["GET", "HEAD", "POST", "OPTIONS"],
  // @x402/fetch's paid retry also sends an `Access-Control-Expose-Headers` request header; a
  // preflight that does not allow it stops the official client in every browser.
  allowHeaders: ["Content-Type", "PAYMENT-SIGNATURE", "X-PAYMENT", "Access-Control-Expose-Headers"],
  exposeHeaders: CORS_EXPOSED_HEADERS,
  maxAge: 600,
};
