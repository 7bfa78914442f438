import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { listenError, type ListenTarget } from "../../config-error.js";
import { loadConfig, type Config } from "../../config.js";
import { PATHS } from "../../routes.js";
import {
  ClientRateLimit,
  ROUTES,
  ServiceMetrics,
  SnapshotAdmission,
  createApp,
  createChallengeFastPath,
  createRequestObserver,
  formScansPerClient,
  metricsApp,
  startServer,
  type NodeFront,
  type PeriodicCheck,
  type ReadinessCheck,
  type RequestObserver,
  type RunningServer,
} from "../../http/index.js";
import {
  createSharedState,
  loadServiceSigner,
  type LoadedSigner,
  type PaymentGate,
  type SharedState,
} from "../../payment/index.js";
import {
  createSnapshotEngine,
  createUrlPolicy,
  type SnapshotEngine,
} from "../../snapshot/index.js";
import {
  RedisPaymentRecordStore,
  createPaymentRecordStore,
  type PaymentRecordStore,
} from "../../store/index.js";
import { SERVICE_VERSION } from "../../version.js";
import { UsageError, type CliOutput, type Command } from "../command.js";
import { createLogger } from "./logger.js";
import { rateLimitedLog } from "./rate-limited-log.js";
import { announceLocalMode, withLocalMode } from "../local-mode.js";
import { livenessChecks } from "./liveness.js";
import { setupPayment, type PaymentSetup } from "./payment.js";

/** The addresses a listener binds to listen on every address of the machine. */
const WILDCARD_ADDRESSES: ReadonlySet<string> = new Set(["0.0.0.0", "::"]);

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

/**
 * The first SIGTERM/SIGINT; a second one a second later or more stops at once, after `stopNow`
 * has said what becomes of the paid calls it cuts off.
 */
function nextShutdownSignal(stopNow: () => void): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      const first = performance.now();
      // A second signal while draining means "now": skip the grace period.
      const force = () => {
        if (performance.now() - first < SAME_SIGNAL_MS) return;
        stopNow();
        process.exit(1);
      };
      process.on("SIGTERM", force);
      process.on("SIGINT", force);
      resolve(signal);
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}

/**
 * The line a second Ctrl-C prints before it stops at once. A paid call cut off keeps its payment
 * record (written before each outside step, docs/payment.md), so the same proof sent again is
 * served its report or refused by what the chain says, and charged at most once.
 */
function stopNowLine(paidInFlight: number, config: Config): string {
  if (paidInFlight === 0) return "stopping now: no paid call in flight";
  const calls = paidInFlight === 1 ? "1 paid call" : `${paidInFlight} paid calls`;
  const records = paidInFlight === 1 ? "its payment record is" : "their payment records are";
  const where = config.redisUrl ? "in Redis" : `in ${config.dataDir}`;
  const money = config.payment.payTo ? "" : " (devnet: no real money)";
  return (
    `stopping now: ${calls} in flight; ${records} kept ${where} and a retry of the same proof ` +
    `is served or refused by what the chain says, charged at most once${money}`
  );
}

/** What `serve` wires before listening: what the listeners serve, and what shutdown drains and closes. */
interface Service {
  /** The public listener's app, behind the request observer and the unpaid-challenge fast path. */
  app: ReturnType<typeof createApp>;
  front: NodeFront;
  observe: RequestObserver;
  /** Served by the metrics listener. */
  metrics: ServiceMetrics;
  admission: SnapshotAdmission;
  engine: SnapshotEngine;
  payment: PaymentSetup;
  shared: SharedState;
  /** /ready's background checks, stopped on shutdown. */
  liveness: PeriodicCheck[];
  /** The payment records (docs/payment.md, "The payment record"). */
  records: PaymentRecordStore;
  /** Where the key signing the reports came from, said on the first line. */
  keySource: string;
}

interface Listeners {
  server: RunningServer;
  /** None with METRICS_PORT off. */
  metricsServer: RunningServer | undefined;
}

