/**
 * The service under load for the payment benchmark, bundled as the CLI is (bench/lib/bundled.ts)
 * and run by plain `node`, as `secsnap serve` runs in production: no TypeScript loader in it.
 * Wired as src/cli/serve/command.ts wires it (the unpaid-challenge fast path in front of the app,
 * the per-client rate limit on both; its budget is set above what one run sends a minute), plus
 * metrics and one JSON log line per request, written to /dev/null with one write each), plus
 * a bare node:http server replaying the exact bytes of its 402 (the floor the answer's size sets).
 * Sends `{ url, bareUrl }` over IPC once both listen, answers "cpu" with `{ cpu }` (its CPU time
 * in µs); exits when the parent disconnects.
 */
import { Buffer } from "node:buffer";
import { openSync, writeSync } from "node:fs";
import { createServer } from "node:http";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { createLogger } from "../../src/cli/serve/logger.js";
import {
  ClientRateLimit,
  ROUTES,
  ServiceMetrics,
  createApp,
  createChallengeFastPath,
  createRequestObserver,
  startServer,
} from "../../src/http/index.js";
import { createPaymentGate } from "../../src/payment/index.js";
import { createSnapshotEngine, createUrlPolicy } from "../../src/snapshot/index.js";

const body = JSON.stringify({ url: "https://example.com/" });

async function startBareReplay(challengeUrl) {
  const res = await globalThis.fetch(challengeUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const replayBody = Buffer.from(await res.arrayBuffer());
  const headers = {};
  res.headers.forEach((value, name) => {
    if (!["date", "connection", "keep-alive", "content-length"].includes(name)) {
      headers[name] = value;
    }
  });
  headers["content-length"] = String(replayBody.length);
  const server = createServer((req, out) => {
    req.resume();
    req.on("end", () => out.writeHead(res.status, headers).end(replayBody));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${server.address().port}`;
}

const engineOptions = {
  timeoutMs: 10_000,
  maxRedirects: 10,
  allowedPorts: new Set([80, 443]),
  allowCidrs: [],
  dnsServers: [],
};
const metrics = new ServiceMetrics();
const sink = openSync("/dev/null", "w");
const logger = createLogger("info", { write: (line) => writeSync(sink, line) });
const gate = createPaymentGate({
  events: metrics,
  payTo: process.env.PAY_TO,
  networks: ["eip155:84532"],
  priceUsdc: "0.05",
  facilitatorUrl: process.env.FACILITATOR_URL,
  log: () => {},
});
if (!(await gate.warmUp())) throw new Error("facilitator /supported failed");
const urlPolicy = createUrlPolicy(engineOptions);
const rateLimit = new ClientRateLimit(new RateLimiterMemory({ points: 1e9, duration: 60 }));
const app = createApp({
  engine: metrics.instrumentEngine(createSnapshotEngine(engineOptions)),
  urlPolicy,
  payment: gate.route,
  log: () => {},
  rateLimit,
});
const front = createChallengeFastPath({
  urlPolicy,
  unpaidChallenge: gate.unpaidChallenge,
  rateLimit,
});
const observe = createRequestObserver({ routes: ROUTES, metrics, logger, priceUsdc: "0.05" });
const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front, observe });
const bareUrl = await startBareReplay(`${server.url}/v1/snapshot`);
process.send?.({ url: server.url, bareUrl });
// The parent asks for this process's CPU time (µs) around a round: the server's cost per request.
process.on("message", (m) => {
  if (m !== "cpu") return;
  const used = process.cpuUsage();
  process.send?.({ cpu: used.user + used.system });
});
process.on("disconnect", () => process.exit(0));
