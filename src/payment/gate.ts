import { performance } from "node:perf_hooks";
import type { Context, MiddlewareHandler, Next } from "hono";
import { HonoAdapter, paymentMiddlewareFromHTTPServer } from "@x402/hono";
import { x402ResourceServer } from "@x402/core/server";
import type { x402HTTPResourceServer } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { NETWORK_IDS } from "../config.js";
import type { PaymentConfig } from "../config.js";
import { errorAnswer, toResponse, type Answer } from "./answer.js";
import { createCdpAuthHeaders } from "./cdp-auth.js";
import { PreparedChallenges, challengeAnswer, unreadableProofAnswer } from "./challenge.js";
import { describeError } from "./describe-error.js";
import { snapshotOutputSchemaV1 } from "./discovery.js";
import {
  DEFAULT_FACILITATOR_TIMEOUT_MS,
  ResilientFacilitatorClient,
} from "./facilitator-client.js";
import type { FacilitatorClientOptions } from "./facilitator-client.js";
import { memoryPayerBudget } from "./payer-budget.js";
import type { PayerBudget } from "./payer-budget.js";
import { readRequestProof } from "./proof.js";
import { PAID_ROUTE, paidRouteConfig, type RouteOffer } from "./route.js";
import { MemoryReplayStore, explainRejection, guardReplays } from "./replay-guard.js";
import type { ReplayStore } from "./replay-guard.js";
import { DualGenerationHttpServer, V1_PROOF_HEADER, renameReceiptForV1 } from "./v1.js";

const DEFAULT_SETTLE_TIMEOUT_MS = 130_000;
const DEFAULT_PROOF_RELEASES = 3;
const DEFAULT_REFUSED_PER_PAYER_PER_MINUTE = 60;
/** Answer of a payer over its budget. The snapshot handler never answers it. */
const OVER_BUDGET_STATUS = 429;
/** Answer while payment cannot be processed (docs/contract.md §7.5). */
const UNAVAILABLE_STATUS = 503;
/** Internal answer when the client left before settlement; nobody receives it. */
const CLIENT_GONE_STATUS = 499;
/** The SDK's answer to a facilitator failure; the snapshot handler never answers it. */
const SDK_FACILITATOR_ERROR_STATUS = 502;
/** Statuses the gate answers in place of the snapshot, which then never ran. */
const NOT_RUN_STATUSES: ReadonlySet<number> = new Set([OVER_BUDGET_STATUS, UNAVAILABLE_STATUS]);

const PAYMENT_FAILED = errorAnswer(500, "Payment processing failed.");

export interface PaidRequestTimings {
  /** Facilitator /verify plus the replay claim (processHTTPRequest of the SDK). */
  verifyMs: number;
  /** The snapshot handler (everything downstream of this middleware). */
  handlerMs: number;
  /** Facilitator /settle; 0 when the answer was not 200 and nothing was settled. */
  settleMs: number;
  totalMs: number;
  /** Final status sent to the client. */
  status: number;
}

export interface PaymentGateOptions extends RouteOffer {
  facilitatorUrl: string;
  /** Sent on every facilitator call (hosted facilitators that need auth). */
  facilitatorHeaders?: Record<string, string>;
  /** Per-request auth headers (e.g. CDP JWTs); see FacilitatorClientOptions.createAuthHeaders. */
  facilitatorAuth?: FacilitatorClientOptions["createAuthHeaders"];
  /** Bound on /supported and /verify; default 10 s. */
  facilitatorTimeoutMs?: number;
  /**
   * Bound on /settle; default 130 s. Longer than the others on purpose: a settle that times out
   * here may still land on chain, charging a client who gets no report, and a facilitator waits
   * up to 120 s for the receipt on Base.
   */
  facilitatorSettleTimeoutMs?: number;
  /** After a failed /supported fetch, unpaid requests answer 503 without retrying for this long. */
  supportedRetryMs?: number;
  /** `Retry-After` (seconds) on 503 answers. */
  retryAfterSeconds?: number;
  replayStore?: ReplayStore;
  /**
   * How many times one proof may be released after a snapshot it did not pay for (refused, or
   * the client hung up) before it is refused with a 402; default 3 (SNAPSHOT_PROOF_RELEASES).
   */
  proofReleases?: number;
  /** Unpaid snapshots per payer and minute before a 429; default 60. Ignored with `payerBudget`. */
  refusedPerPayerPerMinute?: number;
  /** Where the per-payer count lives; default in memory (SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE). */
  payerBudget?: PayerBudget;
  /** Called once per paid request that reached the handler (benchmarks, metrics). */
  onPaidRequest?: (timings: PaidRequestTimings) => void;
  log?: (line: string) => void;
}

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
  /** Fetches the facilitator's /supported once (cached); false if it is unreachable now. */
  warmUp(): Promise<boolean>;
}

