import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { HonoAdapter } from "@x402/hono";
import type { Context } from "hono";
import { answerOf, errorAnswer, type Answer } from "./answer.js";
import { describeError } from "./describe-error.js";
import { PROOF_GENERATIONS, carriesProof } from "./proof.js";
import { v1Challenge } from "./v1.js";

/** Resource URLs remembered at once; the URL carries the client's Host, so its variety is theirs. */
const PREPARED_CHALLENGES = 64;

/**
 * The unpaid 402 challenge, built by the SDK once per resource URL and reused: once /supported
 * is cached it depends on nothing else. This is the one rule for which requests get it without
 * the SDK — no proof of any generation, and not a browser (the SDK may answer those with a
 * paywall page) — used by the gate and, through it, by the Node fast path.
 */
export class PreparedChallenges {
  private readonly byUrl = new Map<string, Answer>();

  /** The prepared challenge for this request, when it would get exactly that answer. */
  get(resourceUrl: string, header: (name: string) => string | undefined): Answer | undefined {
    return PreparedChallenges.plainUnpaid(header) ? this.byUrl.get(resourceUrl) : undefined;
  }

  /** Keeps the challenge the SDK gave this request, when it is one `get` may hand out. */
  keep(resourceUrl: string, header: (name: string) => string | undefined, answer: Answer): void {
    if (!PreparedChallenges.plainUnpaid(header)) return;
    if (this.byUrl.size >= PREPARED_CHALLENGES) this.byUrl.clear();
    this.byUrl.set(resourceUrl, answer);
  }

  private static plainUnpaid(header: (name: string) => string | undefined): boolean {
    return !carriesProof(header) && !header("accept")?.includes("text/html");
  }
}

/**
 * The SDK's 402 as an answer, its JSON body saying why (`explain` words a reason, if it can).
 * With `v1OutputSchema` (every request but one with a v2 proof) the body is also the x402 v1
 * challenge: the same offers as the header, so one 402 serves both generations.
 */
export async function challengeAnswer(
  response: Response,
  explain: (reason: string) => string | undefined,
  v1OutputSchema?: Record<string, unknown>,
): Promise<Answer> {
  const { status, headers, body: sdkBody } = await answerOf(response);
  const required = headers["payment-required"];
  let body = withErrorMessage(sdkBody, required, explain);
  if (v1OutputSchema && required) {
    const v1 = v1Challenge(required, errorOf(body), v1OutputSchema);
    if (v1) body = JSON.stringify(v1);
  }
  return { status, headers, body };
}

/** The `error` of a JSON body, or a generic one. */
function errorOf(body: string): string {
  try {
    const { error } = JSON.parse(body) as { error?: unknown };
    if (typeof error === "string") return error;
  } catch {
    // Not JSON: the generic reason below.
  }
  return "Payment required.";
}

/**
 * The route's challenge for a request whose proof could not be read, its `error` (header and
 * body) saying why. Without a challenge to send (the SDK failed), a plain 402 saying why.
 */
export async function unreadableProofAnswer(
  httpServer: x402HTTPResourceServer,
  c: Context,
  why: string,
  log: (line: string) => void,
): Promise<Answer> {
  const message = `Unreadable payment proof: ${why}.`;
  const result = await httpServer
    .processHTTPRequest({
      adapter: new ProoflessAdapter(c),
      path: c.req.path,
      method: c.req.method,
    })
    .catch((error: unknown) => {
      log(`x402 challenge for an unreadable proof failed: ${describeError(error)}`);
      return undefined;
    });
  const sdkHeaders = result?.type === "payment-error" ? result.response.headers : {};
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(sdkHeaders)) headers[name.toLowerCase()] = value;
  const required = headers["payment-required"];
  if (!required) {
    log(`no challenge to refuse an unreadable proof with (${result?.type ?? "error"})`);
    return errorAnswer(402, message);
  }
  headers["content-type"] = "application/json";
  headers["payment-required"] = encodePaymentRequiredHeader({
    ...decodePaymentRequiredHeader(required),
    error: message,
  });
  return { status: 402, headers, body: JSON.stringify({ error: message }) };
}

/** The request as the SDK would see it without a proof: its answer is the plain challenge. */
class ProoflessAdapter extends HonoAdapter {
  override getHeader(name: string): string | undefined {
    const lower = name.toLowerCase();
    return PROOF_GENERATIONS.some((generation) => generation.header === lower)
      ? undefined
      : super.getHeader(name);
  }

  override getAcceptHeader(): string {
    return "";
  }
}

/**
 * The SDK leaves a rejected payment's 402 body `{}`; give clients the reason from the challenge,
 * in words where `explain` has them.
 */
function withErrorMessage(
  body: string,
  paymentRequired: string | undefined,
  explain: (reason: string) => string | undefined,
): string {
  if (body.trim() !== "{}" || !paymentRequired) return body;
  let reason: string | undefined;
  try {
    reason = decodePaymentRequiredHeader(paymentRequired).error;
  } catch {
    reason = undefined;
  }
  if (!reason) return JSON.stringify({ error: "Payment required." });
  const words = explain(reason);
  return JSON.stringify({
    error: words ? `Payment rejected (${reason}): ${words}` : `Payment rejected: ${reason}`,
  });
}
