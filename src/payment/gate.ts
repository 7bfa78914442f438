import { performance } from "node:perf_hooks";
import type { Context, MiddlewareHandler } from "hono";
import { HonoAdapter } from "@x402/hono";
import {
  getFacilitatorResponseError,
  withPrivateCacheControl,
  x402HTTPResourceServer,
  x402ResourceServer,
} from "@x402/core/server";
import type { HTTPRequestContext, HTTPResponseInstructions, RouteConfig } from "@x402/core/server";
import { decodePaymentRequiredHeader } from "@x402/core/http";
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
  /** Public URL of the resource in the challenge; default the request URL. */
  resourceUrl?: string;
  /** Called once per paid request that reached the handler (benchmarks, metrics). */
  onPaidRequest?: (timings: PaidRequestTimings) => void;
  log?: (line: string) => void;
}

export interface PaymentGate {
  /** Hono middleware for POST /v1/snapshot, mounted after input validation. */
  middleware: MiddlewareHandler;
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
 * x402 payment for POST /v1/snapshot, composed from the SDK's x402HTTPResourceServer rather than
 * @x402/hono's paymentMiddleware, because that one (a) answers 502 for facilitator trouble and
 * 402 when the facilitator cannot be reached at all, where SPEC §6 wants 503 + Retry-After,
 * (b) has no replay guard between verification and the handler, and (c) re-fetches /supported
 * on every request while the facilitator is down. Encoding, matching and verification are the
 * SDK's; this file only orders the work:
 * verify (+ claim the proof) → handler → settle only a 200 → PAYMENT-RESPONSE.
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const log = options.log ?? ((line: string) => console.error(line));
  const retryAfter = String(options.retryAfterSeconds ?? 5);
  const supportedRetryMs = options.supportedRetryMs ?? 1000;
  const store = options.replayStore ?? new MemoryReplayStore();
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

