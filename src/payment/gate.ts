import { performance } from "node:perf_hooks";
import type { Context, MiddlewareHandler, Next } from "hono";
import { HonoAdapter, paymentMiddlewareFromHTTPServer } from "@x402/hono";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { paymentIdentifierResourceServerExtension } from "@x402/extensions/payment-identifier";
import { errorAnswer, toResponse, type Answer } from "./answer.js";
import { PreparedChallenges, challengeAnswer, unreadableProofAnswer } from "./challenge.js";
import { describeError } from "./describe-error.js";
import { snapshotOutputSchemaV1 } from "./discovery.js";
import { GateAnswers, NOT_RUN_STATUSES, PAYMENT_FAILED } from "./gate-answers.js";
import { FacilitatorReadiness } from "./facilitator-readiness.js";
import { requiredKinds } from "./facilitator-support.js";
import type { ResilientFacilitatorClient } from "./facilitator-client.js";
import {
  DEFAULT_PAID_RECORD_TTL_MS,
  DEFAULT_PROOF_RELEASES,
  facilitatorClientFor,
  payerBudgetFor,
  type PaymentGateOptions,
} from "./gate-options.js";
import { SettlementRecovery, paidIdentity } from "./paid-records.js";
import { PaidStore } from "./paid-store.js";
import { PayingOnce } from "./paying-once.js";
import { readRequestProof } from "./proof.js";
import { PAID_ROUTE, paidRouteConfig } from "./route.js";
import {
  MemoryReplayStore,
  REPLAY_CHECK_FAILED,
  explainRejection,
  guardReplays,
  isReplayRejection,
} from "./replay-guard.js";
import type { ReplayStore } from "./replay-guard.js";
import { NO_PAYMENT_EVENTS, proofVersion, versionOf } from "./telemetry.js";
import { SettlementsUnderWay, type PaidAttempt } from "./settlements-under-way.js";
import { DualGenerationHttpServer, V1_PROOF_HEADER, renameReceiptForV1 } from "./v1.js";

/** Internal answer when the client left before settlement; nobody receives it. */
const CLIENT_GONE_STATUS = 499;
/** The SDK's answer to a facilitator failure; the snapshot handler never answers it. */
const SDK_FACILITATOR_ERROR_STATUS = 502;
export interface PaymentGate {
  /** Hono middleware for POST /v1/snapshot, mounted after input validation. */
  middleware: MiddlewareHandler;
  /**
   * The 402 challenge already prepared for this resource URL (the request URL, as the Hono
   * route sees it), when the request would get exactly that answer (PreparedChallenges);
   * otherwise undefined and the request must go through `middleware`. For serving the unpaid
   * challenge without the framework (src/http/challenge-fast-path.ts).
   */
  unpaidChallenge(
    resourceUrl: string,
    header: (name: string) => string | undefined,
  ): Answer | undefined;
  /**
   * Fetches the facilitator's /supported once (cached): false while it is unreachable (one
   * warning line); rejects with a FacilitatorMismatchError (a ConfigError naming the variables)
   * when it lacks a configured network, scheme or protocol version.
   */
  warmUp(): Promise<boolean>;
  /**
   * Whether the facilitator's /supported is known (fetched and checked), trying again when the
   * last failure is older than `supportedRetryMs`: GET /ready's `facilitator` check.
   */
  facilitatorReady(): Promise<boolean>;
}

