import type { MiddlewareHandler } from "hono";
import type { Config } from "../config.js";
import { startDevnet } from "../devnet/devnet.js";
import { createPaymentGate, paymentGateOptionsFromConfig, type PaymentGate } from "./gate.js";

/** What the payment layer hands to `serve` (same shape as serve.ts's PaymentSetup). */
export interface X402Setup {
  /** Said on the service's first output line. */
  mode: string;
  /** How to pay this service, given its URL (devnet mode: a command that works as it is). */
  howToPay?: (serviceUrl: string) => string;
  middleware: MiddlewareHandler;
  /** The prepared unpaid challenge, for the server's fast path. */
  unpaidChallenge: PaymentGate["unpaidChallenge"];
  /** Stops what this setup started (the devnet, when it started one). */
  close(): Promise<void>;
}

/**
 * X402_PAY_TO set: the configured networks and facilitator. Unset: the embedded devnet
 * (started, or reused when already running on its ports), offering only eip155:84532.
 * The facilitator's /supported is fetched in the background; if it is down the service still
 * starts and answers 503 on the paid route until it comes back.
 */
export async function setupX402Payment(
  config: Config,
  log: (line: string) => void = (line) => console.error(line),
): Promise<X402Setup> {
  const payment = config.payment;
  const refusals = {
    proofReleases: payment.proofReleases,
    refusedPerPayerPerMinute: payment.refusedPerPayerPerMinute,
  };
  if (payment.payTo) {
    const gate = createPaymentGate({ ...paymentGateOptionsFromConfig(payment), ...refusals, log });
    void gate.warmUp();
    return {
      mode: `x402 on ${payment.networks.join(", ")}, ${payment.priceUsdc} USDC per snapshot to ${payment.payTo}, facilitator ${payment.facilitatorUrl}`,
      middleware: gate.middleware,
      unpaidChallenge: gate.unpaidChallenge,
      close: async () => {},
    };
  }

  const devnet = await startDevnet({
    rpcPort: payment.devnetRpcPort,
    facilitatorPort: payment.devnetFacilitatorPort,
  });
  const gate = createPaymentGate({
    ...paymentGateOptionsFromConfig(payment, {
      payTo: devnet.payTo,
      facilitatorUrl: devnet.facilitatorUrl,
      network: devnet.network,
    }),
    ...refusals,
    log,
  });
  await gate.warmUp();
  return {
    mode:
      `DEVNET: local payment network, no real money — chain ${devnet.network} at ${devnet.rpcUrl}` +
      `${devnet.reused ? " (reused)" : ""}, facilitator ${devnet.facilitatorUrl}, USDC ${devnet.usdcAddress}, ` +
      `payTo ${devnet.payTo}`,
    howToPay: (serviceUrl) =>
      `pay with: ./bin/secsnap.js pay https://example.com --api ${serviceUrl} (funded test account 2)`,
    middleware: gate.middleware,
    unpaidChallenge: gate.unpaidChallenge,
    close: () => devnet.close(),
  };
}
