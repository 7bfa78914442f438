/**
 * `secsnap serve` as a load balancer sees it (docs/operations.md, "Readiness and draining"): the
 * real process, its GET /ready and its SIGTERM. A facilitator unreachable at start keeps /ready
 * at 503 naming it until it answers; on SIGTERM /ready turns 503 `draining` first, new paid work
 * is refused with nothing charged, the paid request in flight still finishes and settles on
 * chain, then the process exits 0. A second instance started beside a first one's devnet runs
 * its own on free ports, so it stays ready, and paid, when the first stops.
 */
import { mkdtemp, rm } from "node:fs/promises";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEVNET_USDC_ADDRESS, PAYERS } from "../../../src/devnet/constants.js";
import { startTarget } from "../../fixtures/held-target.js";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { closedPort } from "../../fixtures/targets.js";
import { usdcBalance } from "../../fixtures/usdc.js";
import {
  cleanEnv,
  devnetServeSettings,
  listeningLine,
  openRequest,
  runCli,
  spawnServe,
  waitForLine,
} from "../run.js";

let target: Awaited<ReturnType<typeof startTarget>>;
beforeAll(async () => {
  target = await startTarget();
});
afterAll(() => target.close());

async function ready(base: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}/ready`);
  return { status: response.status, body: await response.json() };
}

/** Polls /ready until it is 200 (the facilitator is retried at most once a second). */
async function untilReady(base: string): Promise<{ status: number; body: unknown }> {
  for (let i = 0; ; i++) {
    const answer = await ready(base);
    if (answer.status === 200 || i === 100) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `serve` in production mode on Base Sepolia, its facilitator expected on `facilitatorPort`. */
function serveWithFacilitatorOn(facilitatorPort: number) {
  return spawnServe({
    X402_PAY_TO: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    X402_NETWORKS: "base-sepolia",
    X402_FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}`,
    SHUTDOWN_GRACE_MS: "0",
  });
}

function post(base: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url: target.url }),
  });
}

it(
  "a facilitator down at start: /ready 503 naming it, 200 once it answers; /health 200 throughout",
  { timeout: 60_000 },
  async () => {
    const facilitatorPort = await closedPort("127.0.0.1");
    const { child, exited } = serveWithFacilitatorOn(facilitatorPort);
    let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>> | undefined;
    try {
      const { base } = await listeningLine(child);
      expect(await ready(base)).toEqual({
        status: 503,
        body: { status: "not_ready", down: ["facilitator"], code: "not_ready" },
      });
      expect(await (await fetch(`${base}/health`)).json()).toEqual({
        status: "ok",
        version: "1.0.0",
      });

      facilitator = await startSupportedFacilitator(["eip155:84532"], facilitatorPort);
      expect(await untilReady(base)).toEqual({ status: 200, body: { status: "ready" } });

      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
      await facilitator?.close();
    }
  },
);

