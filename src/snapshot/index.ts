/**
 * The snapshot engine's public face: what the HTTP layer, the CLI and the benchmark use.
 */
export { createSnapshotEngine, createUrlPolicy } from "./snapshot.js";
export type { EngineOptions, SnapshotEngine } from "./snapshot.js";
export { parseInputUrl, normalizeUrl } from "./url-rules.js";
export type { UrlPolicy } from "./url-rules.js";
export { demoSnapshot, DEMO_NOTE } from "./demo.js";
export {
  CHECK_NAMES,
  ChecksSchema,
  DemoSnapshotResultSchema,
  SNAPSHOT_ERROR_TYPES,
  SnapshotError,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "./result.js";
export type {
  CheckName,
  DemoSnapshotResult,
  SnapshotErrorBody,
  SnapshotErrorType,
  SnapshotResult,
} from "./result.js";