/**
 * x402 payment for POST /v1/snapshot: @x402/hono's own middleware (over the SDK's
 * x402HTTPResourceServer) does the protocol and the order — verify → handler → settle only a
 * successful answer → PAYMENT-RESPONSE; a handler answer of 400 or more is never settled. What
 * docs/contract.md §7.2–§7.5 ask beyond it lives in SDK hooks and in this thin wrapper:
 *  - replay guard (replay-guard.ts): a proof is served once, and released a bounded number of
 *    times after snapshots nobody paid for;
 *  - a proof nobody can read is a 402 saying why, and a payer over its unpaid budget a 429;
 *  - the facilitator down, slow or failing is 503 + Retry-After (the SDK answers 502), and a dead
 *    facilitator costs no /supported round trip per request (the SDK would retry on each);
 *  - the unpaid challenge is built once per resource URL (challenge.ts), not per request;
 *  - a rejected payment's 402 says why in its JSON body (the SDK leaves it `{}`).
 *  - paying once (paid-records.ts): a payment id's answer is kept and served again, and a report
 *    whose settlement had no known outcome is kept until the retry learns it was paid.
 * x402 v1 is served beside v2 by a thin translation (v1.ts). A new protocol generation adds
 * its proof header and reader in proof.ts.
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const log = options.log ?? ((line: string) => console.error(line));
  const maxReleases = options.proofReleases ?? DEFAULT_PROOF_RELEASES;
  const { budget, perMinute } = payerBudgetFor(options);
  const events = options.events ?? NO_PAYMENT_EVENTS;
  const answers = new GateAnswers(String(options.retryAfterSeconds ?? 5), perMinute, events);
  const facilitator = facilitatorClientFor(options, events);
  const store = options.replayStore ?? new MemoryReplayStore();
  const records = new PaidStore(store, options.paidRecordTtlMs ?? DEFAULT_PAID_RECORD_TTL_MS, log);
  const underWay = new SettlementsUnderWay(records);
  const httpServer = createHttpResourceServer(
    options,
    facilitator,
    { store, maxReleases, underWay },
    log,
  );
  // No paywall, and no /supported sync by the SDK: FacilitatorReadiness does it, once.
  const sdkMiddleware = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false);
  const readiness = new FacilitatorReadiness(
    httpServer,
    facilitator,
    requiredKinds(options.networks),
    options.supportedRetryMs ?? 1000,
    log,
  );
  const challenges = new PreparedChallenges();
  const v1OutputSchema = snapshotOutputSchemaV1();

  /**
   * The SDK's verify → handler → settle around `next`, with the payer's unpaid budget taken
   * before the snapshot runs and given back once it is paid for; then the SDK's answer in ours.
   */
  async function verifyRunSettle(
    c: Context,
    next: Next,
    payer: string | undefined,
    attempt?: PaidAttempt,
  ): Promise<Response | void> {
    const started = performance.now();
    const version = versionOf(c);
    let verified: number | undefined;
    let handled = started;
    let reserved = false;
    let returned: Response | void;
    try {
      returned = await sdkMiddleware(c, async () => {
        // Here the proof is verified and claimed; nothing has been fetched yet.
        verified = performance.now();
        events.payment(version, "verified");
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
        reserved = true;
        await next();
        handled = performance.now();
        // A client that hung up gets nothing, so it must pay nothing: an answer of 400 or more
        // makes the SDK skip settlement and release the proof.
        if (c.res.status < 400 && c.req.raw.signal.aborted) {
          c.res = toResponse(errorAnswer(CLIENT_GONE_STATUS, "client closed the connection"));
        } else if (attempt && c.res.status === 200) {
          attempt.report = c.res.clone();
        }
      });
    } catch (error) {
      log(`x402 payment processing failed: ${describeError(error)}`);
      return toResponse(PAYMENT_FAILED);
    }
    const answer = returned ?? c.res;
    if (verified !== undefined && answer.status === 200) events.payment(version, "settled");
    // Settlement refused after the snapshot: nothing was charged.
    if (verified !== undefined && answer.status === 402) events.payment(version, "refused");
    // Paid for: the snapshot no longer counts against the payer's unpaid budget.
    if (reserved && payer !== undefined && answer.status === 200) {
      await budget.refund(payer).catch((error: unknown) => {
        log(`payer budget store failed: ${describeError(error)}`);
      });
    }
    if (verified !== undefined) {
      const finished = performance.now();
      options.onPaidRequest?.({
        verifyMs: verified - started,
        handlerMs: handled - verified,
        settleMs: finished - handled,
        totalMs: finished - started,
        status: answer.status === SDK_FACILITATOR_ERROR_STATUS ? 503 : answer.status,
      });
    }
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
        v2Proof ? undefined : v1OutputSchema,
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

  const payingOnce = new PayingOnce({
    records,
    underWay,
    recovery: new SettlementRecovery(facilitator, options.rpcUrls ?? {}, log),
    budget,
    answers,
    events,
    log,
    verifyRunSettle,
  });

  const middleware: MiddlewareHandler = async (c, next) => {
    if (!(await readiness.check()))
      return toResponse(answers.unavailable("facilitator unreachable"));
    const header = (name: string) => c.req.header(name);
    const prepared = challenges.get(c.req.url, header);
    if (prepared) return toResponse(prepared);
    const adapter = new HonoAdapter(c);
    if (!httpServer.requiresPayment({ adapter, path: c.req.path, method: c.req.method })) {
      // Fail closed: the SDK would serve a route it does not price for free.
      log(`payment gate mounted on unpriced route ${c.req.method} ${c.req.path}`);
      return toResponse(PAYMENT_FAILED);
    }
    // A proof the SDK cannot read, or that would make recursive code (the facilitator client's
    // JSON encoding) overflow, is refused here, in bounded work: a 402 saying why, never a 503.
    const proof = readRequestProof(header);
    if (proof && !proof.ok) {
      events.payment(proofVersion(header) ?? "2", "refused");
      log(`refused an unreadable payment proof: ${proof.why}`);
      return toResponse(await unreadableProofAnswer(httpServer, c, proof.why, log));
    }
    const identity = proof && paidIdentity(proof.payload, requestBody(c));
    if (identity && !identity.ok) {
      events.payment(proofVersion(header) ?? "2", "refused");
      return toResponse(await unreadableProofAnswer(httpServer, c, identity.why, log));
    }
    const answered =
      proof && identity
        ? await payingOnce.pay(c, next, proof.payer, identity.identity)
        : await verifyRunSettle(c, next, proof?.payer);
    if (header(V1_PROOF_HEADER) && !header("payment-signature")) {
      renameReceiptForV1(answered ?? c.res);
    }
    return answered;
  };

  return {
    middleware,
    unpaidChallenge: (resourceUrl, header) => challenges.get(resourceUrl, header),
    warmUp: () => readiness.warmUp(),
    facilitatorReady: () => readiness.check(),
  };
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

/** The request body as the input check read it (the route's `snapshotInput`), for fingerprints. */
function requestBody(c: Context): string {
  const input = (c.get as (key: string) => unknown)("snapshotInput");
  const raw = (input as { raw?: unknown } | undefined)?.raw;
  return typeof raw === "string" ? raw : "";
}

/** The SDK's resource server for the paid route, on our facilitator client, replays guarded. */
function createHttpResourceServer(
  options: PaymentGateOptions,
  facilitator: ResilientFacilitatorClient,
  replays: {
    store: ReplayStore;
    maxReleases: number;
    underWay: SettlementsUnderWay;
  },
  log: (line: string) => void,
): x402HTTPResourceServer {
  const resourceServer = new x402ResourceServer(facilitator);
  for (const network of options.networks) resourceServer.register(network, new ExactEvmScheme());
  resourceServer.registerExtension(bazaarResourceServerExtension);
  resourceServer.registerExtension(paymentIdentifierResourceServerExtension);
  guardReplays(resourceServer, replays.store, replays.maxReleases, NOT_RUN_STATUSES, log);
  // Remembered so a settlement with no known outcome can be completed on the client's retry.
  resourceServer.onBeforeSettle(({ paymentPayload, requirements }) =>
    replays.underWay.beforeSettle(paymentPayload, requirements),
  );
  // The SDK's HTTP server, with x402 v1 proofs read too (v1.ts).
  return new DualGenerationHttpServer(
    resourceServer,
    { [PAID_ROUTE]: paidRouteConfig(options) },
    options,
  );
}
