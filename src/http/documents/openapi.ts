import { DEFAULT_PRICE_USDC, NETWORK_IDS, type OperatorContact } from "../../config.js";
import { NO_STORE, challengeExample, usdcAmount } from "../../payment/index.js";
import { PATHS } from "../../routes.js";
import { REPORT_COVERAGE, demoSnapshot } from "../../snapshot/index.js";
import { SERVICE_VERSION } from "../../version.js";
import {
  componentSchemas,
  json,
  jsonAnyOf,
  type ComponentExamples,
  type ComponentName,
} from "./openapi-components.js";
import { MAX_BODY_BYTES } from "../snapshot-input.js";

/** Static answers (demo, OpenAPI) may be cached by browsers and proxies for an hour. */
export const STATIC_CACHE_CONTROL = "public, max-age=3600";

/** What the service offers, as the documents for clients and agents state it. */
export interface ServiceFacts {
  /** The configured price (X402_PRICE_USDC); default the configuration's default. */
  priceUsdc?: string;
  /** The public base URL (PUBLIC_URL), no trailing slash; default none (the request's own). */
  publicUrl?: string;
  /** How the operator is reached (OPERATOR_CONTACT): `info.contact`; default none. */
  operatorContact?: OperatorContact;
  /** The networks the challenge offers, as CAIP-2 ids; default the configuration's default. */
  networks?: readonly string[];
  /** The networks are the embedded devnet (docs/contract.md §7.7). */
  devnet?: boolean;
  /** Who is paid, for the 402's example; default the devnet's payee. */
  payTo?: `0x${string}`;
}

/** The devnet's payee (anvil's test account 1): the example's payee when none is configured. */
const EXAMPLE_PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
/** The base URL the examples name when the service has no public one. */
const EXAMPLE_BASE_URL = "https://secsnap.example";

const NETWORK_NAMES: Readonly<Record<string, string>> = {
  [NETWORK_IDS.base]: "Base",
  [NETWORK_IDS["base-sepolia"]]: "Base Sepolia",
};

/**
 * The offered networks in words, e.g. "Base `eip155:8453` or Base Sepolia `eip155:84532`"; in
 * devnet mode the one local chain, said to be that (docs/contract.md §7.7).
 */
export function networksInWords(networks: readonly string[], devnet: boolean): string {
  if (devnet) {
    return networks
      .map(
        (id) => `the service's local devnet \`${id}\` (a Base Sepolia look-alike; no real money)`,
      )
      .join(" or ");
  }
  return networks.map((id) => `${NETWORK_NAMES[id] ?? id} \`${id}\``).join(" or ");
}

/**
 * The OpenAPI 3.1 document served at GET /openapi.json, stating the configured price and
 * networks (without them, the configuration's defaults) and, with a public URL (PUBLIC_URL),
 * that URL as its one server; without, no `servers`, which OpenAPI reads as the document's own
 * origin. Each operation, and each answer or header given in more than one place, is built by
 * its own function below, so adding or changing one is a local change.
 */
export function createOpenApiDocument(facts: ServiceFacts = {}): Record<string, unknown> {
  const priceUsdc = facts.priceUsdc ?? DEFAULT_PRICE_USDC;
  const networks = facts.networks ?? Object.values(NETWORK_IDS);
  const devnet = facts.devnet ?? false;
  const challenge = challengeExample(
    {
      payTo: facts.payTo ?? EXAMPLE_PAY_TO,
      networks: networks as `${string}:${string}`[],
      priceUsdc,
      devnet,
    },
    facts.publicUrl ?? EXAMPLE_BASE_URL,
  );
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    ...(facts.publicUrl !== undefined && { servers: [{ url: facts.publicUrl }] }),
    info: documentInfo(priceUsdc, networksInWords(networks, devnet), facts.operatorContact),
    paths: {
      [PATHS.snapshot]: { post: snapshotOperation(priceUsdc, challenge.header) },
      [PATHS.snapshotAgain]: { get: free(snapshotAgainOperation()) },
      [PATHS.demo]: { get: free(demoOperation()) },
      [PATHS.health]: { get: free(healthOperation()) },
      [PATHS.ready]: { get: free(readyOperation()) },
      [PATHS.openApi]: { get: free(openApiOperation()) },
    },
    components: { schemas: componentSchemas(componentExamples(challenge.v1), networks) },
  };
}

/** A free operation: no credential and no payment (`security: []`, docs/contract.md §7.9). */
function free<Operation extends object>(operation: Operation) {
  return { ...operation, security: [] };
}

