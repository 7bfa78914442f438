import { ServerResponse } from "node:http";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { etag } from "hono/etag";
import { HTTPException } from "hono/http-exception";
import type { z } from "zod";
import type { SnapshotEngine } from "../snapshot/index.js";
import { demoSnapshot } from "../snapshot/demo.js";
import {
  DemoSnapshotResultSchema,
  SnapshotError,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
  type SnapshotErrorBody,
} from "../snapshot/result.js";
import type { UrlPolicy } from "../snapshot/url-rules.js";
import { SERVICE_VERSION } from "../version.js";
import { readBodyText } from "./body.js";
import { NO_STORE, jsonError } from "./errors.js";
import { HealthSchema, createOpenApiDocument } from "./openapi.js";
import {
  MAX_BODY_BYTES,
  checkSnapshotRequest,
  snapshotErrorAnswer,
  snapshotErrorBody,
  type SnapshotInput,
} from "./snapshot-input.js";

export type { UrlPolicy, SnapshotInput };
export { MAX_BODY_BYTES };

/** Static answers (demo, OpenAPI) may be cached by browsers and proxies for an hour. */
export const STATIC_CACHE_CONTROL = "public, max-age=3600";

/** Hono environment of the app: `c.get("snapshotInput")` is set for every request that reaches payment. */
export interface AppEnv {
  Variables: { snapshotInput: SnapshotInput };
}

export type Logger = (message: string, error?: unknown) => void;

export interface AppDeps {
  engine: SnapshotEngine;
  urlPolicy: UrlPolicy;
  /**
   * x402 payment, run after the input check and before the snapshot. It must `await next()` and
   * settle only when `c.res.status === 200`. Without it the live snapshot is served unpaid.
   */
  paymentMiddleware?: MiddlewareHandler<AppEnv>;
  /** Where bugs (response schema drift, unexpected exceptions) are reported; default console.error. */
  log?: Logger;
}

/** Response headers browser x402 clients must be able to read; Retry-After for a 503. */
const CORS_EXPOSED_HEADERS = ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "Retry-After"] as const;

/** The CORS headers of every answer except the preflight. */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": CORS_EXPOSED_HEADERS.join(","),
};
/** Made once: the CORS middleware runs on every request. */
const CORS_HEADER_ENTRIES = Object.entries(CORS_HEADERS);

/** @hono/node-server hands the Node response to the app as `env.outgoing`. */
function nodeResponse(c: Context): ServerResponse | undefined {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  return outgoing instanceof ServerResponse ? outgoing : undefined;
}

