import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { loadConfig } from "../config.js";
import {
  ClientRateLimit,
  ROUTES,
  ServiceMetrics,
  SnapshotAdmission,
  createApp,
  createChallengeFastPath,
  createRequestObserver,
  metricsApp,
  startServer,
  type ReadinessCheck,
} from "../http/index.js";
import { createSharedState } from "../payment/index.js";
import { createSnapshotEngine, createUrlPolicy } from "../snapshot/index.js";
import { SERVICE_VERSION } from "../version.js";
import { UsageError, type Command } from "./command.js";
import { createLogger } from "./logger.js";
import { rateLimitedLog } from "./rate-limited-log.js";
import { setupPayment, type PaymentSetup } from "./serve-payment.js";

/** In-flight requests get the whole snapshot deadline plus this much to finish on shutdown. */
export const SHUTDOWN_MARGIN_MS = 5_000;

/** An error, or a value the app logs beside a message (schema issues), in a few words. */
function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
}

/**
 * A repeat within this long is the same Ctrl-C: the terminal signals the whole process group and
 * `npm start` forwards the signal to its child once more.
 */
const SAME_SIGNAL_MS = 1_000;

function nextShutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      const first = performance.now();
      // A second signal while draining means "now": skip the grace period.
      const force = () => {
        if (performance.now() - first >= SAME_SIGNAL_MS) process.exit(1);
      };
      process.on("SIGTERM", force);
      process.on("SIGINT", force);
      resolve(signal);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}

export const serveCommand: Command = {
  usage: [
    "Usage: secsnap serve",
    "",
    "Starts the API on HOST:PORT (default 0.0.0.0:8080; PORT=0 picks a free port).",
    "The first output line states the payment mode and the URL; then one JSON log line per",
    "request on stdout (LOG_LEVEL). Metrics: GET /metrics on METRICS_HOST:METRICS_PORT",
    "(default 127.0.0.1:9464; off: none), never on the public port.",
    "SIGTERM/SIGINT: /ready turns 503 and new paid work is refused; after SHUTDOWN_GRACE_MS",
    "(SIGTERM only) stop accepting, let running requests finish, exit 0.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError("serve takes no arguments");
    const config = loadConfig(env);

    const signal = nextShutdownSignal();
    const logger = createLogger(config.telemetry.logLevel, stdout);
    const metrics = new ServiceMetrics();
    // Per-request events: one short line each, rate-limited (docs/security.md).
    const log = rateLimitedLog((line) => logger.warn(line));
    const appLog = (message: string, error?: unknown) =>
      log(error === undefined ? message : `${message}: ${describe(error)}`);
    // Created once: the gate's proof claims and records, and the rate counters, live here.
    const shared = await createSharedState({
      redisUrl: config.redisUrl,
      log,
      onError: () => metrics.redisError(),
    });
    let payment: PaymentSetup;
    try {
      payment = await setupPayment(config.payment, config.publicUrl, shared, log, metrics);
    } catch (err) {
      await shared.close();
      throw err;
    }
    const engine = metrics.instrumentEngine(createSnapshotEngine(config.snapshot));
    const urlPolicy = createUrlPolicy(config.snapshot);
    const { gate } = payment;
    const admission = new SnapshotAdmission(config.ops.snapshotMaxConcurrency);
    const rateLimit = new ClientRateLimit(
      shared.limiterFor({
        keyPrefix: "client",
        points: config.ops.rateLimitPerMinute,
        durationSeconds: 60,
      }),
      log,
      () => metrics.rateLimited("ip"),
    );
    const readinessChecks: ReadinessCheck[] = [
      { name: "facilitator", check: () => gate.facilitatorReady() },
      ...(shared.kind === "redis"
        ? [{ name: "redis", check: async () => (await shared.ping()) === "ok" }]
        : []),
    ];
    const app = createApp({
      engine,
      urlPolicy,
      paymentMiddleware: gate.middleware,
      priceUsdc: config.payment.priceUsdc,
      networks: payment.networks,
      devnet: payment.devnet,
      ...(config.publicUrl !== undefined && { publicUrl: config.publicUrl }),
      log: appLog,
      admission,
      readinessChecks,
      rateLimit,
      trustProxy: config.ops.trustProxy,
    });
    const front = createChallengeFastPath({
      urlPolicy,
      unpaidChallenge: gate.unpaidChallenge,
      log: appLog,
      rateLimit,
      trustProxy: config.ops.trustProxy,
    });

    const observe = createRequestObserver({
      routes: ROUTES,
      metrics,
      logger,
      priceUsdc: config.payment.priceUsdc,
    });

    let server;
    let metricsServer;
    const { metricsPort, metricsHost } = config.telemetry;
    let listening = `${config.host}:${config.port}`;
    try {
      server = await startServer({ config, app, front, observe });
      if (metricsPort !== undefined) {
        listening = `${metricsHost}:${metricsPort} (METRICS_PORT)`;
        metricsServer = await startServer({
          config: { host: metricsHost, port: metricsPort },
          app: metricsApp(metrics),
        });
      }
    } catch (err) {
      await Promise.allSettled([server?.close(0), engine.close(), payment.close(), shared.close()]);
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      stderr.write(`cannot listen on ${listening}: ${code}\n`);
      return 1;
    }
    const howToPay = payment.howToPay ? `; ${payment.howToPay(server.url)}` : "";
    stdout.write(
      `secsnap ${SERVICE_VERSION} listening on ${server.url} (mode: ${payment.mode})${howToPay}\n`,
    );
    if (metricsServer) stdout.write(`metrics on ${metricsServer.url}/metrics\n`);

    const received = await signal;
    // /ready says draining first; a load balancer polling it stops sending here during the grace
    // (SIGTERM, an orchestrator's stop; Ctrl-C at a terminal has no load balancer to wait for).
    admission.drain();
    stderr.write(`${received}: shutting down, waiting for running requests\n`);
    if (received === "SIGTERM") await sleep(config.ops.shutdownGraceMs);
    await server.close(config.snapshot.timeoutMs + SHUTDOWN_MARGIN_MS);
    await metricsServer?.close(0);
    await engine.close();
    await payment.close();
    await shared.close();
    stderr.write("stopped\n");
    return 0;
  },
};
