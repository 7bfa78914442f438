import type { JWK } from "jose";
import { ServerResponse } from "node:http";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { etag } from "hono/etag";
import { HTTPException } from "hono/http-exception";
import {
  NOT_FOUND,
  SNAPSHOT_NOT_FOUND,
  carriesProof,
  didWebOf,
  jsonAnswer,
  methodNotAllowed,
  requestRefused,
  serviceUrlOf,
  toResponse,
  type Answer,
  type McpPayment,
  type FormPayment,
  type PaidRoute,
  type ServiceSigner,
  type SnapshotAgainRoute,
} from "../payment/index.js";
import { demoSnapshot, type SnapshotEngine, type UrlPolicy } from "../snapshot/index.js";
import { SERVICE_VERSION } from "../version.js";
import { DEFAULT_PRICE_USDC, NETWORK_IDS, type OperatorContact } from "../config.js";
import { PATHS, ROUTE_TABLE, routerPath } from "../routes.js";
import { SnapshotAdmission } from "./guards/admission.js";
import { readBodyText } from "./request-body.js";
import { TrustedProxies, clientAddress } from "./guards/client-ip.js";
import { CORS_EXPOSED, CORS_HEADERS, CORS_PREFLIGHT, ownOrigin } from "./guards/cors.js";
import { INTERNAL_ERROR } from "./errors.js";
import { llmsTxt, wellKnownX402 } from "./documents/llms-and-well-known.js";
import { didDocument, jwksDocument } from "./documents/signing-keys.js";
import { hostGuard } from "./guards/host-rule.js";
import { mcpHostGuard } from "./guards/mcp-host.js";
import { addMcpRoute, type McpCallBudget } from "./mcp/route.js";
import { FAVICON_CACHE_CONTROL, FAVICON_ICO, FAVICON_SVG } from "./page/favicon.js";
import {
  STATIC_CACHE_CONTROL,
  createOpenApiDocument,
  type ServiceFacts,
} from "./documents/openapi.js";
import { HealthSchema, ReadinessSchema } from "./documents/openapi-components.js";
import { ClientRateLimit } from "./guards/rate-limit.js";
import { cachedCheck, readinessAnswer, type ReadinessCheck } from "./operations/readiness.js";
import { DemoSnapshotResultSchema, SnapshotErrorBodySchema } from "./documents/report-schemas.js";
import { PAGE_CACHE_CONTROL, PAGE_SECURITY_HEADERS, renderPage } from "./page/home.js";
import { addReferenceRoutes } from "./page/api-reference.js";
import { addScanRoutes } from "./page/scan-form.js";
import { MAX_BODY_BYTES, checkSnapshotRequest, snapshotErrorAnswer } from "./snapshot-input.js";
import { shapeChecker, snapshotWork, type ShapeCheck, type SnapshotWork } from "./snapshot-work.js";

type Logger = (message: string, error?: unknown) => void;

