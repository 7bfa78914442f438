import { performance } from "node:perf_hooks";
import type { Context, MiddlewareHandler, Next } from "hono";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { paymentMiddlewareFromHTTPServer } from "@x402/hono";
import { errorAnswer, toResponse } from "./answer.js";
import { challengeAnswer, type PreparedChallenges } from "./challenge.js";
import { describeError } from "./describe-error.js";
import { snapshotOutputSchemaV1 } from "./discovery.js";
import { PAYMENT_FAILED, type GateAnswers } from "./gate-answers.js";
import type { PaidRequestTimings } from "./gate-options.js";
import type { PayerBudget } from "./payer-budget.js";
import { REPLAY_CHECK_FAILED, explainRejection, isReplayRejection } from "./replay-guard.js";
import type { PaidAttempt } from "./settlements-under-way.js";
import { versionOf, type PaymentEvents, type ProtocolVersion } from "./telemetry.js";

/** Internal answer when the client left before settlement; nobody receives it. */
const CLIENT_GONE_STATUS = 499;
/** The SDK's answer to a facilitator failure; the snapshot handler never answers it. */
const SDK_FACILITATOR_ERROR_STATUS = 502;

/** The verify → handler → settle step of one paid request, its report told to `attempt`. */
export type VerifyRunSettle = (
  c: Context,
  next: Next,
  payer: string | undefined,
  attempt?: PaidAttempt,
) => Promise<Response | void>;

interface VerifyRunSettleParts {
  httpServer: x402HTTPResourceServer;
  budget: PayerBudget;
  answers: GateAnswers;
  challenges: PreparedChallenges;
  events: PaymentEvents;
  /** How many times a proof may be released; the 402 of an exhausted one names it. */
  maxReleases: number;
  onPaidRequest: ((timings: PaidRequestTimings) => void) | undefined;
  log: (line: string) => void;
}

/** The step's parts, with the SDK's middleware and the v1 challenge's schema built once. */
interface Step extends VerifyRunSettleParts {
  sdkMiddleware: MiddlewareHandler;
  v1OutputSchema: Record<string, unknown>;
}

/** One paid request as it goes: when it was verified and handled, whether its budget was taken. */
interface PaidRun {
  c: Context;
  payer: string | undefined;
  attempt: PaidAttempt | undefined;
  version: ProtocolVersion;
  started: number;
  verified?: number;
  handled: number;
  reserved: boolean;
}

/**
 * The SDK's verify → handler → settle around `next`, with the payer's unpaid budget taken
 * before the snapshot runs and given back once it is paid for; then the SDK's answer in ours.
 */
export function createVerifyRunSettle(parts: VerifyRunSettleParts): VerifyRunSettle {
  const step: Step = {
    ...parts,
    // No paywall, and no /supported sync by the SDK: FacilitatorReadiness does it, once.
    sdkMiddleware: paymentMiddlewareFromHTTPServer(parts.httpServer, undefined, undefined, false),
    v1OutputSchema: snapshotOutputSchemaV1(),
  };
  return async (c, next, payer, attempt) => {
    const started = performance.now();
    const version = versionOf(c);
    const run: PaidRun = { c, payer, attempt, version, started, handled: started, reserved: false };
    let returned: Response | void;
    try {
      returned = await step.sdkMiddleware(c, () => snapshotWithinBudget(step, run, next));
    } catch (error) {
      step.log(`x402 payment processing failed: ${describeError(error)}`);
      return toResponse(PAYMENT_FAILED);
    }
    const answer = returned ?? c.res;
    await account(step, run, answer);
    return inOurWords(step, run, answer, returned);
  };
}

/**
 * The `next` the SDK calls once the proof is verified and claimed (nothing fetched yet): the
 * payer's unpaid budget is taken, then the snapshot runs.
 */
