/**
 * Draining (docs/payment.md, "Draining"): `secsnap serve` as a real process, in production mode
 * against a real devnet behind the facilitator proxy. SIGTERM while a settlement takes longer
 * than the listener waits for running requests (SNAPSHOT_TIMEOUT_MS + 5 s): the process stays
 * until the settlement has answered and is recorded, then exits 0. One transfer, on chain.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/devnet.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { startCountingSite, type CountingSite } from "../../fixtures/targets.js";
import { usdcBalance } from "../../fixtures/usdc.js";
import { listeningLine, spawnServe, waitForLine } from "../run.js";

let devnet: Devnet;
let chain: PublicClient;
let proxy: FacilitatorProxy;
let target: CountingSite;

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  target = await startCountingSite();
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await new Promise<void>((resolve) => (target ? target.server.close(() => resolve()) : resolve()));
  await devnet?.close();
});

it(
  "SIGTERM during a long settlement: the process waits for it, then exits 0; one transfer",
  {
    timeout: 120_000,
  },
  async () => {
    const { child, exited } = spawnServe({
      X402_PAY_TO: devnet.payTo,
      X402_NETWORKS: "base-sepolia",
      X402_FACILITATOR_URL: proxy.url,
      X402_RPC_URL_BASE_SEPOLIA: devnet.rpcUrl,
      SNAPSHOT_TIMEOUT_MS: "1000",
      SHUTDOWN_GRACE_MS: "0",
      SNAPSHOT_ALLOW_CIDRS: "127.0.0.0/8",
      SNAPSHOT_ALLOWED_PORTS: `${new URL(target.url).port},${target.probePort}`,
      METRICS_PORT: "off",
    });
    try {
      const { base } = await listeningLine(child);
      const post = (headers: Record<string, string> = {}) =>
        fetch(`${base}/v1/snapshot`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ url: target.url }),
        });
      const unpaid = await post();
      expect(unpaid.status).toBe(402);
      const account = privateKeyToAccount(devnet.payerPrivateKeys[0]!);
      const before = await usdcBalance(chain, devnet.usdcAddress, account.address);
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: account });
      const payload = await client.createPaymentPayload(
        decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED")!),
      );
      const headers = new x402HTTPClient(client).encodePaymentSignatureHeader(payload);

      const held = proxy.holdNextSettle();
      const paying = post(headers).catch((error: unknown) => error);
      await held.settled;
      const waiting = waitForLine(child.stderr, /^waiting for 1 paid call\(s\) still settling/);
      child.kill("SIGTERM");
      // The listener has given up on the request (its deadline passed); the settlement has not
      // answered yet, and the process is still there for it.
      await waiting;
      expect(child.exitCode).toBeNull();
      held.release();

      expect(await exited).toBe(0);
      await paying;
      expect(before - (await usdcBalance(chain, devnet.usdcAddress, account.address))).toBe(
        50_000n,
      );
      expect(proxy.settles.seen).toBe(1);
    } finally {
      child.kill("SIGKILL");
    }
  },
);
