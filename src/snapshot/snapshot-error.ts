/** The engine's 400 outcomes, on their own: the input check needs them without the rules. */
export const SNAPSHOT_ERROR_TYPES = ["ssrf", "timeout", "unreachable", "invalid_url"] as const;
export type SnapshotErrorType = (typeof SNAPSHOT_ERROR_TYPES)[number];

/** The body of a 400 (docs/contract.md §3). */
export interface SnapshotErrorBody {
  requested_url: string;
  error: string;
  error_type: SnapshotErrorType;
}

/** Thrown by the engine for every 400 outcome (docs/contract.md §3 and §4.2). */
export class SnapshotError extends Error {
  constructor(
    readonly errorType: SnapshotErrorType,
    message: string,
    readonly requestedUrl = "",
  ) {
    super(message);
    this.name = "SnapshotError";
  }

  toBody(): SnapshotErrorBody {
    return { requested_url: this.requestedUrl, error: this.message, error_type: this.errorType };
  }
}