/** The gate's options from the validated environment; devnet supplies payTo and facilitator. */
export function paymentGateOptionsFromConfig(
  config: PaymentConfig,
  devnet?: { payTo: `0x${string}`; facilitatorUrl: string; network: Network },
): Pick<
  PaymentGateOptions,
  "payTo" | "networks" | "priceUsdc" | "facilitatorUrl" | "facilitatorHeaders" | "facilitatorAuth"
> {
  if (devnet) {
    return {
      payTo: devnet.payTo,
      networks: [devnet.network],
      priceUsdc: config.priceUsdc,
      facilitatorUrl: devnet.facilitatorUrl,
    };
  }
  if (!config.payTo || !config.facilitatorUrl) {
    throw new Error("payment configuration needs X402_PAY_TO and X402_FACILITATOR_URL");
  }
  return {
    payTo: config.payTo,
    networks: config.networks.map((name) => NETWORK_IDS[name]),
    priceUsdc: config.priceUsdc,
    facilitatorUrl: config.facilitatorUrl,
    ...(config.facilitatorHeaders && { facilitatorHeaders: config.facilitatorHeaders }),
    ...(config.cdpApiKey && {
      facilitatorAuth: createCdpAuthHeaders({
        ...config.cdpApiKey,
        facilitatorUrl: config.facilitatorUrl,
      }),
    }),
  };
}

/**
 * The facilitator's /supported, fetched once and cached by the SDK. A failure is remembered for
 * `retryMs` so a dead facilitator costs no round trip per request, and retried after.
 */
class FacilitatorReadiness {
  private ready = false;
  private pending: Promise<boolean> | undefined;
  private lastFailureAt = -Infinity;

  constructor(
    private readonly httpServer: x402HTTPResourceServer,
    private readonly retryMs: number,
    private readonly onFailure: (error: unknown) => void,
  ) {}

