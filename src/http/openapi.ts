import { DEFAULT_PRICE_USDC, NETWORK_IDS } from "../config.js";
import { NO_STORE, usdcAmount } from "../payment/index.js";
import { SERVICE_VERSION } from "../version.js";
import { componentSchemas, json, jsonAnyOf, type ComponentName } from "./openapi-components.js";
import { MAX_BODY_BYTES } from "./snapshot-input.js";

/** Static answers (demo, OpenAPI) may be cached by browsers and proxies for an hour. */
export const STATIC_CACHE_CONTROL = "public, max-age=3600";

/**
 * The OpenAPI 3.1 document served at GET /openapi.json, stating the configured price (without
 * one, the configuration's own default) and, with a public URL (PUBLIC_URL), that URL as its
 * one server; without, no `servers`, which OpenAPI reads as the document's own origin.
 * Each operation, and each answer or header given in more than one place, is built by its own
 * function below, so adding or changing one is a local change.
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
  return {
    operationId: "createSnapshot",
    summary: `Run a live security snapshot of one URL (x402, ${perCall(priceUsdc)}).`,
    description:
      `Checks, in order and before any payment: body at most ${MAX_BODY_BYTES / 1024} KiB, ` +
      "`Content-Type: " +
      "application/json`, a JSON object with a string `url`, then the URL rules (a blocked " +
      "target is `ssrf`). Any failure is 400 `invalid_url` (or `ssrf`) with " +
      '`requested_url` = the submitted `url` string, or `""` when there was none. Then the ' +
      "x402 payment is verified, the snapshot runs, and the payment is settled only if the " +
      "answer is 200.",
    parameters: [
      proofHeader(
        "PAYMENT-SIGNATURE",
        "x402 v2 payment proof: base64-encoded JSON PaymentPayload answering the " +
          "challenge of a previous 402. Read first when both proof headers are sent.",
      ),
      proofHeader(
        "X-PAYMENT",
        "x402 v1 payment proof: base64-encoded JSON PaymentPayload (`x402Version` 1) " +
          "answering the body of a previous 402. Checked exactly as a v2 proof.",
      ),
    ],
    requestBody: { required: true, content: json("SnapshotRequest") },
    responses: {
      "200": paidReport(),
      "400": snapshotFailed(),
      "402": paymentRequired(priceUsdc),
      "405": notAllowed(),
      "409": paymentAlreadyUsed(),
      "429": payerOverBudget(),
      "503": snapshotUnavailable(),
    },
  };
}

/** GET /demo/snapshot: the fixed sample report, cacheable with an ETag. */
function demoOperation() {
  return {
    operationId: "getDemoSnapshot",
    summary: "A fixed, pre-made snapshot of a sample site. Free, no live fetch.",
    responses: {
      "200": jsonResponse(
        "Always the same content.",
        { ...cacheControl(STATIC_CACHE_CONTROL), ETag: { schema: { type: "string" } } },
        "DemoSnapshotResult",
      ),
      "304": { description: "Not modified (`If-None-Match` matched the ETag)." },
      "405": notAllowed(),
      "429": rateLimited(),
    },
  };
}

/** GET /health. */
function healthOperation() {
  return {
    operationId: "getHealth",
    summary: "Service status and version. Free.",
    responses: {
      "200": jsonResponse("The service is up.", cacheControl(NO_STORE), "Health"),
      "405": notAllowed(),
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
      "200": jsonResponse('Ready: `{"status":"ready"}`.', cacheControl(NO_STORE), "Readiness"),
      "503": jsonResponse(
        "Not ready: `down` names what is down, or `draining` after SIGTERM.",
        cacheControl(NO_STORE),
        "Readiness",
      ),
      "405": notAllowed(),
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
      "405": notAllowed(),
      "429": rateLimited(),
    },
  };
}

/** 200 of POST /v1/snapshot: the report, with the settlement receipt. */
function paidReport() {
  return jsonResponse(
    "The report. Payment was settled.",
    { ...cacheControl(NO_STORE), ...receiptHeaders() },
    "SnapshotResult",
  );
}

