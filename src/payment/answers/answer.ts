/**
 * A complete HTTP answer as plain data (status, headers, body), free of any framework, like the
 * x402 SDK's HTTP response instructions. The payment gate and the routes build answers; each
 * server sends them through one adapter (`toResponse` for Hono, src/http/node-answer.ts for the
 * Node fast path). Defined here, in the lowest layer that answers requests.
 */
export interface Answer {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Cache-Control for answers that must never be reused: live results, errors, health. */
export const NO_STORE = "no-store";

/** A JSON answer, not to be stored unless `headers` says otherwise. */
export function jsonAnswer(
  status: number,
  value: unknown,
  headers: Readonly<Record<string, string>> = {},
): Answer {
  return {
    status,
    headers: { "cache-control": NO_STORE, "content-type": "application/json", ...headers },
    body: JSON.stringify(value),
  };
}

/**
 * A bare `{"error": "..."}` answer: a 402 without a challenge to send. Every other error answer
 * is the catalogue's (catalogue.ts), with its `code`.
 */
export function errorAnswer(
  status: number,
  message: string,
  headers: Readonly<Record<string, string>> = {},
): Answer {
  return jsonAnswer(status, { error: message }, headers);
}

/**
 * The Hono (fetch) adapter. A plain header record rather than a Headers object: @hono/node-server
 * hands it to writeHead as it is, where a Headers object would check every character of the
 * challenge's long PAYMENT-REQUIRED value (docs/benchmarks.md "Payment"). Copied, because a later
 * `c.res` access may modify it.
 */
export function toResponse(answer: Answer): Response {
  return new Response(answer.body, { status: answer.status, headers: { ...answer.headers } });
}

/** A Response as plain data, headers a kept answer repeats (no transfer framing). */
export async function answerOf(response: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== "content-length" && name !== "transfer-encoding") headers[name] = value;
  });
  return { status: response.status, headers, body: await response.text() };
}