/** The methods each known path answers; everything else on these paths is 405 with Allow. */
const ALLOWED_METHODS = {
  "/v1/snapshot": "POST, OPTIONS",
  "/demo/snapshot": "GET, HEAD, OPTIONS",
  "/health": "GET, HEAD, OPTIONS",
  "/openapi.json": "GET, HEAD, OPTIONS",
} as const;

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const { engine, urlPolicy } = deps;
  const log: Logger = deps.log ?? ((message, error) => console.error(message, error ?? ""));

  /**
   * Responses are checked against the published schemas. A mismatch is a bug in this service:
   * it is logged, and the answer is still sent as it is, because withholding a (possibly paid)
   * report over a schema slip would hurt the client more than the slip itself.
   */
  function checkShape<T>(schema: z.ZodType<T>, value: unknown, what: string): void {
    const parsed = schema.safeParse(value);
    if (!parsed.success) log(`response drifted from the ${what} schema`, parsed.error.issues);
  }

  function sendSnapshotError(body: SnapshotErrorBody): Response {
    checkShape(SnapshotErrorBodySchema, body, "SnapshotError");
    const answer = snapshotErrorAnswer(body);
    return new Response(answer.body, { status: answer.status, headers: { ...answer.headers } });
  }

  // Built once: both are fixed for the life of the process.
  const demo = demoSnapshot();
  checkShape(DemoSnapshotResultSchema, demo, "DemoSnapshotResult");
  const openApiDocument = createOpenApiDocument();

  const app = new Hono<AppEnv>();

  // CORS for browser x402 clients (SPEC §6). hono/cors answers the preflight; on every other
  // request it sets its headers through `c.res` before the handler runs, which makes Hono rebuild
  // each response around a ReadableStream — that cost 3/4 of GET /health's throughput
  // (measured). The two headers a real request needs go on the Node response instead, which
  // merges them into whatever the handler answers: `c.header()` would make every later answer
  // copy its headers through an undici Headers object, and for the 402 challenge's ~3 KB header
  // that copy cost more than sending it (bench/payment.ts). Without a Node response
  // (`app.request()` in tests, other runtimes) `c.header()` after the handler does the same job.
  const preflight = cors({
    origin: "*",
    allowMethods: ["GET", "HEAD", "POST", "OPTIONS"],
    // @x402/fetch's paid retry also sends an `Access-Control-Expose-Headers` request header; a
    // preflight that does not allow it stops the official client in every browser.
    allowHeaders: [
      "Content-Type",
      "PAYMENT-SIGNATURE",
      "X-PAYMENT",
      "Access-Control-Expose-Headers",
    ],
    exposeHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: 600,
  });
  app.use("*", async (c, next) => {
    // A preflight only for the paths that exist; OPTIONS on anything else is 404 like any method.
    if (c.req.method === "OPTIONS") {
      return Object.hasOwn(ALLOWED_METHODS, c.req.path) ? preflight(c, next) : next();
    }
    const outgoing = nodeResponse(c);
    if (outgoing) {
      for (const [name, value] of CORS_HEADER_ENTRIES) outgoing.setHeader(name, value);
    }
    await next();
    // After the handler, so answers built as plain Responses (not c.json) get them too.
    if (!outgoing) for (const [name, value] of CORS_HEADER_ENTRIES) c.header(name, value);
  });

  /** SPEC §2 before payment (checkSnapshotRequest); the valid input goes in the context. */
  const validateInput: MiddlewareHandler<AppEnv> = async (c, next) => {
    const read = await readBodyText(c, MAX_BODY_BYTES);
    const checked = checkSnapshotRequest(c.req.header("content-type"), read, urlPolicy);
    if (!checked.ok) return sendSnapshotError(checked.error);
    c.set("snapshotInput", checked.input);
    await next();
  };

  const runSnapshot = async (c: Context<AppEnv>): Promise<Response> => {
    const { raw } = c.get("snapshotInput");
    try {
      const result = await engine.snapshot(raw);
      checkShape(SnapshotResultSchema, result, "SnapshotResult");
      return c.json(result, 200, { "Cache-Control": NO_STORE });
    } catch (err) {
      if (err instanceof SnapshotError) return sendSnapshotError(snapshotErrorBody(err, raw));
      throw err;
    }
  };

  const noPayment: MiddlewareHandler<AppEnv> = (_c, next) => next();
  app.post("/v1/snapshot", validateInput, deps.paymentMiddleware ?? noPayment, runSnapshot);

  app.get("/demo/snapshot", etag(), (c) =>
    c.json(demo, 200, { "Cache-Control": STATIC_CACHE_CONTROL }),
  );

  app.get("/health", (c) => {
    const body = { status: "ok", version: SERVICE_VERSION } as const;
    checkShape(HealthSchema, body, "Health");
    return c.json(body, 200, { "Cache-Control": NO_STORE });
  });

  app.get("/openapi.json", etag(), (c) =>
    c.json(openApiDocument, 200, { "Cache-Control": STATIC_CACHE_CONTROL }),
  );

  for (const [path, allow] of Object.entries(ALLOWED_METHODS)) {
    app.all(path, (c) => jsonError(c, 405, `method ${c.req.method} not allowed`, { Allow: allow }));
  }

  app.notFound((c) => jsonError(c, 404, "not found"));

  // Last resort only: every expected failure above has its own answer.
  app.onError((err, c) => {
    // A middleware (the payment layer) may signal an HTTP status by exception: keep it, as JSON.
    if (err instanceof HTTPException && err.status < 500) {
      return jsonError(c, err.status, err.message || "request refused");
    }
    log(`unhandled error on ${c.req.method} ${c.req.path}`, err);
    return jsonError(c, 500, "internal error");
  });

  return app;
}
