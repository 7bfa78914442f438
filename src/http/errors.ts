import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { SnapshotError, type SnapshotErrorBody } from "../snapshot/result.js";

/** Cache-Control for answers that must never be reused: live results, errors, health. */
export const NO_STORE = "no-store";

/** A plain `{"error": "..."}` JSON answer (404, 405, 500; the payment layer's 503 has the same shape). */
export function jsonError(
  c: Context,
  status: ContentfulStatusCode,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return c.json({ error: message }, status, { "Cache-Control": NO_STORE, ...headers });
}

/** The SnapshotError body of an input that failed SPEC §2 before anything else ran. */
export function invalidInput(requestedUrl: string, message: string): SnapshotErrorBody {
  return new SnapshotError("invalid_url", message, requestedUrl).toBody();
}
