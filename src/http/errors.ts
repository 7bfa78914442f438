import { errorAnswer, type Answer } from "../payment/index.js";
import { SnapshotError, type SnapshotErrorBody } from "../snapshot/index.js";

/** The last-resort answer of a bug; the same from both serving paths. */
export const INTERNAL_ERROR: Answer = errorAnswer(500, "internal error");

/** The SnapshotError body of an input that failed docs/contract.md §3 before anything else ran. */
export function invalidInput(requestedUrl: string, message: string): SnapshotErrorBody {
  return new SnapshotError("invalid_url", message, requestedUrl).toBody();
}