  warmUp(): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    this.pending ??= this.httpServer.initialize().then(
      () => {
        this.ready = true;
        this.pending = undefined;
        return true;
      },
      (error: unknown) => {
        this.lastFailureAt = performance.now();
        this.pending = undefined;
        this.onFailure(error);
        return false;
      },
    );
    return this.pending;
  }

  /** Ready now, or after one attempt unless one failed within `retryMs`. */
  async check(): Promise<boolean> {
    if (this.ready) return true;
    if (performance.now() - this.lastFailureAt < this.retryMs) return false;
    return this.warmUp();
  }
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
 * x402 v1 is served beside v2 by a thin translation (v1.ts). A new protocol generation adds
 * its proof header and reader in proof.ts.
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const log = options.log ?? ((line: string) => console.error(line));
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  const maxReleases = options.proofReleases ?? DEFAULT_PROOF_RELEASES;
  const perMinute = options.refusedPerPayerPerMinute ?? DEFAULT_REFUSED_PER_PAYER_PER_MINUTE;
  const budget = options.payerBudget ?? memoryPayerBudget(perMinute);
  const httpServer = createHttpResourceServer(options, maxReleases, log);
  // No paywall, and no /supported sync by the SDK: FacilitatorReadiness does it, once.
  const sdkMiddleware = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false);
  const readiness = new FacilitatorReadiness(
    httpServer,
    options.supportedRetryMs ?? 1000,
    (error) =>
      log(`x402 facilitator not usable yet (${options.facilitatorUrl}): ${describeError(error)}`),
  );
  const challenges = new PreparedChallenges();
  const v1OutputSchema = snapshotOutputSchemaV1();

  const unavailable = (why: string): Answer =>
    errorAnswer(UNAVAILABLE_STATUS, `Payment infrastructure unavailable (${why}); retry later.`, {
      "retry-after": retryAfter,
    });

  function overBudget(retryAfterMs: number): Answer {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    const limit = options.payerBudget ? "" : ` (at most ${perMinute} a minute)`;
    return errorAnswer(
      OVER_BUDGET_STATUS,
      `Too many unpaid snapshots for this payer${limit}: refused targets and closed ` +
        `connections count; retry in ${seconds} s. Nothing was charged.`,
      { "retry-after": String(seconds) },
    );
  }

  /**
   * The SDK's verify → handler → settle around `next`, with the payer's unpaid budget taken
   * before the snapshot runs and given back once it is paid for; then the SDK's answer in ours.
   */
  async function verifyRunSettle(
    c: Context,
    next: Next,
    payer: string | undefined,
  ): Promise<Response | void> {
    const started = performance.now();
    let verified: number | undefined;
    let handled = started;
    let reserved = false;
    let returned: Response | void;
    try {
      returned = await sdkMiddleware(c, async () => {
        // Here the proof is verified and claimed; nothing has been fetched yet.
        verified = performance.now();
        if (payer === undefined) throw new Error("verified payment without a readable proof");
        const reservation = await budget.reserve(payer).catch((error: unknown) => {
          log(`payer budget store failed: ${describeError(error)}`);
          return undefined;
        });
        if (!reservation?.ok) {
          c.res = toResponse(
            reservation
              ? overBudget(reservation.retryAfterMs)
              : unavailable("payer budget unavailable"),
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
        }
      });
    } catch (error) {
      log(`x402 payment processing failed: ${describeError(error)}`);
      return toResponse(PAYMENT_FAILED);
    }
    const answer = returned ?? c.res;
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
      c.res = toResponse(unavailable("facilitator unreachable or failing"));
      return c.res;
    }
    // The challenge (no proof, or one the facilitator refused): its body says why.
    if (answer.status === 402 && verified === undefined) {
      const v2Proof = Boolean(c.req.header("payment-signature"));
      const challenge = await challengeAnswer(
        answer,
        (reason) => explainRejection(reason, maxReleases),
        v2Proof ? undefined : v1OutputSchema,
      );
      challenges.keep(c.req.url, (name) => c.req.header(name), challenge);
      return toResponse(challenge);
    }
    return returned;
  }

  const middleware: MiddlewareHandler = async (c, next) => {
    if (!(await readiness.check())) return toResponse(unavailable("facilitator unreachable"));
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
      return toResponse(await unreadableProofAnswer(httpServer, c, proof.why, log));
    }
    const answered = await verifyRunSettle(c, next, proof?.payer);
    if (header(V1_PROOF_HEADER) && !header("payment-signature")) {
      renameReceiptForV1(answered ?? c.res);
    }
    return answered;
  };

  return {
    middleware,
    unpaidChallenge: (resourceUrl, header) => challenges.get(resourceUrl, header),
    warmUp: () => readiness.warmUp(),
  };
}

/** The SDK's resource server for the paid route, on our facilitator client, replays guarded. */
function createHttpResourceServer(
  options: PaymentGateOptions,
  maxReleases: number,
  log: (line: string) => void,
): x402HTTPResourceServer {
  const facilitator = new ResilientFacilitatorClient({
    url: options.facilitatorUrl,
    timeoutMs: options.facilitatorTimeoutMs ?? DEFAULT_FACILITATOR_TIMEOUT_MS,
    settleTimeoutMs: options.facilitatorSettleTimeoutMs ?? DEFAULT_SETTLE_TIMEOUT_MS,
    ...(options.facilitatorHeaders && { headers: options.facilitatorHeaders }),
    ...(options.facilitatorAuth && { createAuthHeaders: options.facilitatorAuth }),
  });
  const resourceServer = new x402ResourceServer(facilitator);
  for (const network of options.networks) resourceServer.register(network, new ExactEvmScheme());
  resourceServer.registerExtension(bazaarResourceServerExtension);
  const store = options.replayStore ?? new MemoryReplayStore();
  guardReplays(resourceServer, store, maxReleases, NOT_RUN_STATUSES, log);
  // The SDK's HTTP server, with x402 v1 proofs read too (v1.ts).
  return new DualGenerationHttpServer(
    resourceServer,
    { [PAID_ROUTE]: paidRouteConfig(options) },
    options,
  );
}
