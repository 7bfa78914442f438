import { StartupError } from "../../config-error.js";
import { NETWORK_IDS, TEST_NETWORKS, type PaymentConfig } from "../../config.js";
import type { ServiceMetrics } from "../../http/index.js";
import type { PaymentRecordStore } from "../../store/index.js";
import type { DevnetAccount } from "../../devnet/index.js";
import {
  createPaymentGate,
  paidRecordOptionsFromConfig,
  paymentGateOptionsFromConfig,
  type PaymentGate,
  type PrivateJwk,
  type SharedState,
} from "../../payment/index.js";

/**
 * Where `secsnap pay` looks for a devnet offer's chain when given no --rpc (src/cli/pay/charge.ts).
 */
const DEFAULT_DEVNET_RPC = "http://127.0.0.1:8545";

/** The payment side of `serve`: the gate, what the first line says of it, and what it started. */
export interface PaymentSetup {
  gate: PaymentGate;
  /** Said on the first output line. */
  mode: string;
  /** The networks the challenge offers (CAIP-2), and whether they are the devnet: for the page. */
  networks: readonly string[];
  devnet: boolean;
  /** Where verify and settle go: /ready checks it is still there (liveness.ts). */
  facilitatorUrl: string;
  /** Devnet mode: the chain's JSON-RPC URL, which its facilitator settles on; checked likewise. */
  devnetRpcUrl?: string;
  /** Devnet mode: the funded test account the page names and its scan form pays from. */
  devnetPayer?: DevnetAccount;
  /** Who is paid: for the 402's example in /openapi.json. */
  payTo: `0x${string}`;
  /** How to pay this service, given its URL (devnet mode: a command that works as it is). */
  howToPay?: (serviceUrl: string) => string;
  /** Stops the devnet when this start brought it up; after the server has closed. */
  close(): Promise<void>;
}

/**
 * What the first line adds when production offers a test network (named in X402_NETWORKS): a
 * client paying there pays in tokens worth nothing, so the operator must not miss it.
 */
function testNetworkWarning(networks: readonly string[]): string {
  const test = networks.filter((name) => TEST_NETWORKS.has(name));
  if (test.length === 0) return "";
  return ` (TEST NETWORK ${test.join(", ")}: its USDC is worth nothing)`;
}

/**
 * X402_PAY_TO set: the configured networks and facilitator, whose /supported is fetched and
 * checked before listening; while it is down the paid route answers 503 (docs/contract.md §7.5). Unset: the
 * embedded devnet, offering only eip155:84532 (§7.7); loaded only then. A devnet already on
 * its ports is another instance's, which goes when that instance stops: this one starts its
 * own on free ports instead and says so on the first line.
 */
export async function setupPayment(
  config: PaymentConfig,
  publicUrl: string | undefined,
  {
    shared,
    store,
    signingKey,
  }: { shared: SharedState; store: PaymentRecordStore; signingKey: { privateJwk: PrivateJwk } },
  log: (line: string) => void,
  metrics: ServiceMetrics,
): Promise<PaymentSetup> {
  const common = {
    log,
    store,
    signingKey,
    payerBudget: shared.payerBudget(config.refusedPerPayerPerMinute),
    events: metrics,
    proofReleases: config.proofReleases,
    refusedPerPayerPerMinute: config.refusedPerPayerPerMinute,
    ...(publicUrl !== undefined && { publicUrl }),
  };
  if (config.payTo) {
    const gateOptions = paymentGateOptionsFromConfig(config);
    const gate = createPaymentGate({
      ...gateOptions,
      ...paidRecordOptionsFromConfig(config),
      ...common,
    });
    // A facilitator lacking a configured network stops the start (one line, a ConfigError);
    // one that is unreachable is one warning line, then 503 until it answers.
    await gate.warmUp();
    warnUnreadableChains(config, log);
    return {
      gate,
      networks: config.networks.map((name) => NETWORK_IDS[name]),
      devnet: false,
      facilitatorUrl: gateOptions.facilitatorUrl,
      payTo: config.payTo,
      mode: `x402 on ${config.networks.join(", ")}${testNetworkWarning(config.networks)}, ${config.priceUsdc} USDC per snapshot to ${config.payTo}, facilitator ${config.facilitatorUrl}`,
      close: async () => {},
    };
  }

  const { startDevnet, DEFAULT_PAYER } = await import("../../devnet/index.js");
  const devnet = await startDevnet({
    rpcPort: config.devnetRpcPort,
    facilitatorPort: config.devnetFacilitatorPort,
    reuse: false,
  }).catch((error: unknown) => {
    // anvil missing, seeding refused…: the start stops with one line, not a stack.
    if (error instanceof StartupError) throw error;
    const message = (error as Error).message.split("\n")[0] ?? String(error);
    throw new StartupError(`devnet: could not start: ${message}`);
  });
  // `secsnap pay` reads the chain on 127.0.0.1:8545 unless told: say where this one is.
  const rpcOption = devnet.rpcUrl === DEFAULT_DEVNET_RPC ? "" : ` --rpc ${devnet.rpcUrl}`;
  const moved =
    devnet.movedFrom.length > 0
      ? ` (own devnet on free ports: ${devnet.movedFrom.join(" and ")} held by another instance's devnet)`
      : "";
  try {
    const gate = createPaymentGate({
      ...paymentGateOptionsFromConfig(config, {
        payTo: devnet.payTo,
        facilitatorUrl: devnet.facilitatorUrl,
        network: devnet.network,
      }),
      ...paidRecordOptionsFromConfig(config, devnet),
      ...common,
    });
    await gate.warmUp();
    return {
      gate,
      networks: [devnet.network],
      devnet: true,
      facilitatorUrl: devnet.facilitatorUrl,
      devnetRpcUrl: devnet.rpcUrl,
      payTo: devnet.payTo,
      devnetPayer: DEFAULT_PAYER,
      mode:
        `DEVNET: local payment network, no real money — chain ${devnet.network} at ${devnet.rpcUrl}` +
        `, facilitator ${devnet.facilitatorUrl}${moved}, USDC ${devnet.usdcAddress}, ` +
        `payTo ${devnet.payTo}`,
      howToPay: (serviceUrl) =>
        `pay with: ./bin/secsnap.js pay https://example.com --api ${serviceUrl}${rpcOption} (funded test account ${DEFAULT_PAYER.index})`,
      close: () => devnet.close(),
    };
  } catch (err) {
    await devnet.close();
    throw err;
  }
}

/**
 * Without an RPC for a network, a settlement whose answer was lost cannot be told apart from the
 * payer spending its own nonce, so it stays a 503 (docs/payment.md, "Who decides unknown"): the
 * operator hears it at start, once per network.
 */
function warnUnreadableChains(config: PaymentConfig, log: (line: string) => void): void {
  for (const name of config.networks) {
    if (config.rpcUrls[name]) continue;
    const variable = `X402_RPC_URL_${name.toUpperCase().replace(/-/g, "_")}`;
    log(
      `${variable} is unset: a settlement on ${name} whose answer is lost stays 503 until the chain can be read; set it (docs/payment.md)`,
    );
  }
}