export interface AppDeps {
  engine: SnapshotEngine;
  urlPolicy: UrlPolicy;
  /**
   * x402 payment for POST /v1/snapshot (the payment gate's `route`), given the checked input.
   * Without it the live snapshot is served unpaid.
   */
  payment?: PaidRoute;
  /**
   * x402 over MCP for POST /mcp (the payment gate's `mcp`). POST /mcp is served when it is given,
   * or when there is no `paymentMiddleware` (then `snapshot` is unpaid there too).
   */
  mcpPayment?: McpPayment;
  /** The page's devnet form as a door of the paid call (the payment gate's `form`). */
  formPayment?: FormPayment;
  /**
   * GET /v1/snapshots/{snapshot_id} (the payment gate's `snapshots`); none: every id is unknown.
   */
  snapshots?: SnapshotAgainRoute;
  /** The key signing the paid reports (the payment gate's `signer`); none: no key is listed. */
  signer?: Promise<ServiceSigner>;
  /**
   * What GET /.well-known/jwks.json and did.json list (the payment gate's `signingKeys`: the
   * signer's key and those of the reports still kept); default the signer's key alone.
   */
  signingKeys?: () => Promise<JWK[]>;
  /** The unpaid `tools/call snapshot` on POST /mcp answered without the SDK; default on (mcp/route.ts). */
  mcpUnpaidFastPath?: boolean;
  /** The configured price the API description states (X402_PRICE_USDC); default its default. */
  priceUsdc?: string;
  /** The service's public base URL (PUBLIC_URL), the API description's server; default none. */
  publicUrl?: string;
  /** How the operator is reached (OPERATOR_CONTACT), the API description's contact; default none. */
  operatorContact?: OperatorContact;
  /** The networks the challenge offers, as CAIP-2 ids, for the page; default the configuration's default. */
  networks?: readonly string[];
  /**
   * Devnet mode, local mode included (docs/contract.md §7.7): the page says the networks are the
   * embedded devnet; every route applies the Host rule and CORS answers only the service's own
   * origins (docs/security.md, "Devnet and local mode").
   */
  devnet?: boolean;
  /**
   * Devnet mode: the funded devnet account (a public anvil key) the page names, and its scan form
   * pays from on the server's side (POST /demo/pay-and-scan, served only with it).
   */
  devnetPayer?: { index: number; address: `0x${string}`; privateKey: `0x${string}` };
  /**
   * Devnet mode: failing scans the page's form pays for per client and minute (formScansPerClient
   * of the payer budget); default that of the budget's default.
   */
  failingFormScansPerClient?: number;
  /** Who is paid (X402_PAY_TO, or the devnet's payee), for the 402's example in /openapi.json. */
  payTo?: `0x${string}`;
  /** Where bugs (response schema drift, unexpected exceptions) are reported; default console.error. */
  log?: Logger;
  /** Snapshot requests in flight and draining (back-pressure); default unlimited, never draining. */
  admission?: SnapshotAdmission;
  /** What GET /ready checks besides draining (the facilitator, a shared store); default none. */
  readinessChecks?: readonly ReadinessCheck[];
  /**
   * Whether the payment record store accepts writes now (PaymentRecordStore.writable()): /ready
   * is 503 naming `store` while it does not. Asked at most once per STORE_CHECK_TTL_MS.
   */
  storeWritable?: () => Promise<boolean>;
  /** Per-client budget of free answers (RATE_LIMIT_PER_MINUTE); default none. */
  rateLimit?: ClientRateLimit;
  /** CIDRs of the proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES); default none. */
  trustedProxies?: readonly string[];
}

/** The methods each known path answers; everything else on these paths is 405 with Allow. */
const ALLOWED_METHODS = {
  [PATHS.snapshot]: "POST, OPTIONS",
  [PATHS.snapshotAgain]: "GET, HEAD, OPTIONS",
  [PATHS.mcp]: "POST, OPTIONS",
  [PATHS.demo]: "GET, HEAD, OPTIONS",
  [PATHS.health]: "GET, HEAD, OPTIONS",
  [PATHS.ready]: "GET, HEAD, OPTIONS",
  [PATHS.openApi]: "GET, HEAD, OPTIONS",
  [PATHS.wellKnownX402]: "GET, HEAD, OPTIONS",
  [PATHS.jwks]: "GET, HEAD, OPTIONS",
  [PATHS.didWeb]: "GET, HEAD, OPTIONS",
  [PATHS.llmsTxt]: "GET, HEAD, OPTIONS",
  [PATHS.faviconIco]: "GET, HEAD, OPTIONS",
  [PATHS.faviconSvg]: "GET, HEAD, OPTIONS",
  [PATHS.page]: "GET, HEAD, OPTIONS",
  [PATHS.reference]: "GET, HEAD, OPTIONS",
  [PATHS.challenge]: "POST",
} as const;

/** The route patterns the app answers (metrics and logs label requests by these, others "other"). */
export const ROUTES: readonly string[] = ROUTE_TABLE.map((route) => route.path);

