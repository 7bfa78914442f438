import { parseArgs } from "node:util";
import type { MiddlewareHandler } from "hono";
import { loadConfig, type Config } from "../config.js";
import { createApp, type AppEnv } from "../http/app.js";
import {
  createChallengeFastPath,
  type ChallengeFastPathOptions,
} from "../http/challenge-fast-path.js";
import { startServer } from "../http/server.js";
import { createSnapshotEngine, createUrlPolicy } from "../snapshot/index.js";
import { SERVICE_VERSION } from "../version.js";
import { UsageError, type Command } from "./command.js";

/** In-flight requests get the whole snapshot deadline plus this much to finish on shutdown. */
export const SHUTDOWN_MARGIN_MS = 5_000;

/** What the payment layer contributes to `serve`. */
export interface PaymentSetup {
  /** Said on the first output line, e.g. "unpaid" or "x402 devnet (eip155:84532)". */
  mode: string;
  /** Appended to the first line: how to pay this service at its URL. */
  howToPay?: (serviceUrl: string) => string;
  /** Inserted between the input check and the snapshot (see createApp). */
  middleware?: MiddlewareHandler<AppEnv>;
  /** The prepared 402 challenge, served without the framework once prepared. */
  unpaidChallenge?: ChallengeFastPathOptions["unpaidChallenge"];
  /** Stops whatever the payment layer started (devnet, facilitator), after the server closed. */
  close(): Promise<void>;
}

/** The x402 layer: X402_PAY_TO set → remote facilitator; unset → start or reuse the devnet. */
async function setupPayment(config: Config): Promise<PaymentSetup> {
  const { setupX402Payment } = await import("../payment/setup.js");
  return setupX402Payment(config);
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
    const payment = await setupPayment(config);
    const engine = createSnapshotEngine(config.snapshot);
    const urlPolicy = createUrlPolicy(config.snapshot);
    const app = createApp({ engine, urlPolicy, paymentMiddleware: payment.middleware });
    const front =
      payment.unpaidChallenge &&
      createChallengeFastPath({ urlPolicy, unpaidChallenge: payment.unpaidChallenge });

    let server;
    try {
      server = await startServer({ config, app, ...(front && { front }) });
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