/** 400 of POST /v1/snapshot: the input was refused or the snapshot failed. */
function snapshotFailed() {
  return jsonResponse(
    "The URL was invalid, blocked (SSRF), timed out or unreachable. Never charged.",
    cacheControl(NO_STORE),
    "SnapshotError",
  );
}

/** 402: the challenge of both protocol generations in one answer, or why a proof was refused. */
function paymentRequired(priceUsdc: string) {
  return {
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
    headers: challengeHeader(priceUsdc),
    content: jsonAnyOf("PaymentRequiredV1", "ServiceError"),
  };
}

/** 409: paying once; a payment id or proof is another request's, or its request is under way. */
function paymentAlreadyUsed() {
  return serviceError(
    "The payment id (`payment-identifier`) or proof was already used with another " +
      "proof or request body; or, with `Retry-After`, a request with it is still in " +
      "progress: retry then to get its answer. Nothing more is charged.",
    retryAfter("Seconds to wait (only while the first request is in progress).", {
      required: false,
    }),
  );
}

/** 429 of POST /v1/snapshot: the payer over its unpaid budget, or the client over its free one. */
function payerOverBudget() {
  return {
    description:
      "The payer (the proof's `from`) had too many unpaid snapshots (refused targets, " +
      "closed connections) in the last minute. Answered before the snapshot runs; " +
      "nothing is charged and the proof is not used up. Or, without a proof, " +
      "`RateLimited`: too many free answers (402, 400) for this client address.",
    headers: retryAfter("Seconds until the payer may be served again."),
    content: jsonAnyOf("ServiceError", "RateLimited"),
  };
}

/** 503 of POST /v1/snapshot: payment or capacity unavailable for now; never charged twice. */
function snapshotUnavailable() {
  return serviceError(
    "The payment facilitator (or a store) is unreachable or failing: nothing was " +
      "charged; retry later. Or this instance is at its limit of snapshots in flight " +
      "(`SNAPSHOT_MAX_CONCURRENCY`) or shutting down: refused before the payment is " +
      "verified, nothing charged, the proof still usable. Or the settlement's outcome is " +
      "unknown: the report is kept, and a retry with the same proof (or payment id) and body " +
      "gets it once the payment is known to be made, never charging twice.",
    retryAfter("Seconds to wait before retrying.", { minimum: 0 }),
  );
}

/** Free answers are limited per client address (RATE_LIMIT_PER_MINUTE). */
function rateLimited() {
  return jsonResponse(
    "Too many free answers for this client address in the last minute (`RATE_LIMIT_PER_MINUTE`).",
    retryAfter("Seconds to wait before retrying."),
    "RateLimited",
  );
}

/** 405 on a known path. */
function notAllowed() {
  return serviceError("Method not allowed on this path; the `Allow` header lists the methods.", {
    Allow: { schema: { type: "string" } },
  });
}

/** An answer with a JSON body that is one component. */
function jsonResponse(description: string, headers: object, body: ComponentName) {
  return { description, headers, content: json(body) };
}

/** An error that is not about the submitted URL. */
function serviceError(description: string, headers: object) {
  return jsonResponse(description, headers, "ServiceError");
}

function cacheControl(value: string) {
  return { "Cache-Control": { description: `Always \`${value}\`.`, schema: { type: "string" } } };
}

/** Retry-After in seconds; `required` unless only some answers of that status carry it. */
function retryAfter(description: string, { minimum = 1, required = true } = {}) {
  return { "Retry-After": { description, required, schema: { type: "integer", minimum } } };
}

/** A payment proof the client sends: base64-encoded JSON in a request header. */
function proofHeader(name: string, description: string) {
  return { name, in: "header", required: false, description, schema: { type: "string" } };
}

/** The x402 v2 challenge of a 402, stating the price in USDC units. */
function challengeHeader(priceUsdc: string) {
  return {
    "PAYMENT-REQUIRED": {
      description:
        "Base64-encoded JSON PaymentRequired (`x402Version` 2): one `accepts` " +
        `entry per network, scheme \`exact\`, USDC amount \`${usdcAmount(priceUsdc)}\` ` +
        "(6 decimals).",
      required: true,
      schema: { type: "string" },
    },
  };
}

/** The settlement receipt of a paid answer, in the header of the proof's protocol generation. */
function receiptHeaders() {
  return {
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
  };
}
