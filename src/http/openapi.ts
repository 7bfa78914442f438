import * as z from "zod";
import { DEFAULT_PRICE_USDC, NETWORK_IDS } from "../config.js";
import { NO_STORE, SnapshotRequestSchema, usdcAmount } from "../payment/index.js";
import { SERVICE_VERSION } from "../version.js";
import {
  DemoSnapshotResultSchema,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "./report-schemas.js";
import { MAX_BODY_BYTES } from "./snapshot-input.js";

/** Static answers (demo, OpenAPI) may be cached by browsers and proxies for an hour. */
export const STATIC_CACHE_CONTROL = "public, max-age=3600";

/** GET /health (docs/contract.md §2.6). */
export const HealthSchema = z
  .object({
    status: z.literal("ok").describe("ok when healthy."),
    version: z.string().describe("Service version."),
  })
  .strict();

/** GET /ready (docs/contract.md §2.7): ready, or what is down. */
export const ReadinessSchema = z.union([
  z.object({ status: z.literal("ready") }).strict(),
  z
    .object({
      status: z.literal("not_ready"),
      down: z
        .array(z.string())
        .min(1)
        .describe("What is down: `draining`, `facilitator`, or a store's name."),
    })
    .strict(),
]);

/** The 429 of a client over its budget of free answers (docs/contract.md §2.7). */
const RateLimitedSchema = z
  .object({
    error: z.string().describe("Human-readable message."),
    error_type: z.literal("rate_limited"),
  })
  .strict()
  .describe("Too many free answers (402, 400, demo, OpenAPI) for this client address.");

/** Every non-report error: 404, 405, 500 and the payment layer's 402, 409, 429 and 503. */
const ServiceErrorSchema = z
  .object({ error: z.string().describe("Human-readable message.") })
  .describe("Error that is not about the submitted URL.");

/** One offer of the x402 v1 challenge (the SDK's PaymentRequirementsV1Schema, described). */
const PaymentRequirementsV1Schema = z.object({
  scheme: z.literal("exact"),
  network: z
    .enum(Object.keys(NETWORK_IDS) as [keyof typeof NETWORK_IDS])
    .describe("x402 v1 network name."),
  maxAmountRequired: z.string().describe("USDC units (6 decimals)."),
  resource: z.string().describe("Full URL of this endpoint."),
  description: z.string(),
  mimeType: z.string(),
  outputSchema: z
    .record(z.string(), z.unknown())
    .describe("`input`: how to call this endpoint; `output`: an example report."),
  payTo: z.string(),
  maxTimeoutSeconds: z.number().int(),
  asset: z.string().describe("USDC contract address."),
  extra: z
    .object({ name: z.string(), version: z.string() })
    .describe("EIP-712 domain of the token, which the payer signs over."),
});

/** The 402 body: the x402 v1 challenge, with the same offers as the v2 PAYMENT-REQUIRED header. */
const PaymentRequiredV1Schema = z
  .object({
    x402Version: z.literal(1),
    error: z.string().describe("Why payment is required, or why the proof was refused."),
    accepts: z.array(PaymentRequirementsV1Schema),
  })
  .describe("x402 v1 PaymentRequired.");

const COMPONENTS = {
  SnapshotRequest: SnapshotRequestSchema.describe(
    `Other fields are ignored. The whole body may be at most ${MAX_BODY_BYTES / 1024} KiB.`,
  ),
  SnapshotResult: SnapshotResultSchema,
  DemoSnapshotResult: DemoSnapshotResultSchema,
  SnapshotError: SnapshotErrorBodySchema,
  Health: HealthSchema,
  Readiness: ReadinessSchema,
  RateLimited: RateLimitedSchema,
  ServiceError: ServiceErrorSchema,
  PaymentRequiredV1: PaymentRequiredV1Schema,
} as const;
type ComponentName = keyof typeof COMPONENTS;

/** The zod schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect), referencing each other by $ref. */
function componentSchemas(): Record<ComponentName, Record<string, unknown>> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(COMPONENTS)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    uri: (id) => `#/components/schemas/${id}`,
  });
  const out: Record<string, Record<string, unknown>> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    // $schema and $id belong to standalone documents, not to OpenAPI components.
    const { $schema: _dialect, $id: _id, ...rest } = schema as Record<string, unknown>;
    out[id] = rest;
  }
  return out as Record<ComponentName, Record<string, unknown>>;
}

const ref = (name: ComponentName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: ComponentName) => ({ "application/json": { schema: ref(name) } });

const cacheControl = (value: string) => ({
  "Cache-Control": { description: `Always \`${value}\`.`, schema: { type: "string" } },
});

const retryAfter = {
  "Retry-After": {
    description: "Seconds to wait before retrying.",
    required: true,
    schema: { type: "integer", minimum: 1 },
  },
};

/** Free answers are limited per client address (RATE_LIMIT_PER_MINUTE). */
const rateLimited = {
  description:
    "Too many free answers for this client address in the last minute (`RATE_LIMIT_PER_MINUTE`).",
  headers: retryAfter,
  content: json("RateLimited"),
};