/** Polls /ready until its status is `status` (at most 20 s); the last answer. */
async function untilStatus(
  base: string,
  status: number,
): Promise<{ status: number; body: unknown }> {
  for (let i = 0; ; i++) {
    const answer = await ready(base);
    if (answer.status === status || i === 100) return answer;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

it(
  "a facilitator that goes away after it was known: /ready 503 naming it, 200 once it is back",
  { timeout: 60_000 },
  async () => {
    const facilitatorPort = await closedPort("127.0.0.1");
    let facilitator = await startSupportedFacilitator(["eip155:84532"], facilitatorPort);
    const { child, exited } = serveWithFacilitatorOn(facilitatorPort);
    try {
      const { base } = await listeningLine(child);
      expect(await untilStatus(base, 200)).toEqual({ status: 200, body: { status: "ready" } });

      // Its /supported was fetched once and is kept: only the background check can see this.
      await facilitator.close();
      expect(await untilStatus(base, 503)).toEqual({
        status: 503,
        body: { status: "not_ready", down: ["facilitator"], code: "not_ready" },
      });

      facilitator = await startSupportedFacilitator(["eip155:84532"], facilitatorPort);
      expect(await untilStatus(base, 200)).toEqual({ status: 200, body: { status: "ready" } });

      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
      await facilitator.close().catch(() => {});
    }
  },
);

/** `serve` in devnet mode on `devnet` ports with its own DATA_DIR; resolves at its first line. */
async function serveOn(devnet: { rpcPort: number; facilitatorPort: number }, dataDir: string) {
  const { child, exited } = spawnServe({
    DATA_DIR: dataDir,
    SNAPSHOT_ALLOW_CIDRS: "127.0.0.0/8",
    SNAPSHOT_ALLOWED_PORTS: String(target.port),
    DEVNET_RPC_PORT: String(devnet.rpcPort),
    DEVNET_FACILITATOR_PORT: String(devnet.facilitatorPort),
    SHUTDOWN_GRACE_MS: "0",
  });
  const { first, base } = await listeningLine(child);
  return { child, exited, first, base };
}

it(
  "a second instance beside a first one's devnet starts its own on free ports: ready and paid after the first stops",
  { timeout: 240_000 },
  async () => {
    const ports = {
      rpcPort: await closedPort("127.0.0.1"),
      facilitatorPort: await closedPort("127.0.0.1"),
    };
    const dirs = await mkdtemp(join(tmpdir(), "secsnap-two-"));
    const first = await serveOn(ports, join(dirs, "first"));
    let second: Awaited<ReturnType<typeof serveOn>> | undefined;
    try {
      expect(first.first).toContain(`at http://127.0.0.1:${ports.rpcPort},`);
      second = await serveOn(ports, join(dirs, "second"));
      // Its own chain and facilitator, said on the first line, and the pay command finds them.
      expect(second.first).toMatch(
        new RegExp(
          `own devnet on free ports: DEVNET_RPC_PORT ${ports.rpcPort} and DEVNET_FACILITATOR_PORT ${ports.facilitatorPort} held by another instance's devnet`,
        ),
      );
      const rpc = /--rpc (http:\/\/\S+)/.exec(second.first)?.[1] as string;
      expect(rpc).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(rpc).not.toBe(`http://127.0.0.1:${ports.rpcPort}`);
      expect(await untilReady(second.base)).toEqual({ status: 200, body: { status: "ready" } });

      first.child.kill("SIGTERM");
      expect(await first.exited).toBe(0);
      // The first's devnet is gone with it; the second's is not.
      await expect(
        fetch(`http://127.0.0.1:${ports.rpcPort}`, { method: "POST", body: "{}" }),
      ).rejects.toThrow();
      expect(await ready(second.base)).toEqual({ status: 200, body: { status: "ready" } });
      const paid = await runCli(
        ["pay", target.url, "--api", second.base, "--rpc", rpc],
        cleanEnv(),
      );
      expect(paid, paid.stderr + paid.stdout).toMatchObject({ code: 0 });
      expect(JSON.parse(paid.stdout)).toMatchObject({ requested_url: target.url, reachable: true });

      second.child.kill("SIGTERM");
      expect(await second.exited).toBe(0);
    } finally {
      first.child.kill("SIGKILL");
      second?.child.kill("SIGKILL");
      await rm(dirs, { recursive: true, force: true });
    }
  },
);

it(
  "SIGTERM: /ready 503 draining first, new paid work 503 and uncharged, the running paid request settles, exit 0",
  { timeout: 180_000 },
  async () => {
    const { child, exited } = spawnServe({
      ...(await devnetServeSettings(target.port)),
      // Long enough to look at /ready while the listener is still open.
      SHUTDOWN_GRACE_MS: "10000",
    });
    const stopping = waitForLine(child.stderr, /^SIGTERM: shutting down/);
    let keeper: Socket | undefined;
    try {
      const { first, base } = await listeningLine(child);
      const rpcUrl = / at (http:\/\/127\.0\.0\.1:\d+)/.exec(first)?.[1] as string;
      const payTo = /payTo (0x[0-9a-fA-F]{40})/.exec(first)?.[1] as Address;
      expect([base, rpcUrl, payTo].every(Boolean), first).toBe(true);
      const chain = createPublicClient({ transport: http(rpcUrl) });
      const balance = (owner: Address) => usdcBalance(chain, DEVNET_USDC_ADDRESS, owner);
      expect(await ready(base)).toEqual({ status: 200, body: { status: "ready" } });

      // A second payer's proof, signed now and sent once draining has begun.
      const late = privateKeyToAccount(PAYERS[3]!.privateKey);
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: late });
      const challenge = await post(base);
      const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required")!);
      const lateProof = new x402HTTPClient(client).encodePaymentSignatureHeader(
        await client.createPaymentPayload(required),
      );
      const [payToBefore, lateBefore] = [await balance(payTo), await balance(late.address)];

      // The paid snapshot waits on the held target when SIGTERM comes.
      const arrived = target.hold();
      const paying = runCli(["pay", target.url, "--api", base], cleanEnv());
      await arrived;
      keeper = await openRequest(base);
      child.kill("SIGTERM");
      await stopping;

      expect(await ready(base)).toEqual({
        status: 503,
        body: { status: "not_ready", down: ["draining"], code: "not_ready" },
      });
      expect((await fetch(`${base}/health`)).status).toBe(200);
      const refused = await post(base, lateProof);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(((await refused.json()) as { error: string }).error).toMatch(/shutting down/);

      target.release();
      const paid = await paying;
      expect(paid, paid.stderr + paid.stdout).toMatchObject({ code: 0 });
      expect(JSON.parse(paid.stdout)).toMatchObject({ requested_url: target.url, reachable: true });
      const tx = /settlement transaction: (0x[0-9a-f]{64})/.exec(paid.stderr)?.[1] as Hex;
      expect(tx, paid.stderr).toBeDefined();

      // Still draining (the unfinished request), so the chain is still up.
      expect((await chain.getTransactionReceipt({ hash: tx })).status).toBe("success");
      expect((await balance(payTo)) - payToBefore).toBe(50_000n);
      expect(await balance(late.address)).toBe(lateBefore);

      keeper.destroy();
      expect(await exited).toBe(0);
    } finally {
      keeper?.destroy();
      child.kill("SIGKILL");
    }
  },
);
