/**
 * The service's app three times in one plain node process, bundled as the CLI is: without
 * telemetry, with the request observer counting metrics only, and with metrics and one JSON log
 * line per request (pino, written to /dev/null with one write each, as `serve` writes stdout).
 * Sends `{ plain, metrics, logged }` URLs over IPC; answers "cpu" with its CPU time (µs).
 */
import { openSync, writeSync } from "node:fs";
import { createLogger } from "../../src/cli/serve/logger.js";
import {
  ROUTES,
  ServiceMetrics,
  createApp,
  createRequestObserver,
  startServer,
} from "../../src/http/index.js";
import { createSnapshotEngine, createUrlPolicy } from "../../src/snapshot/index.js";

const options = {
  timeoutMs: 10_000,
  maxRedirects: 10,
  allowedPorts: new Set([80, 443]),
  allowCidrs: [],
  dnsServers: [],
};
const app = createApp({
  engine: createSnapshotEngine(options),
  urlPolicy: createUrlPolicy(options),
  log: () => {},
});
const metrics = new ServiceMetrics();
const sink = openSync("/dev/null", "w");
const logger = createLogger("info", { write: (line) => writeSync(sink, line) });
const listen = (observe) =>
  startServer({ config: { host: "127.0.0.1", port: 0 }, app, ...(observe && { observe }) });
const plain = await listen();
const counted = await listen(createRequestObserver({ routes: ROUTES, metrics }));
const logged = await listen(createRequestObserver({ routes: ROUTES, metrics, logger }));
process.send?.({ plain: plain.url, metrics: counted.url, logged: logged.url });
process.on("message", (message) => {
  if (message !== "cpu") return;
  const used = process.cpuUsage();
  process.send?.({ cpu: used.user + used.system });
});
process.on("disconnect", () => process.exit(0));