const notAllowed = {
  description: "Method not allowed on this path; the `Allow` header lists the methods.",
  headers: { Allow: { schema: { type: "string" } } },
  content: json("ServiceError"),
};

/**
 * The OpenAPI 3.1 document served at GET /openapi.json, stating the configured price (without
 * one, the configuration's own default) and, with a public URL (PUBLIC_URL), that URL as its
 * one server; without, no `servers`, which OpenAPI reads as the document's own origin.
 * Each path's operation is built by its own function below, so adding or changing one stays local.
 */
export function createOpenApiDocument(
  priceUsdc: string = DEFAULT_PRICE_USDC,
  publicUrl?: string,
): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    ...(publicUrl !== undefined && { servers: [{ url: publicUrl }] }),
    info: documentInfo(priceUsdc),
    paths: {
      "/v1/snapshot": { post: snapshotOperation(priceUsdc) },
      "/demo/snapshot": { get: demoOperation() },
      "/health": { get: healthOperation() },
      "/ready": { get: readyOperation() },
      "/openapi.json": { get: openApiOperation() },
    },
    components: { schemas: componentSchemas() },
  };
}

/** What a call costs, as the document words it. */
const perCall = (priceUsdc: string) => `${priceUsdc} USDC`;

/** The service in a paragraph: what it does, what it costs, how it is paid, what is free. */
function documentInfo(priceUsdc: string) {
  const price = perCall(priceUsdc);
  return {
    title: "secsnap",
    version: SERVICE_VERSION,
    summary: "A JSON snapshot of a website's basic security hygiene, paid per call with x402.",
    description:
      "POST /v1/snapshot fetches one public URL and reports reachability, HTTPS, six security " +
      `headers and three well-known files. It costs ${price} per call, paid with the x402 ` +
      "protocol version 2 (scheme `exact`, USDC on Base " +
      `\`${NETWORK_IDS.base}\` or Base Sepolia \`${NETWORK_IDS["base-sepolia"]}\`). Input ` +
      "is checked before payment is asked for, and a 400 is never charged. GET /demo/snapshot, " +
      "GET /health and GET /ready are free. Every answer is JSON; CORS allows any origin.",
    license: { name: "MIT", identifier: "MIT" },
  };
}

