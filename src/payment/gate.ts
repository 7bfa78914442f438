import { performance } from "node:perf_hooks";
import type { Context, MiddlewareHandler } from "hono";
import { HonoAdapter, paymentMiddlewareFromHTTPServer } from "@x402/hono";
import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import type { RouteConfig } from "@x402/core/server";
import { decodePaymentRequiredHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import type { Network } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { getDefaultAsset } from "@x402/evm";
import { bazaarResourceServerExtension } from "@x402/extensions/bazaar";
import { parseUnits } from "viem";
import { NETWORK_IDS } from "../config.js";
import type { PaymentConfig } from "../config.js";
import { createCdpAuthHeaders } from "./cdp-auth.js";
import { snapshotDiscoveryExtension } from "./discovery.js";
import {
  DEFAULT_FACILITATOR_TIMEOUT_MS,
  ResilientFacilitatorClient,
} from "./facilitator-client.js";
import type { FacilitatorClientOptions } from "./facilitator-client.js";
import { memoryPayerBudget } from "./payer-budget.js";
import type { PayerBudget } from "./payer-budget.js";
import { readPaymentProof } from "./proof.js";
import { MemoryReplayStore, paymentProofKey, paymentProofTtlMs } from "./replay-guard.js";
import type { ReplayStore } from "./replay-guard.js";

/** USDC per network (SPEC §6). Devnet puts its token at the Base Sepolia address. */
export const USDC_ADDRESSES: Readonly<Record<string, `0x${string}`>> = {
  [NETWORK_IDS.base]: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  [NETWORK_IDS["base-sepolia"]]: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
};
const USDC_DECIMALS = 6;

const CHALLENGE_CACHE_SIZE = 64;
const DEFAULT_SETTLE_TIMEOUT_MS = 130_000;
const DEFAULT_PROOF_RELEASES = 3;
const DEFAULT_REFUSED_PER_PAYER_PER_MINUTE = 60;
/** Answer of a payer over its budget. The snapshot handler never answers it. */
const OVER_BUDGET_STATUS = 429;
/** Internal answer when the client left before settlement; nobody receives it. */
const CLIENT_GONE_STATUS = 499;

/** The one priced route (SPEC §1). */
export const PAID_ROUTE = "POST /v1/snapshot";

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

export interface PaymentGateOptions {
  payTo: `0x${string}`;
  /** CAIP-2 ids offered in the challenge, one `accepts` entry each. */
  networks: readonly Network[];
  /** Decimal USDC, e.g. "0.05" → amount "50000". */
  priceUsdc: string;
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
  /** Public URL of the resource in the challenge; default the request URL. */
  resourceUrl?: string;
  /** Called once per paid request that reached the handler (benchmarks, metrics). */
  onPaidRequest?: (timings: PaidRequestTimings) => void;
  log?: (line: string) => void;
}

export interface PaymentGate {
  /** Hono middleware for POST /v1/snapshot, mounted after input validation. */
  middleware: MiddlewareHandler;
  /**
   * The 402 challenge already prepared for this resource URL (the request URL, as the Hono
   * route sees it), when the request carries no payment and would get exactly that answer;
   * otherwise undefined and the request must go through `middleware`. For serving the unpaid
   * challenge without the framework (src/http/challenge-fast-path.ts).
   */
  unpaidChallenge(
    resourceUrl: string,
    header: (name: string) => string | undefined,
  ): JsonAnswer | undefined;
  /** Fetches the facilitator's /supported once (cached); false if it is unreachable now. */
  warmUp(): Promise<boolean>;
  readonly ready: boolean;
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

function routeConfig(options: PaymentGateOptions): RouteConfig {
  const amount = parseUnits(options.priceUsdc, USDC_DECIMALS).toString();
  return {
    accepts: options.networks.map((network) => {
      const asset = USDC_ADDRESSES[network];
      if (!asset) throw new Error(`no USDC address known for network ${network}`);
      // EIP-712 domain (name, version) of USDC on that network, which the payer signs over.
      const { name, version } = getDefaultAsset(network);
      return {
        scheme: "exact",
        network,
        payTo: options.payTo,
        price: { amount, asset, extra: { name, version } },
        maxTimeoutSeconds: 300,
      };
    }),
    ...(options.resourceUrl !== undefined && { resource: options.resourceUrl }),
    description: "Live security-hygiene snapshot of one public URL",
    mimeType: "application/json",
    serviceName: "secsnap",
    extensions: snapshotDiscoveryExtension(),
    unpaidResponseBody: () => ({
      contentType: "application/json",
      body: { error: "Payment required: see the PAYMENT-REQUIRED header (x402 v2)." },
    }),
    settlementFailedResponseBody: (_ctx, failure) => ({
      contentType: "application/json",
      body: { error: `Payment settlement failed: ${failure.errorReason}` },
    }),
  };
}

/**
 * x402 payment for POST /v1/snapshot: @x402/hono's own middleware (over the SDK's
 * x402HTTPResourceServer) does the protocol and the order — verify → handler → settle only a
 * successful answer → PAYMENT-RESPONSE; a handler answer of 400 or more is never settled. What
 * SPEC §6 asks beyond it lives in SDK hooks and in a thin wrapper:
 *  - replay guard: claim the proof atomically after verification (onAfterVerify), release it when
 *    nothing is charged (onVerifiedPaymentCanceled, onSettleFailure), mark it spent on settlement;
 *  - the facilitator down, slow or failing is 503 + Retry-After (the SDK answers 502), and a dead
 *    facilitator costs no /supported round trip per request (the SDK would retry on each);
 *  - the unpaid challenge is built once per resource URL, not per request (bench/payment.ts);
 *  - a rejected payment's 402 says why in its JSON body (the SDK leaves it `{}`).
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const log = options.log ?? ((line: string) => console.error(line));
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  const supportedRetryMs = options.supportedRetryMs ?? 1000;
  const store = options.replayStore ?? new MemoryReplayStore();
  const maxReleases = options.proofReleases ?? DEFAULT_PROOF_RELEASES;
  const budget =
    options.payerBudget ??
    memoryPayerBudget(options.refusedPerPayerPerMinute ?? DEFAULT_REFUSED_PER_PAYER_PER_MINUTE);
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
  guardReplays(resourceServer, store, maxReleases, log);

  const httpServer = new x402HTTPResourceServer(resourceServer, {
    [PAID_ROUTE]: routeConfig(options),
  });
  // No paywall, and no /supported sync by the SDK: warmUp() below does it, once.
  const sdkMiddleware = paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false);

  // /supported is fetched once and cached by the SDK. A failure is remembered for
  // supportedRetryMs so a dead facilitator costs no round trip per request, and retried after.
  let ready = false;
  let pending: Promise<boolean> | undefined;
  let lastFailureAt = -Infinity;
  function warmUp(): Promise<boolean> {
    if (ready) return Promise.resolve(true);
    pending ??= httpServer.initialize().then(
      () => {
        ready = true;
        pending = undefined;
        return true;
      },
      (error: unknown) => {
        lastFailureAt = performance.now();
        pending = undefined;
        log(`x402 facilitator not usable yet (${options.facilitatorUrl}): ${describe(error)}`);
        return false;
      },
    );
    return pending;
  }

  function unavailable(c: Context, why: string): Response {
    c.header("Retry-After", retryAfter);
    c.header("Cache-Control", "no-store");
    return c.json({ error: `Payment infrastructure unavailable (${why}); retry later.` }, 503);
  }

  const explainReason = (reason: string): string | undefined =>
    reason === PROOF_EXHAUSTED ? proofExhaustedMessage(maxReleases) : undefined;

  function overBudget(c: Context, retryAfterMs: number): Response {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    const limit = options.payerBudget
      ? ""
      : ` (at most ${options.refusedPerPayerPerMinute ?? DEFAULT_REFUSED_PER_PAYER_PER_MINUTE} a minute)`;
    c.header("Retry-After", String(seconds));
    c.header("Cache-Control", "no-store");
    return c.json(
      {
        error:
          `Too many unpaid snapshots for this payer${limit}: refused targets and closed ` +
          `connections count; retry in ${seconds} s. Nothing was charged.`,
      },
      OVER_BUDGET_STATUS,
    );
  }

  /** The route's 402 challenge, its `error` saying why the proof could not be read. */
  async function unreadableProof(c: Context, why: string): Promise<Response> {
    const message = `Unreadable payment proof: ${why}.`;
    const result = await httpServer
      .processHTTPRequest({
        adapter: new ProoflessAdapter(c),
        path: c.req.path,
        method: c.req.method,
      })
      .catch((error: unknown) => {
        log(`x402 challenge for an unreadable proof failed: ${describe(error)}`);
        return undefined;
      });
    const sdkHeaders = result?.type === "payment-error" ? result.response.headers : {};
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(sdkHeaders)) headers[name.toLowerCase()] = value;
    const required = headers["payment-required"];
    if (!required) {
      log(`no challenge to refuse an unreadable proof with (${result?.type ?? "error"})`);
      c.header("Cache-Control", "no-store");
      return c.json({ error: message }, 402);
    }
    headers["content-type"] = "application/json";
    headers["payment-required"] = encodePaymentRequiredHeader({
      ...decodePaymentRequiredHeader(required),
      error: message,
    });
    return sendJson({
      status: 402,
      headers,
      body: JSON.stringify({ error: message }),
    });
  }

  // The unpaid challenge depends only on the request URL (the resource) once /supported is
  // cached, so the SDK builds and encodes it once per URL; later unpaid requests reuse it.
  // Only priced routes fill the cache, so a hit needs no route match.
  const challengeCache = new Map<string, JsonAnswer>();
  /** Unpaid, and not a browser (the SDK may answer those with a paywall page). */
  const isCacheable = (header: (name: string) => string | undefined): boolean =>
    !header("payment-signature") &&
    !header("x-payment") &&
    !header("accept")?.includes("text/html");

  const middleware: MiddlewareHandler = async (c, next) => {
    if (!ready) {
      const recentlyFailed = performance.now() - lastFailureAt < supportedRetryMs;
      if (recentlyFailed || !(await warmUp())) return unavailable(c, "facilitator unreachable");
    }
    const cacheable = isCacheable((name) => c.req.header(name));
    const cached = cacheable ? challengeCache.get(c.req.url) : undefined;
    if (cached) return sendJson(cached);
    const adapter = new HonoAdapter(c);
    if (!httpServer.requiresPayment({ adapter, path: c.req.path, method: c.req.method })) {
      // Fail closed: the SDK would serve a route it does not price for free.
      log(`payment gate mounted on unpriced route ${c.req.method} ${c.req.path}`);
      return c.json({ error: "Payment processing failed." }, 500);
    }

    // A proof the SDK cannot read, or that would make recursive code (the facilitator client's
    // JSON encoding) overflow, is refused here, in bounded work: a 402 saying why, never a 503.
    const proofHeader = c.req.header("payment-signature");
    let payer: string | undefined;
    if (proofHeader) {
      const proof = readPaymentProof(proofHeader);
      if (!proof.ok) return unreadableProof(c, proof.why);
      payer = proof.payer;
    }

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
          log(`payer budget store failed: ${describe(error)}`);
          return undefined;
        });
        if (!reservation) {
          c.res = unavailable(c, "payer budget unavailable");
          return;
        }
        if (!reservation.ok) {
          c.res = overBudget(c, reservation.retryAfterMs);
          return;
        }
        reserved = true;
        await next();
        handled = performance.now();
        // A client that hung up gets nothing, so it must pay nothing: an answer of 400 or more
        // makes the SDK skip settlement and release the proof.
        if (c.res.status < 400 && c.req.raw.signal.aborted) {
          c.res = new Response(JSON.stringify({ error: "client closed the connection" }), {
            status: CLIENT_GONE_STATUS,
            headers: { "content-type": "application/json" },
          });
        }
      });
    } catch (error) {
      log(`x402 payment processing failed: ${describe(error)}`);
      c.header("Cache-Control", "no-store");
      return c.json({ error: "Payment processing failed." }, 500);
    }
    const answer = returned ?? c.res;
    // Paid for: the snapshot no longer counts against the payer's unpaid budget.
    if (reserved && payer !== undefined && answer.status === 200) {
      await budget.refund(payer).catch((error: unknown) => {
        log(`payer budget store failed: ${describe(error)}`);
      });
    }
    if (verified !== undefined) {
      const finished = performance.now();
      options.onPaidRequest?.({
        verifyMs: verified - started,
        handlerMs: handled - verified,
        settleMs: finished - handled,
        totalMs: finished - started,
        status: answer.status === 502 ? 503 : answer.status,
      });
    }
    // The SDK's answer to FacilitatorResponseError (our client's FacilitatorUnavailableError);
    // the snapshot handler itself never answers 502.
    if (answer.status === 502) {
      log(`x402 facilitator error: ${await answer.text().catch(() => "")}`);
      c.res = unavailable(c, "facilitator unreachable or failing");
      return c.res;
    }
    if (answer.status === 402 && verified === undefined) {
      const json = await toJsonAnswer(answer, explainReason);
      if (cacheable) {
        // Bounded: the URL carries the client's Host header, so its variety is the client's choice.
        if (challengeCache.size >= CHALLENGE_CACHE_SIZE) challengeCache.clear();
        challengeCache.set(c.req.url, json);
      }
      return sendJson(json);
    }
    if (returned) return returned;
  };

  return {
    middleware,
    unpaidChallenge: (resourceUrl, header) =>
      isCacheable(header) ? challengeCache.get(resourceUrl) : undefined,
    warmUp,
    get ready() {
      return ready;
    },
  };
}