/** The configuration, from the environment and `--allow-local` (SNAPSHOT_ALLOW_LOCAL=1). */
function readConfig(args: string[], env: NodeJS.ProcessEnv): Config {
  const { values, positionals } = parseArgs({
    args,
    options: { "allow-local": { type: "boolean", default: false } },
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError("serve takes no arguments");
  return loadConfig(withLocalMode(env, values["allow-local"]));
}

/** Everything the listeners serve, built once per start; nothing listens yet. */
async function wireService(config: Config, stdout: CliOutput): Promise<Service> {
  const logger = createLogger(config.telemetry.logLevel, stdout);
  const metrics = new ServiceMetrics();
  // Per-request events: one short line each, rate-limited (docs/security.md).
  const log = rateLimitedLog((line) => logger.warn(line));
  const appLog = (message: string, error?: unknown) =>
    log(error === undefined ? message : `${message}: ${describe(error)}`);
  const { shared, records, payment, signing } = await openStateAndPayment(config, log, metrics);
  const engine = metrics.instrumentEngine(createSnapshotEngine(config.snapshot));
  const urlPolicy = createUrlPolicy(config.snapshot);
  const { gate } = payment;
  const admission = new SnapshotAdmission(config.ops.snapshotMaxConcurrency);
  const live = livenessChecks(payment);
  const liveness = [live.facilitator, ...(live.devnet ? [live.devnet] : [])];
  const rateLimit = new ClientRateLimit(
    shared.limiterFor({
      keyPrefix: "client",
      points: config.ops.rateLimitPerMinute,
      durationSeconds: 60,
    }),
    log,
    () => metrics.rateLimited("ip"),
  );
  const app = createApp({
    engine,
    urlPolicy,
    payment: gate.route,
    mcpPayment: gate.mcp,
    formPayment: gate.form,
    signer: gate.signer,
    signingKeys: gate.signingKeys,
    snapshots: gate.snapshots,
    priceUsdc: config.payment.priceUsdc,
    networks: payment.networks,
    devnet: payment.devnet,
    payTo: payment.payTo,
    ...(payment.devnetPayer && {
      devnetPayer: payment.devnetPayer,
      failingFormScansPerClient: formScansPerClient(config.payment.refusedPerPayerPerMinute),
    }),
    ...(config.publicUrl !== undefined && { publicUrl: config.publicUrl }),
    ...(config.operatorContact !== undefined && { operatorContact: config.operatorContact }),
    log: appLog,
    admission,
    readinessChecks: readinessChecks(gate, live),
    storeWritable: () => records.writable(),
    rateLimit,
    trustedProxies: config.ops.trustedProxies,
  });
  // Devnet mode's answers are for this machine's own origins and hosts (docs/security.md,
  // "Devnet and local mode"): the fast path applies the app's rules for the mode.
  const front = createChallengeFastPath({
    urlPolicy,
    unpaidChallenge: gate.unpaidChallenge,
    log: appLog,
    rateLimit,
    trustedProxies: config.ops.trustedProxies,
    devnet: payment.devnet,
    ...(config.publicUrl !== undefined && { publicUrl: config.publicUrl }),
  });
  const observe = createRequestObserver({
    routes: ROUTES,
    metrics,
    logger,
    priceUsdc: config.payment.priceUsdc,
  });
  return {
    app,
    front,
    observe,
    metrics,
    admission,
    engine,
    payment,
    shared,
    liveness,
    records,
    keySource: signing.source,
  };
}

/** The shared state, then the payment side on it; the state is closed again if payment cannot start. */
async function openStateAndPayment(
  config: Config,
  log: (line: string) => void,
  metrics: ServiceMetrics,
): Promise<{
  shared: SharedState;
  records: PaymentRecordStore;
  payment: PaymentSetup;
  signing: LoadedSigner;
}> {
  // Created once: the rate counters live here.
  const shared = await createSharedState({
    redisUrl: config.redisUrl,
    log,
    onError: () => metrics.redisError(),
  });
  // The durable payment records: the embedded database in DATA_DIR, or Redis with REDIS_URL.
  const records = await createPaymentRecordStore({
    redisUrl: config.redisUrl,
    dataDir: config.dataDir,
    recordTtlMs: config.payment.paidRecordTtlSeconds * 1000,
    log,
  }).catch(async (err: unknown) => {
    await shared.close();
    throw err;
  });
  if (records instanceof RedisPaymentRecordStore) {
    const warning = await records.persistenceWarning().catch(() => undefined);
    if (warning !== undefined) log(warning);
  }
  try {
    // After the store: DATA_DIR is locked, so no other process makes its own key there.
    const signing = await loadServiceSigner(config);
    const payment = await setupPayment(
      config.payment,
      config.publicUrl,
      { shared, store: records, signingKey: { privateJwk: signing.jwk } },
      log,
      metrics,
    );
    return { shared, records, payment, signing };
  } catch (err) {
    await Promise.allSettled([shared.close(), records.close()]);
    throw err;
  }
}

/**
 * What /ready asks besides the store: the facilitator (its /supported known and checked, and
 * still answering), and in devnet mode the chain it settles on.
 */
function readinessChecks(
  gate: PaymentGate,
  live: ReturnType<typeof livenessChecks>,
): ReadinessCheck[] {
  return [
    {
      name: "facilitator",
      check: async () => (await live.facilitator.check()) && (await gate.facilitatorReady()),
    },
    ...(live.devnet ? [live.devnet] : []),
  ];
}

/**
 * The public listener, then the metrics one. Undefined when one cannot be bound: then what was
 * wired is closed and one line names the variable to change (a busy PORT, an unknown HOST…).
 */
async function listen(
  config: Config,
  service: Service,
  stderr: CliOutput,
): Promise<Listeners | undefined> {
  const { app, front, observe } = service;
  let server;
  let metricsServer;
  const { metricsPort, metricsHost } = config.telemetry;
  let target: ListenTarget = {
    host: config.host,
    port: config.port,
    portVariable: "PORT",
    hostVariable: "HOST",
  };
  try {
    server = await startServer({ config, app, front, observe });
    if (metricsPort !== undefined) {
      target = {
        host: metricsHost,
        port: metricsPort,
        portVariable: "METRICS_PORT",
        hostVariable: "METRICS_HOST",
        alternative: "or METRICS_PORT=off for no metrics listener",
      };
      metricsServer = await startServer({
        config: { host: metricsHost, port: metricsPort },
        app: metricsApp(service.metrics),
      });
    }
  } catch (err) {
    for (const check of service.liveness) check.stop();
    service.payment.gate.close();
    await Promise.allSettled([
      server?.close(0),
      service.engine.close(),
      service.payment.close(),
      service.shared.close(),
      service.records.close(),
    ]);
    stderr.write(`secsnap: ${listenError(err, target).message}\n`);
    return undefined;
  }
  return { server, metricsServer };
}

/**
 * The first output line: the version, the URL, the payment mode and where the signing key came
 * from; then where the metrics are. A listener on every address says so: its URL alone
 * (loopback) would hide who can reach it.
 */
function announce(
  { server, metricsServer }: Listeners,
  { payment, keySource }: Service,
  stdout: CliOutput,
) {
  const howToPay = payment.howToPay ? `; ${payment.howToPay(server.url)}` : "";
  const everywhere = WILDCARD_ADDRESSES.has(server.address)
    ? ` and every other address of this machine (HOST ${server.address})`
    : "";
  stdout.write(
    `secsnap ${SERVICE_VERSION} listening on ${server.url}${everywhere} (mode: ${payment.mode})${howToPay}; ${keySource}\n`,
  );
  if (metricsServer) stdout.write(`metrics on ${metricsServer.url}/metrics\n`);
}

/**
 * On the signal: drain, wait the grace (SIGTERM only), stop accepting and let running requests
 * answer, wait for the settlements still under way (docs/payment.md, "Draining"), then close in
 * order: the metrics listener, the engine, payment, the shared state and the payment records.
 */
async function shutDown(
  received: NodeJS.Signals,
  config: Config,
  service: Service,
  { server, metricsServer }: Listeners,
  stderr: CliOutput,
): Promise<void> {
  // /ready says draining first; a load balancer polling it stops sending here during the grace
  // (SIGTERM, an orchestrator's stop; Ctrl-C at a terminal has no load balancer to wait for).
  service.admission.drain();
  stderr.write(`${received}: shutting down, waiting for running requests\n`);
  if (received === "SIGTERM") await sleep(config.ops.shutdownGraceMs);
  const { gate } = service.payment;
  // Running requests get the snapshot deadline; a paid call still settling then may take longer
  // (the facilitator's settle bound): its connection stays open until it has answered.
  await server.close(config.snapshot.timeoutMs + SHUTDOWN_MARGIN_MS, async () => {
    const underWay = gate.paidCallsUnderWay();
    if (underWay > 0) stderr.write(`waiting for ${underWay} paid call(s) still settling\n`);
    await gate.drain();
  });
  await gate.drain();
  gate.close();
  await metricsServer?.close(0);
  for (const check of service.liveness) check.stop();
  await service.engine.close();
  await service.payment.close();
  await service.shared.close();
  await service.records.close();
  stderr.write("stopped\n");
}

export const serveCommand: Command = {
  usage: [
    "Usage: secsnap serve [--allow-local]",
    "",
    "Starts the API on HOST:PORT (default 0.0.0.0:8080 with X402_PAY_TO, 127.0.0.1:8080 in",
    "devnet mode; PORT=0 picks a free port).",
    "The first output line states the payment mode and the URL; then one JSON log line per",
    "request on stdout (LOG_LEVEL). Metrics: GET /metrics on METRICS_HOST:METRICS_PORT",
    "(default 127.0.0.1:9464; off: none), never on the public port.",
    `SIGTERM/SIGINT: ${PATHS.ready} turns 503 and new paid work is refused; after SHUTDOWN_GRACE_MS`,
    "(SIGTERM only) stop accepting, let running requests finish, wait for settlements under",
    "way, exit 0. A second signal a second later stops at once (exit 1), saying in one line",
    "what becomes of the paid calls in flight.",
    "",
    "Options:",
    "  --allow-local  development only: snapshots of loopback and private targets on any",
    "                 port (SNAPSHOT_ALLOW_LOCAL=1), said loudly on stderr; cloud host",
    "                 services stay blocked. Devnet mode only: refused with X402_PAY_TO set, and",
    "                 on loopback only: refused with a HOST that is not.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const config = readConfig(args, env);
    if (config.snapshot.allowLocal) announceLocalMode(stderr, { serving: true });
    // Signals are caught before the service is wired; the line counts its paid calls once it is.
    const wired: { admission?: SnapshotAdmission } = {};
    const signal = nextShutdownSignal(() =>
      stderr.write(`${stopNowLine(wired.admission?.inFlight ?? 0, config)}\n`),
    );
    const service = await wireService(config, stdout);
    wired.admission = service.admission;
    const listeners = await listen(config, service, stderr);
    if (!listeners) return 1;
    announce(listeners, service, stdout);
    await shutDown(await signal, config, service, listeners, stderr);
    return 0;
  },
};