/** The examples of the components: the demo report, real errors, the real challenge. */
function componentExamples(challengeV1: unknown): ComponentExamples {
  const { _demo: _marker, _note: _why, ...report } = demoSnapshot();
  return {
    SnapshotRequest: { url: "https://example.com" },
    SnapshotResult: report,
    DemoSnapshotResult: demoSnapshot(),
    SnapshotError: {
      requested_url: "http://169.254.169.254/latest/meta-data",
      error: "169.254.169.254 is a private, reserved or otherwise non-public address.",
      error_type: "ssrf",
    },
    Health: { status: "ok", version: SERVICE_VERSION },
    Readiness: { status: "ready" },
    RateLimited: {
      error: "Too many requests from this address; retry in 60 s. Paid requests are not limited.",
      code: "rate_limited",
      error_type: "rate_limited",
    },
    ServiceError: {
      error:
        "Payment infrastructure unavailable (facilitator unreachable or failing); retry later.",
      code: "facilitator_unavailable",
    },
    PaymentRefused: { error: "Payment rejected: invalid_exact_evm_payload_signature" },
    PaymentRequiredV1: challengeV1,
  };
}

/** What a call costs, as the document words it. */
const perCall = (priceUsdc: string) => `${priceUsdc} USDC`;

/** The service in a paragraph: what it does, what it costs, how it is paid, what is free. */
function documentInfo(priceUsdc: string, networks: string, contact?: OperatorContact) {
  const price = perCall(priceUsdc);
  return {
    title: "secsnap",
    version: SERVICE_VERSION,
    summary: "A JSON snapshot of a website's basic security hygiene, paid per call with x402.",
    description:
      `POST ${PATHS.snapshot} fetches one public URL and reports ${REPORT_COVERAGE}, with ` +
      `findings that say what to fix, a score and a grade. It costs ${price} per call, paid with the x402 ` +
      `protocol version 2 or 1 (scheme \`exact\`, USDC on ${networks}). Input ` +
      `is checked before payment is asked for, and a 400 is never charged. GET ${PATHS.demo}, ` +
      `GET ${PATHS.health} and GET ${PATHS.ready} are free. Every answer is JSON; CORS allows any origin.`,
    "x-guidance": guidance(price),
    ...(contact !== undefined && { contact }),
    license: { name: "MIT", identifier: "MIT" },
  };
}

/** How an agent uses the service, in three sentences (docs/contract.md §7.9). */
export function guidance(price: string): string {
  return (
    `POST {"url": "<site>"} to ${PATHS.snapshot}: the first answer is a 402 whose x402 challenge ` +
    "(v2 in the PAYMENT-REQUIRED header, v1 in the body) an x402 client pays, " +
    `${price} per report, by sending the same request again with PAYMENT-SIGNATURE (v2) or ` +
    "X-PAYMENT (v1). " +
    "A URL that is invalid or blocked gets a 400 SnapshotError before any payment and is never " +
    "charged. " +
    "The report is a SnapshotResult (every field always present; findings with fixes, a score " +
    `and a grade): GET ${PATHS.demo} shows one for free.`
  );
}