/**
 * SPEC §6 "a payment proof is served at most once": the proof is claimed atomically right after
 * the facilitator verified it, so of several copies arriving at once only one reaches the
 * handler. Released when nothing was charged (handler answered 400, settlement failed) so the
 * client may retry with the same proof; marked spent once settled. A release after a snapshot ran
 * unpaid (refused, or the client hung up) is counted, and a proof released `maxReleases` times is
 * refused: one signature buys a bounded number of refused snapshots.
 */
function guardReplays(
  server: x402ResourceServer,
  store: ReplayStore,
  maxReleases: number,
  log: (line: string) => void,
) {
  // Claims this process made, by payload object: only those are released or marked spent.
  const claimed = new WeakMap<object, string>();
  server.onAfterVerify(async ({ paymentPayload, result }) => {
    if (!result.isValid) return;
    const key = paymentProofKey(paymentPayload);
    try {
      if (await store.claim(key, paymentProofTtlMs(paymentPayload), maxReleases)) {
        claimed.set(paymentPayload, key);
        return;
      }
      const releases = await store.releases(key);
      if (releases >= maxReleases) {
        return {
          abort: true,
          reason: PROOF_EXHAUSTED,
          message: proofExhaustedMessage(releases),
        };
      }
      return {
        abort: true,
        reason: "payment_already_used",
        message: "This payment proof was already used or is in use by another request.",
      };
    } catch (error) {
      log(`replay store failed: ${String(error)}`);
      return { abort: true, reason: "replay_check_failed", message: "Try again." };
    }
  });
  const release = async (paymentPayload: object, counted: boolean): Promise<void> => {
    const key = claimed.get(paymentPayload);
    if (key === undefined) return;
    claimed.delete(paymentPayload);
    await store.release(key, counted);
  };
  // The snapshot ran unless the gate itself answered before it (over budget, budget store down).
  server.onVerifiedPaymentCanceled(({ paymentPayload, responseStatus }) =>
    release(paymentPayload, responseStatus === undefined || !NOT_RUN_STATUSES.has(responseStatus)),
  );
  // Not the payer's doing (facilitator down) or not a refusal of the target: not counted.
  server.onSettleFailure(({ paymentPayload }) => release(paymentPayload, false));
  server.onAfterSettle(async ({ paymentPayload }) => {
    const key = claimed.get(paymentPayload);
    if (key === undefined) return;
    claimed.delete(paymentPayload);
    // Settled: the client has paid, so the report goes out whatever the store says. If this
    // fails the claim still stands until the authorization expires, and the chain refuses
    // the nonce a second time anyway.
    await store.markSpent(key).catch((error: unknown) => {
      log(`replay store could not mark a settled proof spent: ${String(error)}`);
    });
  });
}

