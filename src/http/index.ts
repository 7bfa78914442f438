/**
 * The HTTP layer's public face: the app, the unpaid-challenge fast path in front of it, and the
 * server that runs both. Other folders import only from here.
 */
export { SnapshotAdmission } from "./guards/admission.js";
export { ROUTES, createApp } from "./app.js";
export { createChallengeFastPath } from "./challenge-fast-path.js";
export type { NodeFront } from "./challenge-fast-path.js";
export {
  DEMO_SNAPSHOT_TOOL,
  GET_SNAPSHOT_TOOL,
  MCP_TOOL_NAMES,
  SNAPSHOT_TOOL,
} from "./mcp/tools.js";
export { createOpenApiDocument } from "./documents/openapi.js";
export { formScansPerClient } from "./page/scan-form.js";
export { renderReportDocument } from "./page/report-document.js";
export {
  DemoSnapshotResultSchema,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "./documents/report-schemas.js";
export { ClientRateLimit } from "./guards/rate-limit.js";
export { PeriodicCheck } from "./operations/readiness.js";
export type { ReadinessCheck } from "./operations/readiness.js";
export { startServer } from "./server.js";
export type { RunningServer, ServerTimeouts } from "./server.js";
export { MAX_BODY_BYTES } from "./snapshot-input.js";
export { ServiceMetrics, metricsApp } from "./operations/metrics.js";
export { createRequestObserver } from "./operations/request-log.js";
export type { RequestObserver } from "./operations/request-log.js";