/** POST /v1/snapshot: the input checked first, then paid with x402; every answer it can give. */
function snapshotOperation(priceUsdc: string) {
  const price = perCall(priceUsdc);
  return {
    operationId: "createSnapshot",
    summary: `Run a live security snapshot of one URL (x402, ${price}).`,
    description:
      `Checks, in order and before any payment: body at most ${MAX_BODY_BYTES / 1024} KiB, ` +
      "`Content-Type: " +
      "application/json`, a JSON object with a string `url`, then the URL rules (a blocked " +
      "target is `ssrf`). Any failure is 400 `invalid_url` (or `ssrf`) with " +
      '`requested_url` = the submitted `url` string, or `""` when there was none. Then the ' +
      "x402 payment is verified, the snapshot runs, and the payment is settled only if the " +
      "answer is 200.",
    parameters: [
      {
        name: "PAYMENT-SIGNATURE",
        in: "header",
        required: false,
        description:
          "x402 v2 payment proof: base64-encoded JSON PaymentPayload answering the " +
          "challenge of a previous 402. Read first when both proof headers are sent.",
        schema: { type: "string" },
      },
      {
        name: "X-PAYMENT",
        in: "header",
        required: false,
        description:
          "x402 v1 payment proof: base64-encoded JSON PaymentPayload (`x402Version` 1) " +
          "answering the body of a previous 402. Checked exactly as a v2 proof.",
        schema: { type: "string" },
      },
    ],
    requestBody: { required: true, content: json("SnapshotRequest") },
    responses: {
      "200": {
        description: "The report. Payment was settled.",
        headers: {
          ...cacheControl(NO_STORE),
          "PAYMENT-RESPONSE": {
            description: "x402 v2 settlement receipt: base64-encoded JSON SettleResponse.",
            schema: { type: "string" },
          },
          "X-PAYMENT-RESPONSE": {
            description:
              "The same receipt for an x402 v1 payment (`X-PAYMENT`), in place of " +
              "`PAYMENT-RESPONSE`.",
            schema: { type: "string" },
          },
        },
        content: json("SnapshotResult"),
      },
      "400": {
        description:
          "The URL was invalid, blocked (SSRF), timed out or unreachable. Never charged.",
        headers: cacheControl(NO_STORE),
        content: json("SnapshotError"),
      },
      "402": {
        description:
          "Payment required; never charged. One answer serves both protocol generations: " +
          "the x402 v2 challenge is in the `PAYMENT-REQUIRED` header, the x402 v1 " +
          "challenge is the body (`PaymentRequiredV1`, the same offers). A refused proof, " +
          "an unreadable proof and a failed settlement answer `ServiceError`, whose " +
          "`error` says which: `Unreadable payment proof: <why>.` (size, encoding, " +
          "shape, payment id); `Payment rejected: <reason>` (the facilitator's verify " +
          "reason, `payment_already_used` for a proof already served without a payment " +
          "id, `payment_proof_exhausted` after too many refused snapshots); " +
          "`Payment settlement failed: <reason>` (the facilitator refused the " +
          "settlement, or the authorization was canceled).",
        headers: {
          "PAYMENT-REQUIRED": {
            description:
              "Base64-encoded JSON PaymentRequired (`x402Version` 2): one `accepts` " +
              `entry per network, scheme \`exact\`, USDC amount \`${usdcAmount(priceUsdc)}\` ` +
              "(6 decimals).",
            required: true,
            schema: { type: "string" },
          },
        },
        content: {
          "application/json": {
            schema: { anyOf: [ref("PaymentRequiredV1"), ref("ServiceError")] },
          },
        },
      },
      "405": notAllowed,
      "409": {
        description:
          "The payment id (`payment-identifier`) or proof was already used with another " +
          "proof or request body; or, with `Retry-After`, a request with it is still in " +
          "progress: retry then to get its answer. Nothing more is charged.",
        headers: {
          "Retry-After": {
            description: "Seconds to wait (only while the first request is in progress).",
            required: false,
            schema: { type: "integer", minimum: 1 },
          },
        },
        content: json("ServiceError"),
      },
      "429": {
        description:
          "The payer (the proof's `from`) had too many unpaid snapshots (refused targets, " +
          "closed connections) in the last minute. Answered before the snapshot runs; " +
          "nothing is charged and the proof is not used up. Or, without a proof, " +
          "`RateLimited`: too many free answers (402, 400) for this client address.",
        headers: {
          "Retry-After": {
            description: "Seconds until the payer may be served again.",
            required: true,
            schema: { type: "integer", minimum: 1 },
          },
        },
        content: {
          "application/json": {
            schema: { anyOf: [ref("ServiceError"), ref("RateLimited")] },
          },
        },
      },
      "503": {
        description:
          "The payment facilitator (or a store) is unreachable or failing: nothing was " +
          "charged; retry later. Or this instance is at its limit of snapshots in flight " +
          "(`SNAPSHOT_MAX_CONCURRENCY`) or shutting down: refused before the payment is " +
          "verified, nothing charged, the proof still usable. Or the settlement's outcome is unknown: the report is " +
          "kept, and a retry with the same proof (or payment id) and body gets it once " +
          "the payment is known to be made, never charging twice.",
        headers: {
          "Retry-After": {
            description: "Seconds to wait before retrying.",
            required: true,
            schema: { type: "integer", minimum: 0 },
          },
        },
        content: json("ServiceError"),
      },
    },
  };
}

/** GET /demo/snapshot: the fixed sample report, cacheable with an ETag. */
function demoOperation() {
  return {
    operationId: "getDemoSnapshot",
    summary: "A fixed, pre-made snapshot of a sample site. Free, no live fetch.",
    responses: {
      "200": {
        description: "Always the same content.",
        headers: {
          ...cacheControl(STATIC_CACHE_CONTROL),
          ETag: { schema: { type: "string" } },
        },
        content: json("DemoSnapshotResult"),
      },
      "304": { description: "Not modified (`If-None-Match` matched the ETag)." },
      "405": notAllowed,
      "429": rateLimited,
    },
  };
}

/** GET /health. */
function healthOperation() {
  return {
    operationId: "getHealth",
    summary: "Service status and version. Free.",
    responses: {
      "200": {
        description: "The service is up.",
        headers: cacheControl(NO_STORE),
        content: json("Health"),
      },
      "405": notAllowed,
    },
  };
}

/** GET /ready: the load balancer's check. */
function readyOperation() {
  return {
    operationId: "getReadiness",
    summary: "Whether this instance can take payments: the load balancer's check. Free.",
    description:
      "Ready when the facilitator's `/supported` is known, every configured store " +
      "answers, and the instance is not shutting down. Never rate limited.",
    responses: {
      "200": {
        description: 'Ready: `{"status":"ready"}`.',
        headers: cacheControl(NO_STORE),
        content: json("Readiness"),
      },
      "503": {
        description: "Not ready: `down` names what is down, or `draining` after SIGTERM.",
        headers: cacheControl(NO_STORE),
        content: json("Readiness"),
      },
      "405": notAllowed,
    },
  };
}

/** GET /openapi.json: this document. */
function openApiOperation() {
  return {
    operationId: "getOpenApi",
    summary: "This document. Free.",
    responses: {
      "200": {
        description: "OpenAPI 3.1 description of the service.",
        headers: cacheControl(STATIC_CACHE_CONTROL),
        content: { "application/json": { schema: { type: "object" } } },
      },
      "405": notAllowed,
      "429": rateLimited,
    },
  };
}