  // Proofs this process has claimed, by payload object: the afterVerify hook claims, the
  // middleware releases or marks spent. A verified payment without a claim is never served.
  const claimed = new WeakMap<object, string>();
  resourceServer.onAfterVerify(async ({ paymentPayload, result }) => {
    if (!result.isValid) return;
    const key = paymentProofKey(paymentPayload);
    try {
      if (await store.claim(key, paymentProofTtlMs(paymentPayload))) {
        claimed.set(paymentPayload, key);
        return;
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

  const challengeCache = new Map<string, JsonAnswer>();
  const httpServer = new x402HTTPResourceServer(resourceServer, {
    [PAID_ROUTE]: routeConfig(options),
  });

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

  function send(c: Context, response: HTTPResponseInstructions): Response {
    if (response.isHtml) {
      for (const [key, value] of Object.entries(response.headers)) c.header(key, value);
      return c.html(String(response.body ?? ""), response.status as 402);
    }
    return sendJson(toJsonAnswer(response));
  }

  const middleware: MiddlewareHandler = async (c, next) => {
    if (!ready) {
      const recentlyFailed = performance.now() - lastFailureAt < supportedRetryMs;
      if (recentlyFailed || !(await warmUp())) return unavailable(c, "facilitator unreachable");
    }
    const adapter = new HonoAdapter(c);
    const context: HTTPRequestContext = {
      adapter,
      path: c.req.path,
      method: c.req.method,
      paymentHeader: adapter.getHeader("payment-signature"),
    };

    // The unpaid challenge depends only on the request URL (the resource) once /supported is
    // cached, so the SDK builds and encodes it once per URL; later unpaid requests reuse it.
    const cacheable = !context.paymentHeader && !adapter.getAcceptHeader().includes("text/html");
    const cached = cacheable ? challengeCache.get(c.req.url) : undefined;
    if (cached) return sendJson(cached);

    const started = performance.now();
    let result;
    try {
      result = await httpServer.processHTTPRequest(context);
    } catch (error) {
      return failure(c, error);
    }
    if (result.type === "no-payment-required") {
      // Fail closed: the gate was mounted on a route it does not price; never serve it free.
      log(`payment gate mounted on unpriced route ${c.req.method} ${c.req.path}`);
      return c.json({ error: "Payment processing failed." }, 500);
    }
    if (result.type === "payment-error") {
      if (cacheable && result.response.status === 402 && !result.response.isHtml) {
        // Bounded: the URL carries the client's Host header, so its variety is the client's choice.
        if (challengeCache.size >= CHALLENGE_CACHE_SIZE) challengeCache.clear();
        const answer = toJsonAnswer(result.response);
        challengeCache.set(c.req.url, answer);
        return sendJson(answer);
      }
      return send(c, result.response);
    }

    const { paymentPayload, paymentRequirements, declaredExtensions } = result;
    const key = claimed.get(paymentPayload);
    if (key === undefined) return unavailable(c, "payment proof could not be reserved");
    const verified = performance.now();

    let served = false;
    try {
      await next();
      const handled = performance.now();
      if (c.res.status !== 200) {
        // 400 and anything else: nothing is charged; the same proof may be sent again.
        report(started, verified, handled, handled, c.res.status);
        return;
      }
      let settlement;
      try {
        settlement = await httpServer.processSettlement(
          paymentPayload,
          paymentRequirements,
          declaredExtensions,
          { request: context },
        );
      } catch (error) {
        c.res = failure(c, error);
        return;
      }
      const settled = performance.now();
      if (!settlement.success) {
        c.res = send(c, settlement.response);
        report(started, verified, handled, settled, 402);
        return;
      }
      // Settled: the client has paid, so the report goes out whatever the store says next.
      served = true;
      for (const [name, value] of Object.entries(settlement.headers))
        c.res.headers.set(name, value);
      c.res.headers.set(
        "Cache-Control",
        withPrivateCacheControl(c.res.headers.get("Cache-Control")),
      );
      report(started, verified, handled, settled, 200);
      // Still claimed if this fails (the claim expires with the authorization), and the chain
      // refuses the nonce a second time anyway.
      await store.markSpent(key).catch((error: unknown) => {
        log(`replay store could not mark a settled proof spent: ${String(error)}`);
      });
    } finally {
      if (!served) await store.release(key);
    }
  };

  function failure(c: Context, error: unknown): Response {
    if (getFacilitatorResponseError(error)) {
      log(`x402 facilitator error: ${describe(error)}`);
      return unavailable(c, "facilitator unreachable or failing");
    }
    log(`x402 payment processing failed: ${describe(error)}`);
    c.header("Cache-Control", "no-store");
    return c.json({ error: "Payment processing failed." }, 500);
  }

  function report(t0: number, t1: number, t2: number, t3: number, status: number): void {
    options.onPaidRequest?.({
      verifyMs: t1 - t0,
      handlerMs: t2 - t1,
      settleMs: t3 - t2,
      totalMs: t3 - t0,
      status,
    });
  }

  return {
    middleware,
    warmUp,
    get ready() {
      return ready;
    },
  };
}

/** An SDK answer serialized once, so the cached challenge is not re-encoded per request. */
interface JsonAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

function toJsonAnswer(response: HTTPResponseInstructions): JsonAnswer {
  return {
    status: response.status,
    headers: { "Content-Type": "application/json", ...response.headers },
    body: JSON.stringify(withErrorMessage(response)),
  };
}

/**
 * A Response with a plain header record, not c.header()/c.json(): Hono copies those headers into
 * an undici Headers object whose per-character check of the ~4.7 KB PAYMENT-REQUIRED value was
 * the largest single cost of the 402 path (perf); @hono/node-server hands a plain record
 * straight to writeHead. The record is copied because a later `c.res` access may modify it.
 */
function sendJson(answer: JsonAnswer): Response {
  return new Response(answer.body, { status: answer.status, headers: { ...answer.headers } });
}

/** The SDK leaves 402 bodies empty; give clients the reason from the challenge as well. */
function withErrorMessage(response: HTTPResponseInstructions): unknown {
  const body = response.body ?? {};
  const isEmpty = typeof body === "object" && body !== null && Object.keys(body).length === 0;
  const header = response.headers["PAYMENT-REQUIRED"];
  if (!isEmpty || !header) return body;
  try {
    const reason = decodePaymentRequiredHeader(header).error;
    return { error: reason ? `Payment rejected: ${reason}` : "Payment required." };
  } catch {
    return { error: "Payment required." };
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}
