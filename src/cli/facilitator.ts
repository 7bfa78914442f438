import { ConfigError } from "../config-error.js";
import { runFacilitatorCommand } from "../facilitator/command.js";
import type { Command } from "./command.js";

export const facilitatorCommand: Command = {
  usage: [
    "Usage: secsnap facilitator",
    "",
    "Runs an x402 v2 facilitator (GET /supported, POST /verify, POST /settle, GET /health) that",
    "settles USDC payments on the chain behind FACILITATOR_RPC_URL, paying gas from",
    "FACILITATOR_PRIVATE_KEY. Optional: FACILITATOR_NETWORKS, FACILITATOR_HOST (127.0.0.1),",
    "FACILITATOR_PORT (4022), FACILITATOR_AUTH_TOKEN. See docs/facilitator.md for the risks.",
    "Stops cleanly on SIGINT/SIGTERM.",
  ].join("\n"),

  async run({ env, stdout, stderr }) {
    let running: Awaited<ReturnType<typeof runFacilitatorCommand>>;
    try {
      running = await runFacilitatorCommand({
        env,
        log: (line) => stdout.write(`${line}\n`),
        handleSignals: false,
      });
    } catch (err) {
      if (err instanceof ConfigError) throw err; // main prints it as one line
      // An unreachable or mismatched RPC is the operator's to fix, not a crash: one line.
      stderr.write(`secsnap facilitator: ${(err as Error).message}\n`);
      return 1;
    }
    await new Promise<void>((resolve) => {
      const stop = (signal: NodeJS.Signals) => {
        stdout.write(`facilitator: ${signal}, shutting down\n`);
        void running.close().then(resolve);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    return 0;
  },
};
