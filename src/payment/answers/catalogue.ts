/**
 * The catalogue of answers (docs/contract.md §1.3, "Error answers"): every answer other than a
 * report, the 402 challenge (x402's own format) and the 400 SnapshotError (its `error_type`,
 * §2.5), each with its status, the stable `code` a client branches on, its words in `error` and
 * the headers it adds. Here, in the lowest layer that answers requests, so the payment gate, the
 * ledger's outcomes and the HTTP routes all take their answers from one list.
 */
import { jsonAnswer, type Answer } from "./answer.js";

/** A header an answer adds to those every answer carries. */
type AddedHeader = "Allow" | "Retry-After";

interface CatalogueEntry {
  /** "4xx": the status a middleware's own refusal chose. */
  readonly status: number | "4xx";
  readonly headers: readonly AddedHeader[];
}

const NONE: readonly AddedHeader[] = [];
const RETRY: readonly AddedHeader[] = ["Retry-After"];

/** Every code, its status and its added headers, in the order of docs/contract.md's table. */
export const ANSWER_CATALOGUE = {
  request_refused: { status: "4xx", headers: NONE },
  sign_in_malformed: { status: 400, headers: NONE },
  sign_in_refused: { status: 401, headers: NONE },
  host_not_allowed: { status: 403, headers: NONE },
  foreign_origin: { status: 403, headers: NONE },
  not_payer: { status: 403, headers: NONE },
  not_found: { status: 404, headers: NONE },
  snapshot_not_found: { status: 404, headers: NONE },
  method_not_allowed: { status: 405, headers: ["Allow"] },
  payment_proof_conflict: { status: 409, headers: NONE },
  payment_id_conflict: { status: 409, headers: NONE },
  payment_in_progress: { status: 409, headers: RETRY },
  rate_limited: { status: 429, headers: RETRY },
  payer_over_budget: { status: 429, headers: RETRY },
  client_gone: { status: 499, headers: NONE },
  internal_error: { status: 500, headers: NONE },
  payment_failed: { status: 500, headers: NONE },
  instance_busy: { status: 503, headers: RETRY },
  draining: { status: 503, headers: RETRY },
  facilitator_unavailable: { status: 503, headers: RETRY },
  store_unavailable: { status: 503, headers: RETRY },
  settlement_unknown: { status: 503, headers: RETRY },
  not_ready: { status: 503, headers: NONE },
} as const satisfies Record<string, CatalogueEntry>;

export type AnswerCode = keyof typeof ANSWER_CATALOGUE;
/** The codes whose status is fixed: all but a middleware's own refusal. */
type FixedCode = Exclude<AnswerCode, "request_refused">;

/** The answer of `code`: `{"error", "code"}` and any `extra` fields, at the code's status. */
function coded(
  code: FixedCode,
  error: string,
  headers: Readonly<Record<string, string>> = {},
  extra: Readonly<Record<string, unknown>> = {},
): Answer {
  return jsonAnswer(ANSWER_CATALOGUE[code].status, { error, code, ...extra }, headers);
}

/** Whole seconds to wait, at least 1: the value of a `Retry-After`. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** A middleware refused the request with an HTTP status of its own (below 500). */
export function requestRefused(status: number, message: string): Answer {
  return jsonAnswer(status, { error: message || "request refused", code: "request_refused" });
}

/** Devnet and local mode serve only the Host names of this machine (docs/security.md). */
export function hostNotAllowed(host: string | undefined): Answer {
  const error =
    `Host ${JSON.stringify(host?.slice(0, 100))} is not served in devnet mode: open the service ` +
    "at localhost or an IP address, or set PUBLIC_URL to the name it is reached under.";
  // `error_type` is the name this refusal had before `code`; kept for the clients that read it.
  return coded("host_not_allowed", error, {}, { error_type: "host_not_allowed" });
}

/** The devnet scan form is posted only from the service's own page. */
export function foreignOrigin(origin: string | undefined): Answer {
  const error =
    "The form is posted only from this service's own page (its Origin header, " +
    `${JSON.stringify(origin?.slice(0, 100) ?? null)}, is not this service's).`;
  return coded("foreign_origin", error, {}, { error_type: "foreign_origin" });
}

export const NOT_FOUND: Answer = coded("not_found", "not found");

export function methodNotAllowed(method: string, allow: string): Answer {
  return coded("method_not_allowed", `method ${method} not allowed`, { allow });
}

/** The three ways paying once refuses a proof or payment id (docs/contract.md §7.4). */
export type ConflictCode = "payment_proof_conflict" | "payment_id_conflict" | "payment_in_progress";

const CONFLICT_MESSAGES: Record<ConflictCode, string> = {
  payment_proof_conflict: "This payment proof was already used with another request body.",
  payment_id_conflict:
    "This payment id was already used with another payment proof or request body.",
  payment_in_progress:
    "A request with this payment is in progress; retry after it finishes to get its answer.",
};

export function conflictMessage(code: ConflictCode): string {
  return CONFLICT_MESSAGES[code];
}