/** The HTTP API: CORS, the paid snapshot route, the free routes, then 405/404/500. */
export function createApp(deps: AppDeps): Hono {
  const log: Logger = deps.log ?? ((message, error) => console.error(message, error ?? ""));
  const checkShape = shapeChecker(log);
  const app = new Hono();
  const admission = deps.admission ?? new SnapshotAdmission();
  const speaksMcp = deps.mcpPayment !== undefined || !deps.payment;
  const devnet = deps.devnet === true;
  if (devnet) app.use("*", hostGuard(deps.publicUrl, speaksMcp ? PATHS.mcp : undefined));
  app.use("*", devnet ? ownOriginCors(deps.publicUrl) : corsMiddleware());
  const { rateLimit } = deps;
  const trusted = new TrustedProxies(deps.trustedProxies ?? []);
  if (rateLimit) app.use("*", rateLimitMiddleware(rateLimit, trusted, speaksMcp));
  const work = snapshotWork(deps.engine, checkShape);
  addSnapshotRoute(app, deps, admission, work, checkShape);
  if (speaksMcp) {
    app.use(PATHS.mcp, mcpHostGuard(deps.publicUrl));
    addMcpRoute(app, {
      work,
      urlPolicy: deps.urlPolicy,
      ...(deps.mcpPayment && { payment: deps.mcpPayment }),
      ...(deps.mcpUnpaidFastPath !== undefined && { unpaidFastPath: deps.mcpUnpaidFastPath }),
      ...(rateLimit && {
        budgetOf: (c: Context) => mcpCallBudget(rateLimit, clientOf(c, trusted)),
      }),
      admission,
      log,
    });
  }
  addFreeRoutes(app, deps, admission, checkShape);
  addPageRoutes(app, deps, trusted, { work, admission });
  addAgentRoutes(app, deps);
  addFallbacks(app, log, deps.devnet === true && deps.devnetPayer !== undefined);
  return app;
}

/** @hono/node-server hands the Node response to the app as `env.outgoing`. */
function nodeResponse(c: Context): ServerResponse | undefined {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  return outgoing instanceof ServerResponse ? outgoing : undefined;
}

/**
 * The per-client budget (docs/operations.md, "Rate limits"), before any route's work; the health
 * checks pass untouched, and a paid request is held only to its client's budget of refused proofs.
 */
function rateLimitMiddleware(
  limit: ClientRateLimit,
  trusted: TrustedProxies,
  mcpCounts: boolean,
): MiddlewareHandler {
  return async (c, next) => {
    const header = (name: string) => c.req.header(name);
    if (ClientRateLimit.exempt(c.req.path)) return next();
    // POST /mcp counts itself once it has read what the message is (mcpCallBudget).
    if (mcpCounts && c.req.path === PATHS.mcp && c.req.method === "POST") return next();
    const client = clientOf(c, trusted);
    // A proof elsewhere than the paid route buys nothing, so it is a free answer like any other.
    if (c.req.path === PATHS.snapshot && c.req.method === "POST" && carriesProof(header)) {
      const spent = await limit.refusedProofsSpent(client);
      if (spent) return toResponse(spent);
      await next();
      if (c.res.status === 402) limit.countRefusedProof(client);
      return;
    }
    const refused = await limit.take(client);
    if (refused) return toResponse(refused);
    await next();
  };
}

/** The client a request is counted against: its peer, or what trusted proxies say it forwarded. */
function clientOf(c: Context, trusted: TrustedProxies): string {
  const peer = nodeResponse(c)?.req.socket.remoteAddress;
  return clientAddress(peer, c.req.header("x-forwarded-for"), trusted);
}

/** The rate middleware's rules for one POST /mcp: a proof is paid work, the rest free answers. */
function mcpCallBudget(limit: ClientRateLimit, client: string): McpCallBudget {
  const refusal = (answer: Answer | undefined) => answer && toResponse(answer);
  return {
    free: async () => refusal(await limit.take(client)),
    proofsSpent: async () => refusal(await limit.refusedProofsSpent(client)),
    countRefusedProof: () => limit.countRefusedProof(client),
  };
}

/** How long /ready keeps the store's answer to "writable?" (a load balancer polls often). */
const STORE_CHECK_TTL_MS = 1_000;

/** Made once: the CORS middleware runs on every request. */
const CORS_HEADER_ENTRIES = Object.entries(CORS_HEADERS);

