/**
 * The snapshot engine's public face: what the HTTP layer, the payment layer, the CLI and the
 * benchmarks use. Nothing here knows of serving or payment.
 */
export { createSnapshotEngine } from "./snapshot.js";
export type { EngineOptions, SnapshotEngine } from "./snapshot.js";
export {
  MAX_URL_LENGTH,
  createUrlPolicy,
  parseInputUrl,
  parseSnapshotTarget,
} from "./net/url-rules.js";
export type { SnapshotTarget, UrlPolicy } from "./net/url-rules.js";
export { demoSnapshot } from "./demo.js";
export { CHECKS, CHECK_NAMES } from "./rules/registry.js";
export { REPORT_COVERAGE } from "./rules/coverage.js";
export { SEVERITIES } from "./rules/finding.js";
export { ALL_FINDINGS } from "./rules/registry.js";
export { GRADES } from "./rules/score.js";
export { reportView } from "./report-view.js";
export type { CheckState, ReportView, SectionView } from "./report-view.js";
export { SNAPSHOT_ERROR_TYPES, SnapshotError } from "./snapshot-error.js";
export type {
  DemoSnapshotResult,
  ReportProof,
  SnapshotErrorBody,
  SnapshotResult,
} from "./result.js";
