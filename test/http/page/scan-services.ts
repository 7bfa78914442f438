/**
 * For the scan form's tests (scan-form.e2e.test.ts, home.browser.test.ts): the real devnet
 * (anvil + DevUSDC + the project's facilitator), a hostile local site the services may scan,
 * and two services over it — devnet mode (the form pays from the funded devnet account) and
 * production mode (X402_PAY_TO set: the form shows the challenge).
 */
import { RateLimiterMemory } from "rate-limiter-flexible";
import { createPublicClient, http, type Address, type PublicClient } from "viem";
import { DEFAULT_PAYER } from "../../../src/devnet/constants.js";
import { startDevnet, type Devnet } from "../../../src/devnet/devnet.js";
import {
  ClientRateLimit,
  createApp,
  createChallengeFastPath,
  startServer,
  type RunningServer,
} from "../../../src/http/index.js";
import { createPaymentGate, type ServiceSigner } from "../../../src/payment/index.js";
import { newPrivateJwk, signerFromJwk } from "../../../src/payment/signing/index.js";
import {
  createSnapshotEngine,
  createUrlPolicy,
  type SnapshotEngine,
} from "../../../src/snapshot/index.js";
import { PUBLIC_CIDRS, closedPort, respond, startHttpTarget } from "../../fixtures/targets.js";
import { usdcBalance } from "../../fixtures/usdc.js";
import { devnetGate } from "../../fixtures/paid-devnet.js";

export const PRICE_UNITS = 50_000n;
/** What the hostile site puts in its header values and body. */
export const HOSTILE = "<script>alert(1)</script>";

export interface ScanServices {
  devnet: Devnet;
  /** Devnet mode, with a per-client budget of free answers. */
  devnetUrl: string;
  /** Production mode: a configured payee, no devnet payer. */
  productionUrl: string;
  /** A site on a local address the services may scan, whose headers carry `<script>`. */
  hostileUrl: string;
  /** A URL the services may scan whose port is closed: a failing scan, left unpaid. */
  closedUrl: string;
  /** Another devnet-mode service with these budgets, behind a proxy on 127.0.0.1. */
  serveDevnet(budgets: DevnetBudgets): Promise<string>;
  /** Another devnet-mode service whose page checks the proofs against a key that signs nothing. */
  serveDevnetCheckingAnotherKey(): Promise<string>;
  payer: Address;
  balance(owner: Address): Promise<bigint>;
  close(): Promise<void>;
}

/** The budgets of a devnet-mode service in front of which 127.0.0.1 is a trusted proxy. */
export interface DevnetBudgets {
  /** SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE: the devnet payer's unpaid snapshots a minute. */
  refusedPerPayerPerMinute: number;
  /** The form's failing scans per client and minute. */
  failingFormScansPerClient: number;
}

export async function startScanServices(opts: { perMinute: number }): Promise<ScanServices> {
  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  const closers: Array<() => Promise<unknown>> = [() => devnet.close()];
  const close = async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
  };
  try {
    const chain: PublicClient = createPublicClient({ transport: http(devnet.rpcUrl) });
    const site = await startHttpTarget({
      routes: {
        "/": respond.html(`<!doctype html><title>${HOSTILE}</title>`, {
          "content-security-policy": `default-src ${HOSTILE}`,
          "x-frame-options": HOSTILE,
          "referrer-policy": HOSTILE,
          "set-cookie": `session=${HOSTILE}`,
          "access-control-allow-origin": "*",
        }),
      },
    });
    closers.push(() => site.close());
    const probePort = await closedPort();
    const allowedPorts = new Set([site.port, probePort]);
    const engine: SnapshotEngine = createSnapshotEngine({
      timeoutMs: 10_000,
      maxRedirects: 5,
      allowedPorts,
      allowCidrs: PUBLIC_CIDRS,
      dnsServers: [],
      httpsProbePort: probePort,
    });
    closers.push(() => engine.close());
    const urlPolicy = createUrlPolicy({ allowedPorts, allowCidrs: PUBLIC_CIDRS });

    const serve = async (
      mode: "devnet" | "production",
      budgets?: DevnetBudgets,
      pageSigner?: Promise<ServiceSigner>,
    ): Promise<RunningServer> => {
      const gate = createPaymentGate({
        ...devnetGate(devnet),
        ...(budgets && { refusedPerPayerPerMinute: budgets.refusedPerPayerPerMinute }),
      });
      if (!(await gate.warmUp())) throw new Error("the devnet's facilitator did not answer");
      const rateLimit = new ClientRateLimit(
        new RateLimiterMemory({ points: opts.perMinute, duration: 60 }),
      );
      const app = createApp({
        engine,
        urlPolicy,
        payment: gate.route,
        formPayment: gate.form,
        signer: pageSigner ?? gate.signer,
        networks: [devnet.network],
        payTo: devnet.payTo,
        rateLimit,
        log: () => {},
        ...(mode === "devnet" && { devnet: true, devnetPayer: DEFAULT_PAYER }),
        ...(budgets && {
          trustedProxies: ["127.0.0.1"],
          failingFormScansPerClient: budgets.failingFormScansPerClient,
        }),
      });
      const front = createChallengeFastPath({
        urlPolicy,
        unpaidChallenge: gate.unpaidChallenge,
        rateLimit,
      });
      const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front });
      closers.push(() => server.close(1_000));
      return server;
    };
    const devnetServer = await serve("devnet");
    const productionServer = await serve("production");
    return {
      devnet,
      devnetUrl: devnetServer.url,
      productionUrl: productionServer.url,
      hostileUrl: site.url("/"),
      closedUrl: `http://${new URL(site.url("/")).hostname}:${probePort}/`,
      serveDevnet: async (budgets) => (await serve("devnet", budgets)).url,
      serveDevnetCheckingAnotherKey: async () => {
        const otherKey = newPrivateJwk().then((jwk) => signerFromJwk(jwk));
        return (await serve("devnet", undefined, otherKey)).url;
      },
      payer: DEFAULT_PAYER.address,
      balance: (owner) => usdcBalance(chain, devnet.usdcAddress, owner),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