/** POST /v1/snapshot: the input checked first, then paid with x402; every answer it can give. */
function snapshotOperation(priceUsdc: string, challengeHeaderExample: string) {
  return {
    operationId: "createSnapshot",
    summary: `Run a live security snapshot of one URL (x402, ${perCall(priceUsdc)}).`,
    description:
      `Checks, in order and before any payment: body at most ${MAX_BODY_BYTES / 1024} KiB, ` +
      "`Content-Type` `application/json`, `text/plain` or none (the body is read as JSON " +
      "either way), a JSON object with a string `url`, then the URL rules (a blocked " +
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
    // How much and how: read by agents and x402 catalogues (docs/contract.md §7.9). No security
    // scheme: the proof is made per request from the 402, not a credential held beforehand.
    "x-payment-info": {
      price: { mode: "fixed", currency: "USD", amount: priceUsdc },
      protocols: [{ x402: {} }],
    },
    responses: {
      "200": paidReport(),
      "400": snapshotFailed(),
      "402": paymentRequired(priceUsdc, challengeHeaderExample),
      "405": notAllowed(),
      "409": paymentAlreadyUsed(),
      "429": payerOverBudget(),
      "500": snapshotFailedInternally(),
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

const refusal = (description: string) => serviceError(description, cacheControl(NO_STORE));

/** GET /v1/snapshots/{snapshot_id}: a paid report again, for its payer (docs/contract.md §10.4). */
function snapshotAgainOperation() {
  return {
    operationId: "getSnapshotAgain",
    summary: "A paid report again, the same bytes, for the address that paid. Free.",
    description:
      "`snapshot_id` is the paid report's `proof.snapshot_id`; kept SNAPSHOT_RETENTION_DAYS " +
      "(default 30). Without `SIGN-IN-WITH-X` the answer is a 402 whose `PAYMENT-REQUIRED` offers " +
      "no payment (`accepts: []`) and a `sign-in-with-x` challenge (x402 extension): sign its " +
      "EIP-4361 message with the wallet that paid and send it back within five minutes; each " +
      "challenge's nonce is accepted once.",
    parameters: [
      { name: "snapshot_id", in: "path", required: true, schema: { type: "string" } },
      { name: "SIGN-IN-WITH-X", in: "header", required: false, schema: { type: "string" } },
    ],
    responses: {
      "200": jsonResponse(
        "The paid report, byte for byte as its paid 200 was.",
        cacheControl("private, no-store"),
        "SnapshotResult",
      ),
      "400": refusal("`sign_in_malformed`: the header cannot be read."),
      "401": refusal("`sign_in_refused`: another origin, expired, a nonce not ours or used."),
      "402": { description: "Sign in: the challenge is in `PAYMENT-REQUIRED`; nothing to pay." },
      "403": refusal("`not_payer`: signed in by another address than the payer's."),
      "404": refusal("`snapshot_not_found`: no report kept under this id."),
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
        "Not ready (`code` `not_ready`): `down` names what is down, or `draining` after SIGTERM.",
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
function paymentRequired(priceUsdc: string, challengeHeaderExample: string) {
  return {
    description:
      "Payment required; never charged. One answer serves both protocol generations: " +
      "the x402 v2 challenge is in the `PAYMENT-REQUIRED` header, the x402 v1 " +
      "challenge is the body (`PaymentRequiredV1`, the same offers). A refused proof, " +
      "an unreadable proof and a failed settlement answer `PaymentRefused`, whose " +
      "`error` says which: `Unreadable payment proof: <why>.` (size, encoding, " +
      "shape, payment id); `Payment rejected: <reason>` (the facilitator's verify " +
      "reason, `payment_already_used` for a proof already served without a payment " +
      "id, `payment_proof_exhausted` after too many refused snapshots); " +
      "`Payment settlement failed: <reason>` (the facilitator refused the " +
      "settlement, or the authorization was canceled).",
    headers: challengeHeader(priceUsdc, challengeHeaderExample),
    content: jsonAnyOf("PaymentRequiredV1", "PaymentRefused"),
  };
}

/** 409: paying once; a payment id or proof is another request's, or its request is under way. */
function paymentAlreadyUsed() {
  return serviceError(
    "`payment_id_conflict`: the payment id (`payment-identifier`) was already used with " +
      "another proof or request body. `payment_proof_conflict`: the proof's report is kept " +
      "for another request body. `payment_in_progress`, with `Retry-After`: a request with " +
      "it is still in progress; retry then to get its answer. Nothing more is charged.",
    retryAfter("Seconds to wait (only while the first request is in progress).", {
      required: false,
    }),
  );
}

/** 429 of POST /v1/snapshot: the payer over its unpaid budget, or the client over its free one. */
function payerOverBudget() {
  return {
    description:
      "`payer_over_budget`: the payer (the proof's `from`) had too many unpaid snapshots " +
      "(refused targets, closed connections) in the last minute. Answered before the " +
      "snapshot runs; nothing is charged and the proof is not used up. Or `rate_limited` " +
      "(`RateLimited`): too many free answers (402, 400), or refused proofs, for this " +
      "client address.",
    headers: retryAfter("Seconds until the payer may be served again."),
    content: jsonAnyOf("ServiceError", "RateLimited"),
  };
}

/** 503 of POST /v1/snapshot: payment or capacity unavailable for now; never charged twice. */
function snapshotUnavailable() {
  return serviceError(
    "`facilitator_unavailable` or `store_unavailable`: the payment facilitator or the " +
      "payment record store is unreachable or failing: nothing was charged; retry later. " +
      "`instance_busy` or `draining`: this instance is at its limit of snapshots in flight " +
      "(`SNAPSHOT_MAX_CONCURRENCY`) or shutting down: refused before the proof is " +
      "verified: nothing charged, the proof still usable. `settlement_unknown`: the " +
      "settlement's outcome is unknown: the report is kept, and a retry with the same proof " +
      "(or payment id) and body gets it once the payment is known to be made, never " +
      "charging twice.",
    retryAfter("Seconds to wait before retrying.", { minimum: 0 }),
  );
}

/** 500 of POST /v1/snapshot: a bug, or the payment layer unable to build the challenge. */
function snapshotFailedInternally() {
  return serviceError(
    "`internal_error`: a bug, its cause logged, never sent. `payment_failed`: the payment " +
      "layer could not build the challenge. Never charged.",
    cacheControl(NO_STORE),
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
function challengeHeader(priceUsdc: string, example: string) {
  return {
    "PAYMENT-REQUIRED": {
      description:
        "Base64-encoded JSON PaymentRequired (`x402Version` 2): one `accepts` " +
        `entry per network, scheme \`exact\`, USDC amount \`${usdcAmount(priceUsdc)}\` ` +
        "(6 decimals), and the Bazaar discovery extension (the input's schema, an example " +
        "report).",
      required: true,
      schema: { type: "string" },
      example,
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