async function snapshotWithinBudget(step: Step, run: PaidRun, next: Next): Promise<void> {
  const { budget, answers, events, log } = step;
  const { c, payer, attempt } = run;
  run.verified = performance.now();
  events.payment(run.version, "verified");
  if (payer === undefined) throw new Error("verified payment without a readable proof");
  const reservation = await budget.reserve(payer).catch((error: unknown) => {
    log(`payer budget store failed: ${describeError(error)}`);
    return undefined;
  });
  if (!reservation?.ok) {
    if (reservation) events.rateLimited("payer");
    c.res = toResponse(
      reservation ? answers.overBudget(reservation.retryAfterMs) : answers.storeDown(),
    );
    return;
  }
  run.reserved = true;
  await next();
  run.handled = performance.now();
  // A client that hung up gets nothing, so it must pay nothing: an answer of 400 or more
  // makes the SDK skip settlement and release the proof.
  if (c.res.status < 400 && c.req.raw.signal.aborted) {
    c.res = toResponse(errorAnswer(CLIENT_GONE_STATUS, "client closed the connection"));
  } else if (attempt && c.res.status === 200) {
    attempt.report = c.res.clone();
  }
}

/** What a verified request came to: its outcome told, its budget given back if paid, its times. */
async function account(step: Step, run: PaidRun, answer: Response): Promise<void> {
  const { budget, events, onPaidRequest, log } = step;
  const { payer, version, started, verified, handled } = run;
  if (verified !== undefined && answer.status === 200) events.payment(version, "settled");
  // Settlement refused after the snapshot: nothing was charged.
  if (verified !== undefined && answer.status === 402) events.payment(version, "refused");
  // Paid for: the snapshot no longer counts against the payer's unpaid budget.
  if (run.reserved && payer !== undefined && answer.status === 200) {
    await budget.refund(payer).catch((error: unknown) => {
      log(`payer budget store failed: ${describeError(error)}`);
    });
  }
  if (verified !== undefined) {
    const finished = performance.now();
    onPaidRequest?.({
      verifyMs: verified - started,
      handlerMs: handled - verified,
      settleMs: finished - handled,
      totalMs: finished - started,
      status: answer.status === SDK_FACILITATOR_ERROR_STATUS ? 503 : answer.status,
    });
  }
}

/** The SDK's answer in ours: facilitator trouble and a failing store are 503, a 402 says why. */
async function inOurWords(
  step: Step,
  run: PaidRun,
  answer: Response,
  returned: Response | void,
): Promise<Response | void> {
  const { answers, challenges, events, maxReleases, log } = step;
  const { c, payer, attempt, version, verified } = run;
  if (answer.status === SDK_FACILITATOR_ERROR_STATUS) {
    log(`x402 facilitator error: ${await answer.text().catch(() => "")}`);
    // The report was made and settlement went out with no known outcome: the caller keeps it.
    if (attempt?.report) attempt.unsettled = true;
    c.res = toResponse(answers.unavailable("facilitator unreachable or failing"));
    return c.res;
  }
  // The claim after verify could not be checked: the store is down, not the proof.
  if (answer.status === 402 && verified === undefined && storeFailed(answer)) {
    c.res = toResponse(answers.storeDown());
    return c.res;
  }
  // The challenge (no proof, or one the facilitator refused): its body says why.
  if (answer.status === 402 && verified === undefined) {
    const v2Proof = Boolean(c.req.header("payment-signature"));
    let rejection: string | undefined;
    const challenge = await challengeAnswer(
      answer,
      (reason) => {
        rejection = reason;
        return explainRejection(reason, maxReleases);
      },
      v2Proof ? undefined : step.v1OutputSchema,
    );
    if (payer !== undefined) {
      const replayed = rejection !== undefined && isReplayRejection(rejection);
      events.payment(version, replayed ? "replayed" : "refused");
    }
    challenges.keep(c.req.url, (name) => c.req.header(name), challenge);
    return toResponse(challenge);
  }
  return returned;
}

/** An SDK 402 whose reason is the replay store's failure (replay-guard.ts). */
function storeFailed(answer: Response): boolean {
  const required = answer.headers.get("payment-required");
  if (!required) return false;
  try {
    return decodePaymentRequiredHeader(required).error === REPLAY_CHECK_FAILED;
  } catch {
    return false;
  }
}
