import { jsonAnswer, type Answer } from "../payment/index.js";
import {
  SnapshotError,
  parseSnapshotTarget,
  type SnapshotErrorBody,
  type SnapshotTarget,
  type UrlPolicy,
} from "../snapshot/index.js";
import type { BodyText } from "./request-body.js";
import { invalidInput } from "./errors.js";

/** The POST body limit (docs/contract.md §3.1), enforced while the body is read. */
export const MAX_BODY_BYTES = 16 * 1024;

/** The checked input of POST /v1/snapshot, as the route hands it to payment and the engine. */
export interface SnapshotInput {
  /** The URL parsed once (docs/contract.md §3.2); its `raw` becomes `requested_url`. */
  readonly target: SnapshotTarget;
  /** The body's bytes as received (a payment id binds its proof to them). */
  readonly body: Uint8Array;
}

export type InputCheck =
  { ok: true; input: SnapshotInput } | { ok: false; error: SnapshotErrorBody };

/**
 * The media types whose body is read as JSON (docs/contract.md §3.1): JSON itself, and plain
 * text or none at all, which some x402 clients send on the paid retry after dropping the
 * caller's `Content-Type` (fetch labels a string body `text/plain;charset=UTF-8`).
 */
const BODY_READ_AS_JSON: ReadonlySet<string> = new Set(["application/json", "text/plain", ""]);

function isReadAsJson(header: string | undefined): boolean {
  const mediaType = (header ?? "").split(";", 1)[0]!.trim().toLowerCase();
  return BODY_READ_AS_JSON.has(mediaType);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const refuse = (error: SnapshotErrorBody): InputCheck => ({ ok: false, error });

/**
 * docs/contract.md §3 for POST /v1/snapshot, all of it pure and before payment (§7.2 step 1), so
 * nobody pays for a request that cannot work. The one implementation behind both serving paths (the Hono route and the
 * unpaid-challenge fast path), so they cannot disagree on what is valid.
 */
export function checkSnapshotRequest(
  contentType: string | undefined,
  read: BodyText,
  policy: UrlPolicy,
): InputCheck {
  if (!read.ok) {
    const why =
      read.reason === "too_large"
        ? `request body is larger than ${MAX_BODY_BYTES} bytes`
        : "the request body could not be read";
    return refuse(invalidInput("", why));
  }
  let body: unknown;
  let isJson = true;
  try {
    body = JSON.parse(read.text);
  } catch {
    isJson = false;
  }
  const raw = isPlainObject(body) && typeof body.url === "string" ? body.url : undefined;
  // Content type is checked after parsing only so the error can still name the submitted url.
  if (!isReadAsJson(contentType)) {
    return refuse(
      invalidInput(raw ?? "", "Content-Type must be application/json (or text/plain, or none)"),
    );
  }
  if (!isJson) return refuse(invalidInput("", "request body is not valid JSON"));
  if (!isPlainObject(body)) {
    return refuse(
      invalidInput("", 'request body must be a JSON object such as {"url": "https://example.com"}'),
    );
  }
  if (raw === undefined) {
    return refuse(invalidInput("", 'field "url" is required and must be a string'));
  }
  try {
    return { ok: true, input: { target: parseSnapshotTarget(raw, policy), body: read.bytes } };
  } catch (err) {
    if (err instanceof SnapshotError) return refuse(snapshotErrorBody(err, raw));
    throw err;
  }
}

/** `requested_url` is always the string the client sent, whichever layer rejected it. */
export function snapshotErrorBody(err: SnapshotError, raw: string): SnapshotErrorBody {
  return { ...err.toBody(), requested_url: raw };
}

/** The 400 answer of a SnapshotError (docs/contract.md §2.5), the same from both serving paths. */
export function snapshotErrorAnswer(body: SnapshotErrorBody): Answer {
  return jsonAnswer(400, body);
}