/**
 * CORS (docs/contract.md §7.6). hono/cors answers the preflight, for the paths that exist. On
 * every other request the headers go on the Node response, which merges them into whatever the
 * handler answers: setting them through `c.res` or `c.header()` makes Hono rebuild or copy
 * every answer, which cost most of the throughput (docs/benchmarks.md "Payment"). Without
 * a Node response (`app.request()` in tests, other runtimes) `c.header()` after the handler does
 * the same job.
 */
function corsMiddleware(): MiddlewareHandler {
  const preflight = cors(CORS_PREFLIGHT);
  return async (c, next) => {
    // OPTIONS on a path that does not exist is 404 like any method.
    if (c.req.method === "OPTIONS") {
      return Object.hasOwn(ALLOWED_METHODS, c.req.path) ? preflight(c, next) : next();
    }
    const outgoing = nodeResponse(c);
    if (outgoing) {
      for (const [name, value] of CORS_HEADER_ENTRIES) outgoing.setHeader(name, value);
    }
    await next();
    // After the handler, so answers built as plain Responses get them too.
    if (!outgoing) for (const [name, value] of CORS_HEADER_ENTRIES) c.header(name, value);
  };
}

/**
 * CORS in devnet and local mode: the headers of corsMiddleware, with the request's `Origin` in
 * place of `*`, and only for the service's own origins (guards/cors.ts, ownOrigin); other origins
 * get none, and their preflight allows nothing.
 */
function ownOriginCors(publicUrl: string | undefined): MiddlewareHandler {
  const own = ownOrigin(publicUrl);
  const preflight = cors({
    ...CORS_PREFLIGHT,
    origin: (origin, c) => (own(origin, c.req.url) ? origin : null),
  });
  return async (c, next) => {
    if (c.req.method === "OPTIONS") {
      return Object.hasOwn(ALLOWED_METHODS, c.req.path) ? preflight(c, next) : next();
    }
    const origin = c.req.header("origin");
    await next();
    c.header("Vary", "Origin", { append: true });
    if (origin === undefined || !own(origin, c.req.url)) return;
    c.header("Access-Control-Allow-Origin", origin);
    c.header("Access-Control-Expose-Headers", CORS_EXPOSED);
  };
}

/**
 * POST /v1/snapshot: the input check (docs/contract.md §3, before payment: a request that cannot
 * work is never charged), then the paid call with the parsed target and the body's bytes.
 */
function addSnapshotRoute(
  app: Hono,
  deps: AppDeps,
  admission: SnapshotAdmission,
  work: SnapshotWork,
  checkShape: ShapeCheck,
): void {
  app.post(PATHS.snapshot, async (c) => {
    const read = await readBodyText(c, MAX_BODY_BYTES);
    const checked = checkSnapshotRequest(c.req.header("content-type"), read, deps.urlPolicy);
    if (!checked.ok) {
      checkShape(SnapshotErrorBodySchema, checked.error, "SnapshotError");
      return toResponse(snapshotErrorAnswer(checked.error));
    }
    const { target, body } = checked.input;
    // Paid, the ledger takes the slot before it verifies the proof and gives it back if the proof
    // fails: a call without a proof only gets the challenge, and a crowd costs no verifications.
    if (deps.payment) {
      const run = (signal: AbortSignal) => work(target, signal);
      return deps.payment.answer(c, { target, body, run, admission });
    }
    const refused = admission.enter();
    if (refused) return toResponse(refused);
    try {
      // A client that hangs up ends its snapshot: nobody waits for it.
      return toResponse(await work(target, c.req.raw.signal));
    } finally {
      admission.leave();
    }
  });
}

