import type { Context, MiddlewareHandler } from "hono";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { HonoAdapter } from "@x402/hono";
import { toResponse, type Answer } from "./answer.js";
import { PreparedChallenges, unreadableProofAnswer } from "./challenge.js";
import { FacilitatorReadiness } from "./facilitator-readiness.js";
import { requiredKinds } from "./facilitator-support.js";
import { GateAnswers, PAYMENT_FAILED } from "./gate-answers.js";
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
import { MemoryReplayStore } from "./replay-guard.js";
import { createHttpResourceServer } from "./resource-server.js";
import { SettlementsUnderWay } from "./settlements-under-way.js";
import { NO_PAYMENT_EVENTS, versionOf, type PaymentEvents } from "./telemetry.js";
import { V1_PROOF_HEADER, renameReceiptForV1 } from "./v1.js";
import { createVerifyRunSettle, type VerifyRunSettle } from "./verify-run-settle.js";

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
 *  - paying once (paying-once.ts): a payment id's answer is kept and served again, and a report
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
  const readiness = new FacilitatorReadiness(
    httpServer,
    facilitator,
    requiredKinds(options.networks),
    options.supportedRetryMs ?? 1000,
    log,
  );
  const challenges = new PreparedChallenges();
  const verifyRunSettle = createVerifyRunSettle({
    httpServer,
    budget,
    answers,
    challenges,
    events,
    maxReleases,
    onPaidRequest: options.onPaidRequest,
    log,
  });
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
  return {
    middleware: paidRouteMiddleware({
      readiness,
      challenges,
      httpServer,
      answers,
      events,
      log,
      payingOnce,
      verifyRunSettle,
    }),
    unpaidChallenge: (resourceUrl, header) => challenges.get(resourceUrl, header),
    warmUp: () => readiness.warmUp(),
    facilitatorReady: () => readiness.check(),
  };
}

/** What the route's middleware works with, built once per gate. */
interface GateParts {
  readiness: FacilitatorReadiness;
  challenges: PreparedChallenges;
  httpServer: x402HTTPResourceServer;
  answers: GateAnswers;
  events: PaymentEvents;
  log: (line: string) => void;
  payingOnce: PayingOnce;
  verifyRunSettle: VerifyRunSettle;
}

/**
 * The paid route's order of work: facilitator ready → prepared challenge → priced route →
 * readable proof → paid once (a proof with an EIP-3009 authorization), else verify, snapshot,
 * settle.
 */
function paidRouteMiddleware(parts: GateParts): MiddlewareHandler {
  const { readiness, challenges, httpServer, answers, events, log, payingOnce, verifyRunSettle } =
    parts;
  return async (c, next) => {
    if (!(await readiness.check())) {
      return toResponse(answers.unavailable("facilitator unreachable"));
    }
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
      events.payment(versionOf(c), "refused");
      log(`refused an unreadable payment proof: ${proof.why}`);
      return toResponse(await unreadableProofAnswer(httpServer, c, proof.why, log));
    }
    const identity = proof && paidIdentity(proof.payload, requestBody(c));
    if (identity && !identity.ok) {
      events.payment(versionOf(c), "refused");
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
}

/** The request body as the input check read it (the route's `snapshotInput`), for fingerprints. */
function requestBody(c: Context): string {
  const input = (c.get as (key: string) => unknown)("snapshotInput");
  const raw = (input as { raw?: unknown } | undefined)?.raw;
  return typeof raw === "string" ? raw : "";
}
