import { parseArgs } from "node:util";
import { loadConfig, type PaymentConfig } from "../config.js";
import { createApp, createChallengeFastPath, startServer } from "../http/index.js";
import {
  createPaymentGate,
  paidRecordOptionsFromConfig,
  paymentGateOptionsFromConfig,
  type PaymentGate,
} from "../payment/index.js";
import { createSnapshotEngine, createUrlPolicy } from "../snapshot/index.js";
import { SERVICE_VERSION } from "../version.js";
import { UsageError, type Command } from "./command.js";

/** In-flight requests get the whole snapshot deadline plus this much to finish on shutdown. */
export const SHUTDOWN_MARGIN_MS = 5_000;

/** The payment side of `serve`: the gate, what the first line says of it, and what it started. */
interface PaymentSetup {
  gate: PaymentGate;
  /** Said on the first output line. */
  mode: string;
  /** How to pay this service, given its URL (devnet mode: a command that works as it is). */
  howToPay?: (serviceUrl: string) => string;
  /** Stops the devnet when this start brought it up; after the server has closed. */
  close(): Promise<void>;
}

/**
 * X402_PAY_TO set: the configured networks and facilitator, whose /supported is fetched in the
 * background; while it is down the paid route answers 503 (docs/contract.md §7.5). Unset: the
 * embedded devnet (started, or reused when already running on its ports), offering only
 * eip155:84532 (§7.7); loaded only then.
 */
async function setupPayment(config: PaymentConfig): Promise<PaymentSetup> {
  const refusals = {
    proofReleases: config.proofReleases,
    refusedPerPayerPerMinute: config.refusedPerPayerPerMinute,
  };
  if (config.payTo) {
    const gate = createPaymentGate({
      ...paymentGateOptionsFromConfig(config),
      ...paidRecordOptionsFromConfig(config),
      ...refusals,
    });
    void gate.warmUp();
    return {
      gate,
      mode: `x402 on ${config.networks.join(", ")}, ${config.priceUsdc} USDC per snapshot to ${config.payTo}, facilitator ${config.facilitatorUrl}`,
      close: async () => {},
    };
  }

  const { startDevnet } = await import("../devnet/index.js");
  const devnet = await startDevnet({
    rpcPort: config.devnetRpcPort,
    facilitatorPort: config.devnetFacilitatorPort,
  });
  try {
    const gate = createPaymentGate({
      ...paymentGateOptionsFromConfig(config, {
        payTo: devnet.payTo,
        facilitatorUrl: devnet.facilitatorUrl,
        network: devnet.network,
      }),
      ...paidRecordOptionsFromConfig(config, devnet),
      ...refusals,
    });
    await gate.warmUp();
    return {
      gate,
      mode:
        `DEVNET: local payment network, no real money — chain ${devnet.network} at ${devnet.rpcUrl}` +
        `${devnet.reused ? " (reused)" : ""}, facilitator ${devnet.facilitatorUrl}, USDC ${devnet.usdcAddress}, ` +
        `payTo ${devnet.payTo}`,
      howToPay: (serviceUrl) =>
        `pay with: ./bin/secsnap.js pay https://example.com --api ${serviceUrl} (funded test account 2)`,
      close: () => devnet.close(),
    };
  } catch (err) {
    await devnet.close();
    throw err;
  }
}

function nextShutdownSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
      // A second signal while draining means "now": skip the grace period.
      const force = () => process.exit(1);
      process.once("SIGTERM", force);
      process.once("SIGINT", force);
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
    "The first output line states the payment mode and the URL.",
    "SIGTERM/SIGINT: stop accepting, let running requests finish, exit 0.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const { positionals } = parseArgs({ args, options: {}, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError("serve takes no arguments");
    const config = loadConfig(env);

    const signal = nextShutdownSignal();
    const payment = await setupPayment(config.payment);
    const engine = createSnapshotEngine(config.snapshot);
    const urlPolicy = createUrlPolicy(config.snapshot);
    const { gate } = payment;
    const app = createApp({
      engine,
      urlPolicy,
      paymentMiddleware: gate.middleware,
      priceUsdc: config.payment.priceUsdc,
    });
    const front = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });

    let server;
    try {
      server = await startServer({ config, app, front });
    } catch (err) {
      await Promise.allSettled([engine.close(), payment.close()]);
      const code = (err as NodeJS.ErrnoException).code ?? "error";
      stderr.write(`cannot listen on ${config.host}:${config.port}: ${code}\n`);
      return 1;
    }
    const howToPay = payment.howToPay ? `; ${payment.howToPay(server.url)}` : "";
    stdout.write(
      `secsnap ${SERVICE_VERSION} listening on ${server.url} (mode: ${payment.mode})${howToPay}\n`,
    );

    stderr.write(`${await signal}: shutting down, waiting for running requests\n`);
    await server.close(config.snapshot.timeoutMs + SHUTDOWN_MARGIN_MS);
    await engine.close();
    await payment.close();
    stderr.write("stopped\n");
    return 0;
  },
};