/** The demo, health and the API description; the first and last are fixed, so built once. */
function addFreeRoutes(
  app: Hono,
  deps: AppDeps,
  admission: SnapshotAdmission,
  checkShape: ShapeCheck,
): void {
  const demo = demoSnapshot();
  checkShape(DemoSnapshotResultSchema, demo, "DemoSnapshotResult");
  const cacheable = { "cache-control": STATIC_CACHE_CONTROL };
  const demoAnswer = jsonAnswer(200, demo, cacheable);
  const openApiAnswer = jsonAnswer(200, createOpenApiDocument(serviceFacts(deps)), cacheable);

  app.get(PATHS.demo, etag(), () => toResponse(demoAnswer));
  app.get(PATHS.health, () => {
    const body = { status: "ok", version: SERVICE_VERSION } as const;
    checkShape(HealthSchema, body, "Health");
    return toResponse(jsonAnswer(200, body));
  });
  app.get(PATHS.openApi, etag(), () => toResponse(openApiAnswer));
  const checks = [
    ...(deps.readinessChecks ?? []),
    ...(deps.storeWritable ? [cachedCheck("store", deps.storeWritable, STORE_CHECK_TTL_MS)] : []),
  ];
  app.get(PATHS.ready, async () => {
    const answer = await readinessAnswer(checks, admission);
    checkShape(ReadinessSchema, JSON.parse(answer.body), "Readiness");
    return toResponse(answer);
  });
}

/** What the documents for clients and agents say of the offer, from the app's dependencies. */
function serviceFacts(deps: AppDeps): ServiceFacts {
  return {
    ...(deps.priceUsdc !== undefined && { priceUsdc: deps.priceUsdc }),
    ...(deps.publicUrl !== undefined && { publicUrl: deps.publicUrl }),
    ...(deps.operatorContact !== undefined && { operatorContact: deps.operatorContact }),
    ...(deps.networks !== undefined && { networks: deps.networks }),
    ...(deps.devnet !== undefined && { devnet: deps.devnet }),
    ...(deps.payTo !== undefined && { payTo: deps.payTo }),
  };
}

/**
 * The service's public base URL as the 402 and the OpenAPI document choose it: PUBLIC_URL, else
 * the URL the request was made to.
 */
function baseUrlOf(deps: AppDeps, c: Context): string {
  return deps.publicUrl ?? new URL(c.req.url).origin;
}

/** Made once per base URL: without PUBLIC_URL it is the request's, so remember the last one. */
function perBaseUrl<T>(make: (baseUrl: string) => T): (baseUrl: string) => T {
  let last: { baseUrl: string; value: T } | undefined;
  return (baseUrl) => {
    if (last?.baseUrl !== baseUrl) last = { baseUrl, value: make(baseUrl) };
    return last.value;
  };
}

/**
 * Discovery for agents (docs/contract.md §7.9): the x402 resource list, llms.txt, and the icon.
 * Cacheable like the other fixed documents.
 */
function addAgentRoutes(app: Hono, deps: AppDeps): void {
  const facts = serviceFacts(deps);
  const cacheable = { "cache-control": STATIC_CACHE_CONTROL };
  const resourceList = perBaseUrl((baseUrl) =>
    jsonAnswer(200, wellKnownX402(baseUrl, facts), cacheable),
  );
  const guide = perBaseUrl((baseUrl) => llmsTxt(baseUrl, facts));
  app.get(PATHS.wellKnownX402, (c) => toResponse(resourceList(baseUrlOf(deps, c))));
  addKeyRoutes(app, deps, cacheable);
  app.get(PATHS.llmsTxt, etag(), (c) =>
    c.body(guide(baseUrlOf(deps, c)), 200, {
      "content-type": "text/plain; charset=utf-8",
      ...cacheable,
    }),
  );
  const icon = (body: string | Uint8Array, type: string) => () =>
    new Response(body, {
      headers: {
        "content-type": type,
        "cache-control": FAVICON_CACHE_CONTROL,
        "x-content-type-options": "nosniff",
      },
    });
  app.get(PATHS.faviconIco, icon(new Uint8Array(FAVICON_ICO), "image/x-icon"));
  app.get(PATHS.faviconSvg, icon(FAVICON_SVG, "image/svg+xml"));
}

/**
 * The keys that verify the paid reports' proofs (docs/proof.md): the JWK Set, and the did:web
 * document of PUBLIC_URL's host (without it, of a loopback host the request named; else 404).
 */