/** The 409 of `code`; `Retry-After` only while the first request is in progress. */
export function paymentConflict(code: ConflictCode, retryAfterSeconds?: number): Answer {
  const headers: Record<string, string> =
    retryAfterSeconds === undefined ? {} : { "retry-after": String(retryAfterSeconds) };
  return coded(code, CONFLICT_MESSAGES[code], headers);
}

/** A client over its budget of free answers (docs/contract.md §2.7). */
export function rateLimited(msBeforeNext: number): Answer {
  const seconds = retryAfterSeconds(msBeforeNext);
  return coded(
    "rate_limited",
    `Too many requests from this address; retry in ${seconds} s. Paid requests are not limited.`,
    { "retry-after": String(seconds) },
    { error_type: "rate_limited" },
  );
}

/** A client over its budget of refused payment proofs: the same code as every free budget. */
export function tooManyRefusedProofs(msBeforeNext: number): Answer {
  const seconds = retryAfterSeconds(msBeforeNext);
  return coded(
    "rate_limited",
    `Too many refused payment proofs from this address; retry in ${seconds} s.`,
    { "retry-after": String(seconds) },
    { error_type: "rate_limited" },
  );
}

/** A payer over its budget of unpaid snapshots (`perMinute` when it is known). */
export function payerOverBudget(retryAfterMs: number, perMinute: number | undefined): Answer {
  const seconds = retryAfterSeconds(retryAfterMs);
  const limit = perMinute !== undefined ? ` (at most ${perMinute} a minute)` : "";
  return coded(
    "payer_over_budget",
    `Too many unpaid snapshots for this payer${limit}: refused targets and closed ` +
      `connections count; retry in ${seconds} s. Nothing was charged.`,
    { "retry-after": String(seconds) },
  );
}

/** Nobody receives it: the client left before the answer. The status is for the log. */
export const CLIENT_GONE: Answer = coded("client_gone", "client closed the connection");

/** The last-resort answer of a bug; its cause is logged, never sent. */
export const INTERNAL_ERROR: Answer = coded("internal_error", "internal error");

/** The payment layer could not build what a paid request needs (a challenge, a priced route). */
export const PAYMENT_FAILED: Answer = coded("payment_failed", "Payment processing failed.");

/** `Retry-After` (seconds) of a paid request turned away by back-pressure or draining. */
const ADMISSION_RETRY_AFTER = { "retry-after": "1" };

export const INSTANCE_BUSY: Answer = coded(
  "instance_busy",
  "Too many snapshots in progress on this instance; retry shortly. Nothing was charged.",
  ADMISSION_RETRY_AFTER,
);

export const DRAINING: Answer = coded(
  "draining",
  "This instance is shutting down; retry (another instance answers). Nothing was charged.",
  ADMISSION_RETRY_AFTER,
);

/** Why payment cannot be processed now (docs/contract.md §7.5). */
export type UnavailableCode =
  "facilitator_unavailable" | "store_unavailable" | "settlement_unknown";

const UNAVAILABLE_REASONS: Record<UnavailableCode, string> = {
  facilitator_unavailable: "facilitator unreachable or failing",
  store_unavailable: "payment state store unavailable",
  settlement_unknown:
    "the settlement's outcome is unknown; retry with the same payment proof to get the " +
    "report once the payment is known, never charged twice",
};

export function unavailableReason(code: UnavailableCode): string {
  return UNAVAILABLE_REASONS[code];
}

/** The 503 of `code`, to retry after `retryAfter` seconds. */
export function paymentUnavailable(code: UnavailableCode, retryAfter: string): Answer {
  return coded(
    code,
    `Payment infrastructure unavailable (${UNAVAILABLE_REASONS[code]}); retry later.`,
    { "retry-after": retryAfter },
  );
}

/** GET /ready while something is down: the readiness body, with its code (no `error`). */
export function notReady(down: readonly string[]): Answer {
  return jsonAnswer(ANSWER_CATALOGUE.not_ready.status, {
    status: "not_ready",
    down,
    code: "not_ready",
  });
}

/** GET /v1/snapshots/{id}: no report kept under this id (never one, or past its retention). */
export const SNAPSHOT_NOT_FOUND: Answer = coded(
  "snapshot_not_found",
  "no report is kept under this snapshot_id (unknown, or past SNAPSHOT_RETENTION_DAYS)",
);

/** The SIGN-IN-WITH-X header cannot be read as a sign-in message; `why` says what is wrong. */
export function signInMalformed(why: string): Answer {
  return coded("sign_in_malformed", `the SIGN-IN-WITH-X header is malformed: ${why}`);
}

/** A readable sign-in that does not hold: another origin, expired, replayed, a bad signature. */
export function signInRefused(why: string): Answer {
  return coded("sign_in_refused", `sign-in refused: ${why}; ask again without it for a new one`);
}

/** Signed in, but not by the address that paid for this report. */
export const NOT_PAYER: Answer = coded(
  "not_payer",
  "this report is served only to the address that paid for it",
);
