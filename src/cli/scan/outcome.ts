import type { SnapshotErrorBody, SnapshotResult } from "../../snapshot/index.js";

/** What `secsnap scan` got for one URL: its report, or the SnapshotError the API would answer. */
export type ScanOutcome =
  { url: string; report: SnapshotResult } | { url: string; error: SnapshotErrorBody };

/** The reports among the outcomes, in their order. */
export function reportsOf(outcomes: readonly ScanOutcome[]): SnapshotResult[] {
  return outcomes.flatMap((o) => ("report" in o ? [o.report] : []));
}