function addKeyRoutes(app: Hono, deps: AppDeps, cacheable: Record<string, string>): void {
  const keys = async () => {
    if (deps.signingKeys) return deps.signingKeys();
    return deps.signer ? (await deps.signer).publicJwks() : [];
  };
  app.get(routerPath(PATHS.snapshotAgain), async (c) => {
    if (!deps.snapshots) return toResponse(SNAPSHOT_NOT_FOUND);
    const answer = await deps.snapshots.answer({
      snapshotId: c.req.param("snapshot_id") ?? "",
      requestUrl: c.req.url,
      signIn: c.req.header("sign-in-with-x"),
    });
    return toResponse(answer);
  });
  app.get(PATHS.jwks, async () =>
    toResponse(jsonAnswer(200, jwksDocument(await keys()), cacheable)),
  );
  app.get(PATHS.didWeb, async (c) => {
    const service = serviceUrlOf(deps.publicUrl, c.req.url);
    const did = service && didWebOf(service);
    if (did === undefined) return toResponse(NOT_FOUND);
    return toResponse(jsonAnswer(200, didDocument(did, await keys()), cacheable));
  });
}

/**
 * GET / (the page), its scan form's routes (page/scan-form.ts) and GET /reference (the interactive
 * API reference); HTML, not JSON.
 */
function addPageRoutes(
  app: Hono,
  deps: AppDeps,
  trusted: TrustedProxies,
  { work, admission }: { work: SnapshotWork; admission: SnapshotAdmission },
): void {
  // The devnet's account is named, and pays, only in devnet mode.
  const devnetPayer = deps.devnet === true ? deps.devnetPayer : undefined;
  const facts = {
    priceUsdc: deps.priceUsdc ?? DEFAULT_PRICE_USDC,
    networks: deps.networks ?? Object.values(NETWORK_IDS),
    devnet: deps.devnet ?? false,
    report: demoSnapshot(),
    ...(devnetPayer && { devnetPayer }),
  };
  // Without PUBLIC_URL the samples name the URL the page was asked at, as the challenge does.
  let last: { serviceUrl: string; body: string } | undefined;
  app.get(PATHS.page, (c) => {
    const serviceUrl = deps.publicUrl ?? new URL(c.req.url).origin;
    if (last?.serviceUrl !== serviceUrl)
      last = { serviceUrl, body: renderPage({ ...facts, serviceUrl }) };
    return new Response(last.body, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": PAGE_CACHE_CONTROL,
        ...PAGE_SECURITY_HEADERS,
      },
    });
  });
  addScanRoutes(app, {
    facts: (c) => ({ ...facts, serviceUrl: baseUrlOf(deps, c) }),
    urlPolicy: deps.urlPolicy,
    work,
    admission,
    log: deps.log ?? ((message, error) => console.error(message, error ?? "")),
    ...(deps.formPayment && { payment: deps.formPayment }),
    clientOf: (c) => clientOf(c, trusted),
    ...(deps.failingFormScansPerClient !== undefined && {
      failingScansPerClient: deps.failingFormScansPerClient,
    }),
    ...(devnetPayer && { devnetPayer }),
    ...(deps.signer && { signer: deps.signer }),
    ...(deps.publicUrl !== undefined && { publicUrl: deps.publicUrl }),
  });
  addReferenceRoutes(app, PATHS.openApi);
}

/** 405 with Allow on known paths, 404 elsewhere, and the last-resort 500. */
function addFallbacks(app: Hono, log: Logger, paysAndScans: boolean): void {
  const allowed = Object.entries(ALLOWED_METHODS);
  if (paysAndScans) allowed.push([PATHS.payAndScan, "POST"]);
  for (const [path, allow] of allowed) {
    app.all(routerPath(path), (c) => toResponse(methodNotAllowed(c.req.method, allow)));
  }
  app.notFound(() => toResponse(NOT_FOUND));
  app.onError((err, c) => {
    // A middleware (the payment layer) may signal an HTTP status by exception: keep it, as JSON.
    if (err instanceof HTTPException && err.status < 500) {
      return toResponse(requestRefused(err.status, err.message));
    }
    log(`unhandled error on ${c.req.method} ${c.req.path}`, err);
    return toResponse(INTERNAL_ERROR);
  });
}
