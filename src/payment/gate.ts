import { ServerResponse } from "node:http";
import type { Context, MiddlewareHandler } from "hono";
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import { HonoAdapter } from "@x402/hono";
import { CLIENT_GONE, PAYMENT_FAILED, paymentConflict } from "./answer-catalogue.js";
import { answerOf, toResponse, type Answer } from "./answer.js";
import { paymentIdOf } from "./authorization.js";
import { RpcChainReader } from "./chain.js";
import {
  PreparedChallenges,
  challengeAnswer,
  offeredChallenge,
  refusalAnswer,
  unreadableProofAnswer,
  type OfferedChallenge,
} from "./challenge.js";
import { describeError } from "./describe-error.js";
import { snapshotOutputSchemaV1 } from "./discovery.js";
import { FacilitatorReadiness } from "./facilitator-readiness.js";
import { requiredKinds } from "./facilitator-support.js";
import { GateAnswers } from "./gate-answers.js";
import {
  DEFAULT_PAID_RECORD_TTL_MS,
  DEFAULT_PROOF_RELEASES,
  facilitatorClientFor,
  payerBudgetFor,
  type PaymentGateOptions,
} from "./gate-options.js";
import { DEFAULT_LEASE_MS, PaymentLedger, type PaidOutcome } from "./ledger.js";
import { matchOffer } from "./match.js";
import { createMcpPayment, type McpPayment } from "./mcp.js";
import { readRequestProof } from "./proof.js";
import { Reconciler } from "./reconciler.js";
import { createSdkServers } from "./resource-server.js";
import { NO_PAYMENT_EVENTS, versionOf, type PaymentEvents } from "./telemetry.js";
import { V1_RECEIPT_HEADER, V2_RECEIPT_HEADER } from "./v1.js";

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
  /**
   * Resolves once no paid call is under way on this instance: on SIGTERM, after the listener
   * stopped accepting, so no settlement is cut off by the exit. Each call is bounded by its own
   * facilitator time-outs (the settle one the longest).
   */
  drain(): Promise<void>;
  /** Paid calls under way on this instance (what `drain` waits for). */
  paidCallsUnderWay(): number;
  /** Stops the background reconciler (the store is the caller's to close). */
  close(): void;
  /** x402 over MCP for POST /mcp's paid tool, on the same ledger (mcp.ts). */
  mcp: McpPayment;
}

/** Default pace of the reconciler: about one lease, so an orphaned settlement waits little. */
const DEFAULT_RECONCILE_INTERVAL_MS = 15_000;

/**
 * x402 payment for POST /v1/snapshot: a thin Hono adapter over the payment ledger (ledger.ts),
 * the state machine that owns each step of a paid call over its durable record.
 *
 * Why not @x402/hono's middleware: it runs verify → handler → settle as one opaque step, so
 * nothing can be written between them, a lost or `settlement_pending` settle answer becomes a
 * refusal, and its settlePayment retries a pending settlement on its own. Here the SDK does what
 * it is good at — building the 402 challenge (x402HTTPResourceServer), matching a proof to an
 * offer (findMatchingRequirements) and verifying (verifyPayment) — and /settle is called through
 * our facilitator client directly, so the ledger reads every answer itself.
 *
 * Beside it: a proof nobody can read is a 402 saying why; the facilitator down is a 503 +
 * Retry-After, and a dead one costs no /supported round trip per request; the unpaid challenge
 * is built once per resource URL (challenge.ts); x402 v1 is served beside v2 (v1.ts).
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const log = options.log ?? ((line: string) => console.error(line));
  const maxReleases = options.proofReleases ?? DEFAULT_PROOF_RELEASES;
  const { budget, perMinute } = payerBudgetFor(options);
  const events = options.events ?? NO_PAYMENT_EVENTS;
  const answers = new GateAnswers(String(options.retryAfterSeconds ?? 5), perMinute, events);
  const facilitator = facilitatorClientFor(options, events);
  const { resourceServer, httpServer } = createSdkServers(options, facilitator);
  const readiness = new FacilitatorReadiness(
    httpServer,
    facilitator,
    requiredKinds(options.networks),
    options.supportedRetryMs ?? 1000,
    log,
  );
  const recordTtlMs = options.paidRecordTtlMs ?? DEFAULT_PAID_RECORD_TTL_MS;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const chain = new RpcChainReader(options.rpcUrls ?? {});
  const ledger = new PaymentLedger({
    store: options.store,
    verify: (payload, requirements) => resourceServer.verifyPayment(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    chain,
    budget,
    events,
    maxReleases,
    recordTtlMs,
    leaseMs,
    ...(options.onPaidRequest && { onPaidRequest: options.onPaidRequest }),
    log,
  });
  const reconciler = new Reconciler({
    store: options.store,
    chain,
    leaseMs,
    recordTtlMs,
    newOwner: () => ledger.newOwner("reconciler"),
    log,
  });
  const interval = options.reconcileIntervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS;
  if (interval > 0) reconciler.start(interval);
  const challenges = new PreparedChallenges();
  const v1OutputSchema = snapshotOutputSchemaV1();
  return {
    middleware: paidRouteMiddleware({
      readiness,
      challenges,
      httpServer,
      resourceServer,
      answers,
      events,
      log,
      ledger,
      v1OutputSchema,
    }),
    unpaidChallenge: (resourceUrl, header) => challenges.get(resourceUrl, header),
    warmUp: () => readiness.warmUp(),
    facilitatorReady: () => readiness.check(),
    drain: () => ledger.drain(),
    paidCallsUnderWay: () => ledger.underWay,
    close: () => reconciler.stop(),
    mcp: createMcpPayment({
      offer: options,
      readiness,
      resourceServer,
      ledger,
      answers,
      events,
      v1OutputSchema,
      log,
    }),
  };
}

/** What the route's middleware works with, built once per gate. */
interface GateParts {
  readiness: FacilitatorReadiness;
  challenges: PreparedChallenges;
  httpServer: x402HTTPResourceServer;
  resourceServer: x402ResourceServer;
  answers: GateAnswers;
  events: PaymentEvents;
  log: (line: string) => void;
  ledger: PaymentLedger;
  v1OutputSchema: Record<string, unknown>;
}