/** The verify reason (the challenge's `error`) of a proof released too often. */
const PROOF_EXHAUSTED = "payment_proof_exhausted";

function proofExhaustedMessage(releases: number): string {
  return `this payment proof was already used for ${releases} refused snapshots; sign a new one`;
}

/** Statuses the gate answers in place of the snapshot, which then never ran. */
const NOT_RUN_STATUSES: ReadonlySet<number> = new Set([OVER_BUDGET_STATUS, 503]);

/** The request as the SDK would see it without a proof: its answer is the plain challenge. */
class ProoflessAdapter extends HonoAdapter {
  override getHeader(name: string): string | undefined {
    const lower = name.toLowerCase();
    return lower === "payment-signature" || lower === "x-payment"
      ? undefined
      : super.getHeader(name);
  }

  override getAcceptHeader(): string {
    return "";
  }
}

/** An SDK answer serialized once, so the cached challenge is not re-encoded per request. */
export interface JsonAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** The SDK's 402 as a plain record (header names lower-case), its JSON body saying why. */
async function toJsonAnswer(
  response: Response,
  explain: (reason: string) => string | undefined,
): Promise<JsonAnswer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const body = withErrorMessage(await response.text(), headers["payment-required"], explain);
  return { status: response.status, headers, body };
}

/**
 * A Response with a plain header record, not c.header()/c.json(): Hono copies those headers into
 * an undici Headers object whose per-character check of the PAYMENT-REQUIRED value (then ~4.7 KB)
 * was the largest single cost of the 402 path (perf); @hono/node-server hands a plain record
 * straight to writeHead. The record is copied because a later `c.res` access may modify it.
 */
function sendJson(answer: JsonAnswer): Response {
  return new Response(answer.body, { status: answer.status, headers: { ...answer.headers } });
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

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}
