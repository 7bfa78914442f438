import { SnapshotError, type SnapshotErrorBody } from "../snapshot/index.js";

/** The last-resort answer of a bug; the same from both serving paths. */
export { INTERNAL_ERROR } from "../payment/index.js";

/** The SnapshotError body of an input that failed docs/contract.md §3 before anything else ran. */
export function invalidInput(requestedUrl: string, message: string): SnapshotErrorBody {
  return new SnapshotError("invalid_url", message, requestedUrl).toBody();
}
