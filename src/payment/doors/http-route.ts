/**
 * The HTTP door of the paid call (src/payment/paid-call.ts): POST /v1/snapshot with x402 v2
 * (PAYMENT-SIGNATURE, PAYMENT-RESPONSE) and v1 (X-PAYMENT, X-PAYMENT-RESPONSE). It reads the
 * proof header once, hands the core a typed request, and writes the outcome as this route's
 * answer: the SDK's 402 (one body serving both generations), the report with its receipt, or the
 * catalogue's answer.
 */
import { ServerResponse } from "node:http";
import type { Context } from "hono";
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { HonoAdapter } from "@x402/hono";
import type { KeptAnswer } from "../../store/index.js";
import type { SnapshotTarget } from "../../snapshot/index.js";
import { PAYMENT_FAILED } from "../answers/catalogue.js";
import { toResponse, type Answer } from "../answers/answer.js";
import {
  challengeAnswer,
  offeredChallenge,
  refusalAnswer,
  unreadableProofAnswer,
  type OfferedChallenge,
  type PreparedChallenges,
} from "../x402/challenge.js";
import { describeError } from "../describe-error.js";
import type { GateAnswers } from "../answers/gate-answers.js";
import type { WorkAdmission } from "../ledger/ledger.js";
import { catalogueAnswer, type PaidCallOutcome, type PaidCalls } from "../paid-call.js";
import { readRequestProof } from "../x402/proof.js";
import { V1_RECEIPT_HEADER, V2_RECEIPT_HEADER } from "../x402/v1.js";

/** One call of the paid route, as the route hands it over (its input already checked). */
export interface RouteCall {
  readonly target: SnapshotTarget;
  /** The body's bytes as received. */
  readonly body: Uint8Array;
  run(signal: AbortSignal): Promise<KeptAnswer>;
  readonly admission?: WorkAdmission;
}

export interface PaidRoute {
  /** The paid call for this request: its answer, the report only once paid. */
  answer(c: Context, call: RouteCall): Promise<Response>;
}

export interface PaidRouteParts {
  calls: PaidCalls;
  challenges: PreparedChallenges;
  httpServer: x402HTTPResourceServer;
  answers: GateAnswers;
  v1OutputSchema: Record<string, unknown>;
  log: (line: string) => void;
}

export function createPaidRoute(parts: PaidRouteParts): PaidRoute {
  const { calls, httpServer, log } = parts;
  return {
    async answer(c, call) {
      const proof = readRequestProof((name) => c.req.header(name));
      let offered: OfferedChallenge | undefined;
      const outcome = await calls.call({
        ...call,
        proof,
        signal: c.req.raw.signal,
        offers: async () => {
          offered = await offeredChallenge(httpServer, c, log);
          return offered?.required;
        },
      });
      // Every generation but v2 gets the v1 challenge as the 402's body (one body serves both).
      const v1Body = proof?.version === 2 ? undefined : parts.v1OutputSchema;
      const answer = await answerOf(c, outcome, parts, {
        offered,
        v1Body,
        version: proof?.version,
      });
      return toResponse(answer);
    },
  };
}

interface Rendering {
  offered: OfferedChallenge | undefined;
  v1Body: Record<string, unknown> | undefined;
  version: 1 | 2 | undefined;
}

/** The outcome as this route's answer; a paid one tells the ledger when it was sent. */
async function answerOf(
  c: Context,
  outcome: PaidCallOutcome,
  parts: PaidRouteParts,
  { offered, v1Body, version }: Rendering,
): Promise<Answer> {
  switch (outcome.kind) {
    case "paid":
      whenSent(c, (delivered) => {
        outcome.finish(delivered).catch((error: unknown) => {
          parts.log(`payment record store failed: ${describeError(error)}`);
        });
      });
      return withReceipt(outcome.report, outcome.settlement, version ?? 2);
    case "payment_required":
      return (
        parts.challenges.get(c.req.url, (name) => c.req.header(name)) ??
        (await unpaidChallenge(c, parts))
      );
    case "unreadable_proof":
      return unreadableProofAnswer(parts.httpServer, c, outcome.why, parts.log);
    case "refused":
      return offered
        ? refusalAnswer(offered, outcome.reason, outcome.message, v1Body)
        : PAYMENT_FAILED;
    default:
      return catalogueAnswer(outcome, parts.answers);
  }
}

/** The report with the settlement's receipt header of the proof's generation. */
function withReceipt(
  report: KeptAnswer,
  settlement: Parameters<typeof encodePaymentResponseHeader>[0],
  version: 1 | 2,
): Answer {
  const receipt = version === 1 ? V1_RECEIPT_HEADER : V2_RECEIPT_HEADER;
  const cacheControl = report.headers["cache-control"];
  return {
    ...report,
    headers: {
      ...report.headers,
      [receipt]: encodePaymentResponseHeader(settlement),
      // Settlement metadata is the payer's own: never in a shared cache.
      "cache-control": cacheControl ? `${cacheControl}, private` : "private",
    },
  };
}

/** The plain 402 for a request without a proof, as the SDK builds it; kept for the fast path. */
async function unpaidChallenge(c: Context, parts: PaidRouteParts): Promise<Answer> {
  const { httpServer, challenges, log } = parts;
  const result = await httpServer
    .processHTTPRequest({ adapter: new HonoAdapter(c), path: c.req.path, method: c.req.method })
    .catch((error: unknown) => {
      log(`x402 challenge failed: ${describeError(error)}`);
      return undefined;
    });
  if (result?.type !== "payment-error") return PAYMENT_FAILED;
  const { response } = result;
  const html = response.isHtml === true;
  // The SDK names its own `Content-Type`: ours replaces it (two keys of one init are both sent).
  const headers = new Headers(response.headers);
  headers.set("content-type", html ? "text/html; charset=utf-8" : "application/json");
  const sdkAnswer = new Response(
    html ? String(response.body) : JSON.stringify(response.body ?? {}),
    { status: response.status, headers },
  );
  const challenge = await challengeAnswer(sdkAnswer, () => undefined, parts.v1OutputSchema);
  challenges.keep(c.req.url, (name) => c.req.header(name), challenge);
  return challenge;
}

/**
 * Calls `done(true)` once the answer was written out to the client, `done(false)` when its
 * connection closed first. With @hono/node-server `env.outgoing` is the Node response; without
 * one (a test's `app.request`) the answer is handed over as the Response itself.
 */
export function whenSent(c: Context, done: (delivered: boolean) => void): void {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  if (!(outgoing instanceof ServerResponse)) {
    done(true);
    return;
  }
  let told = false;
  const tell = (delivered: boolean) => {
    if (told) return;
    told = true;
    done(delivered);
  };
  // Already closed (the client left while the call ran): not delivered.
  if (outgoing.closed || outgoing.destroyed) {
    tell(outgoing.writableFinished);
    return;
  }
  outgoing.once("finish", () => tell(true));
  outgoing.once("close", () => tell(outgoing.writableFinished));
}
