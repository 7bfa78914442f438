import { createPublicClient, formatEther, http } from "viem";
import { isListenError, listenError } from "../config-error.js";
import { loadFacilitatorConfig } from "../config.js";
import {
  fetchRpcChainId,
  startFacilitator,
  type RunningFacilitator,
} from "../facilitator/index.js";
import type { Command } from "./command.js";

/**
 * The facilitator's chain is the RPC's: FACILITATOR_NETWORKS may only name it. The errors name
 * the variables, for the operator to fix.
 */
async function networksOfRpc(rpcUrl: string, wanted: string[] | undefined): Promise<string[]> {
  let rpcChainId: number;
  try {
    rpcChainId = await fetchRpcChainId(rpcUrl);
  } catch (error) {
    throw new Error(
      `FACILITATOR_RPC_URL did not answer eth_chainId: ${(error as Error).message.split("\n")[0]}`,
    );
  }
  const networks = wanted ?? [`eip155:${rpcChainId}`];
  if (Number(networks[0]?.split(":")[1]) !== rpcChainId) {
    throw new Error(
      `FACILITATOR_NETWORKS is ${networks.join(",")} but FACILITATOR_RPC_URL is chain ${rpcChainId}`,
    );
  }
  return networks;
}

/** An unfunded gas wallet fails every settlement: say so at start rather than per payment. */
async function reportGasBalance(
  rpcUrl: string,
  running: RunningFacilitator,
  log: (line: string) => void,
): Promise<void> {
  try {
    const client = createPublicClient({ transport: http(rpcUrl, { timeout: 5_000 }) });
    const balance = await client.getBalance({ address: running.address });
    log(
      balance === 0n
        ? `warning: gas payer ${running.address} holds no ETH; settlements will fail until it is funded`
        : `gas payer balance: ${formatEther(balance)} ETH`,
    );
  } catch {
    log("warning: could not read the gas payer's balance");
  }
}

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
    const log = (line: string) => stdout.write(`${line}\n`);
    const config = loadFacilitatorConfig(env); // a ConfigError is printed by runCli as one line
    let running: RunningFacilitator;
    try {
      const networks = await networksOfRpc(config.rpcUrl, config.networks);
      running = await startFacilitator({
        rpcUrl: config.rpcUrl,
        privateKey: config.privateKey,
        networks,
        host: config.host,
        port: config.port,
        authToken: config.authToken,
        log,
      });
      log(
        `secsnap facilitator listening on ${running.url} for ${networks.join(", ")}; gas payer ${running.address}${config.authToken ? "; bearer token required" : ""}`,
      );
    } catch (err) {
      // An unreachable or mismatched RPC, a busy port: the operator's to fix, not a crash: one
      // line, naming the variable when it is the address.
      const message = isListenError(err)
        ? listenError(err, {
            host: config.host,
            port: config.port,
            portVariable: "FACILITATOR_PORT",
            hostVariable: "FACILITATOR_HOST",
          }).message
        : (err as Error).message.split("\n")[0];
      stderr.write(`secsnap facilitator: ${message}\n`);
      return 1;
    }
    await reportGasBalance(config.rpcUrl, running, log);

    const signal = await new Promise<NodeJS.Signals>((resolve) => {
      process.once("SIGINT", resolve);
      process.once("SIGTERM", resolve);
    });
    log(`facilitator: ${signal}, shutting down`);
    await running.close();
    return 0;
  },
};