/**
 * The paid route's order of work: facilitator ready → prepared challenge → priced route →
 * readable proof → matched offer and payment id → the ledger (verify, snapshot, settle).
 */
function paidRouteMiddleware(parts: GateParts): MiddlewareHandler {
  const { readiness, challenges, httpServer, answers, events, log, ledger } = parts;
  return async (c, next) => {
    if (!(await readiness.check())) {
      return toResponse(answers.unavailable("facilitator_unavailable"));
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
    const proof = readRequestProof(header);
    if (!proof) return toResponse(await unpaidChallenge(parts, c));
    // A proof the SDK cannot read, or that would make recursive code (the facilitator client's
    // JSON encoding) overflow, is refused here, in bounded work: a 402 saying why, never a 503.
    if (!proof.ok) {
      events.payment(versionOf(c), "refused");
      log(`refused an unreadable payment proof: ${proof.why}`);
      return toResponse(await unreadableProofAnswer(httpServer, c, proof.why, log));
    }
    const offered = await offeredChallenge(httpServer, c, log);
    if (!offered) return toResponse(PAYMENT_FAILED);
    const v1Body = proof.version === 2 ? undefined : parts.v1OutputSchema;
    const matched = matchOffer(
      parts.resourceServer,
      proof.version,
      proof.payload,
      offered.required,
    );
    if (!matched) {
      events.payment(versionOf(c), "refused");
      const reason = "No matching payment requirements";
      return toResponse(refusalAnswer(offered, reason, `Payment rejected: ${reason}`, v1Body));
    }
    const id = paymentIdOf(proof.payload);
    if (!id.ok) {
      events.payment(versionOf(c), "refused");
      return toResponse(await unreadableProofAnswer(httpServer, c, id.why, log));
    }
    const outcome = await ledger.pay({
      version: proof.version,
      payload: matched.payload,
      requirements: matched.requirements,
      paymentId: id.id,
      body: requestBody(c),
      run: async () => {
        await next();
        return answerOf(c.res);
      },
      clientGone: () => c.req.raw.signal.aborted,
    });
    const response = answerFor(c, outcome, {
      answers,
      offered,
      v1Body,
      version: proof.version,
      log,
    });
    // Once the handler ran, Hono keeps `c.res` and ignores a returned answer; the handler's own
    // (already read) is replaced whole, not merged into ours.
    c.res = undefined as unknown as Response;
    c.res = response;
    return response;
  };
}

/** The plain 402 for a request without a proof, as the SDK builds it; kept for the fast path. */
async function unpaidChallenge(parts: GateParts, c: Context): Promise<Answer> {
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

interface AnswerContext {
  answers: GateAnswers;
  offered: OfferedChallenge;
  v1Body: Record<string, unknown> | undefined;
  version: 1 | 2;
  log: (line: string) => void;
}

/** The ledger's outcome as this route's answer; a paid one tells the ledger when it was sent. */
function answerFor(c: Context, outcome: PaidOutcome, context: AnswerContext): Response {
  const { answers, offered, v1Body, version } = context;
  switch (outcome.kind) {
    case "paid": {
      const receipt = version === 1 ? V1_RECEIPT_HEADER : V2_RECEIPT_HEADER;
      const { report, settlement } = outcome;
      const cacheControl = report.headers["cache-control"];
      const response = toResponse({
        ...report,
        headers: {
          ...report.headers,
          [receipt]: encodePaymentResponseHeader(settlement),
          // Settlement metadata is the payer's own: never in a shared cache.
          "cache-control": cacheControl ? `${cacheControl}, private` : "private",
        },
      });
      whenSent(c, (delivered) => {
        outcome.finish(delivered).catch((error: unknown) => {
          context.log(`payment record store failed: ${describeError(error)}`);
        });
      });
      return response;
    }
    case "unpaid":
      return toResponse(outcome.answer);
    case "client_gone":
      // Nobody receives it; the status is for the log.
      return toResponse(CLIENT_GONE);
    case "refused":
      return toResponse(refusalAnswer(offered, outcome.reason, outcome.message, v1Body));
    case "conflict":
      return toResponse(paymentConflict(outcome.code, outcome.retryAfterSeconds));
    case "over_budget":
      return toResponse(answers.overBudget(outcome.retryAfterMs));
    case "unavailable":
      return toResponse(answers.unavailable(outcome.code));
    case "store_down":
      return toResponse(answers.storeDown());
  }
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

/** The request body as the input check read it (the route's `snapshotInput`), for fingerprints. */
function requestBody(c: Context): string {
  const input = (c.get as (key: string) => unknown)("snapshotInput");
  const raw = (input as { raw?: unknown } | undefined)?.raw;
  return typeof raw === "string" ? raw : "";
}
