import { createPublicClient, formatEther, http } from "viem";
import { loadFacilitatorConfig } from "../config.js";
import { fetchRpcChainId, startFacilitator } from "./app.js";
import type { RunningFacilitator } from "./app.js";

/**
 * `secsnap facilitator`: runs the x402 facilitator stand-alone from FACILITATOR_* variables
 * (see config.ts and docs/facilitator.md). Throws ConfigError (one line naming the variable)
 * for bad configuration and Error for an unreachable or mismatched RPC; the caller prints the
 * message and exits non-zero. Stops cleanly on SIGINT/SIGTERM unless `handleSignals` is false.
 */
export async function runFacilitatorCommand(
  opts: {
    env?: Record<string, string | undefined>;
    log?: (line: string) => void;
    handleSignals?: boolean;
  } = {},
): Promise<RunningFacilitator> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const config = loadFacilitatorConfig(opts.env ?? process.env);

  let rpcChainId: number;
  try {
    rpcChainId = await fetchRpcChainId(config.rpcUrl);
  } catch (error) {
    throw new Error(
      `FACILITATOR_RPC_URL did not answer eth_chainId: ${(error as Error).message.split("\n")[0]}`,
    );
  }
  const networks = config.networks ?? [`eip155:${rpcChainId}`];
  const wanted = Number(networks[0]?.split(":")[1]);
  if (wanted !== rpcChainId) {
    throw new Error(
      `FACILITATOR_NETWORKS is ${networks.join(",")} but FACILITATOR_RPC_URL is chain ${rpcChainId}`,
    );
  }

  const running = await startFacilitator({
    rpcUrl: config.rpcUrl,
    privateKey: config.privateKey,
    networks,
    host: config.host,
    port: config.port,
    authToken: config.authToken,
    checkRpc: false, // just done above, with messages naming the variables
    log,
  });
  log(
    `secsnap facilitator listening on ${running.url} for ${networks.join(", ")}; gas payer ${running.address}${config.authToken ? "; bearer token required" : ""}`,
  );

  // An unfunded gas wallet fails every settlement: say so at start rather than per payment.
  try {
    const client = createPublicClient({ transport: http(config.rpcUrl, { timeout: 5_000 }) });
    const balance = await client.getBalance({ address: running.address });
    if (balance === 0n) {
      log(
        `warning: gas payer ${running.address} holds no ETH; settlements will fail until it is funded`,
      );
    } else {
      log(`gas payer balance: ${formatEther(balance)} ETH`);
    }
  } catch {
    log("warning: could not read the gas payer's balance");
  }

  if (opts.handleSignals !== false) {
    const stop = (signal: NodeJS.Signals) => {
      log(`facilitator: ${signal}, shutting down`);
      void running.close().then(() => process.exit(0));
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  }
  return running;
}
