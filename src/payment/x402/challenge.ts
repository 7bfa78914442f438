import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import type { x402HTTPResourceServer } from "@x402/core/server";
import type { PaymentRequired } from "@x402/core/types";
import { HonoAdapter } from "@x402/hono";
import type { Context } from "hono";
import { answerOf, errorAnswer, type Answer } from "../answers/answer.js";
import { describeError } from "../describe-error.js";
import { offersFreshUntil } from "./offer-receipt.js";
import { PROOF_GENERATIONS, carriesProof } from "./proof.js";
import { v1Challenge } from "./v1.js";

/** Resource URLs remembered at once; the URL carries the client's Host, so its variety is theirs. */
const PREPARED_CHALLENGES = 64;

/**
 * The unpaid 402 challenge, built by the SDK once per resource URL and reused: once /supported
 * is cached it depends on nothing else but its signed offers' time (built again before they
 * expire). This is the one rule for which requests get it without
 * the SDK — no proof of any generation, and not a browser (the SDK may answer those with a
 * paywall page) — used by the gate and, through it, by the Node fast path.
 */
export class PreparedChallenges {
  private readonly byUrl = new Map<string, { answer: Answer; freshUntil: number }>();

  /** The prepared challenge for this request, when it would get exactly that answer. */
  get(resourceUrl: string, header: (name: string) => string | undefined): Answer | undefined {
    if (!PreparedChallenges.plainUnpaid(header)) return undefined;
    const kept = this.byUrl.get(resourceUrl);
    // Its signed offers about to expire: the next request builds (and signs) it again.
    return kept && Date.now() < kept.freshUntil ? kept.answer : undefined;
  }

  /** Keeps the challenge the SDK gave this request, when it is one `get` may hand out. */
  keep(resourceUrl: string, header: (name: string) => string | undefined, answer: Answer): void {
    if (!PreparedChallenges.plainUnpaid(header)) return;
    const required = answer.headers["payment-required"];
    if (!required) return;
    let freshUntil: number;
    try {
      freshUntil = offersFreshUntil(decodePaymentRequiredHeader(required));
    } catch {
      return;
    }
    if (this.byUrl.size >= PREPARED_CHALLENGES) this.byUrl.clear();
    this.byUrl.set(resourceUrl, { answer, freshUntil });
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
  const answer = await answerOf(response);
  const required = answer.headers["payment-required"];
  let { headers } = answer;
  let body = withErrorMessage(answer.body, required, explain);
  if (v1OutputSchema && required) {
    const v1 = v1Challenge(required, errorOf(body), v1OutputSchema);
    // The v1 challenge replaces the SDK's body, a browser's paywall page too: JSON, said so.
    if (v1) {
      body = JSON.stringify(v1);
      headers = { ...headers, "content-type": "application/json" };
    }
  }
  return { status: answer.status, headers, body };
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

/** The route's challenge as the SDK builds it for a request without a proof. */
export interface OfferedChallenge {
  readonly required: PaymentRequired;
  /** The SDK's headers of that 402, names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The challenge the SDK would answer this request with had it carried no proof: the offers a
 * proof is matched against and refused with. Undefined when the SDK cannot build one.
 */
export async function offeredChallenge(
  httpServer: x402HTTPResourceServer,
  c: Context,
  log: (line: string) => void,
): Promise<OfferedChallenge | undefined> {
  const result = await httpServer
    .processHTTPRequest({
      adapter: new ProoflessAdapter(c),
      path: c.req.path,
      method: c.req.method,
    })
    .catch((error: unknown) => {
      log(`x402 challenge failed: ${describeError(error)}`);
      return undefined;
    });
  if (result?.type !== "payment-error") {
    log(`no x402 challenge for a paid request (${result?.type ?? "error"})`);
    return undefined;
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.response.headers)) {
    headers[name.toLowerCase()] = value;
  }
  const header = headers["payment-required"];
  if (!header) return undefined;
  try {
    return { required: decodePaymentRequiredHeader(header), headers };
  } catch {
    return undefined;
  }
}

/**
 * A 402 refusing a proof: the route's challenge with `reason` as its `error`, and a JSON body
 * whose `error` is `message` — for every request but one with a v2 proof, the v1 challenge
 * (`v1OutputSchema` given), so one 402 serves both generations.
 */
export function refusalAnswer(
  offered: OfferedChallenge,
  reason: string,
  message: string,
  v1OutputSchema?: Record<string, unknown>,
): Answer {
  const required = encodePaymentRequiredHeader({ ...offered.required, error: reason });
  const headers = {
    ...offered.headers,
    "content-type": "application/json",
    "payment-required": required,
  };
  const v1 = v1OutputSchema && v1Challenge(required, message, v1OutputSchema);
  return { status: 402, headers, body: JSON.stringify(v1 ?? { error: message }) };
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
  const offered = await offeredChallenge(httpServer, c, log);
  return offered ? refusalAnswer(offered, message, message) : errorAnswer(402, message);
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
