/**
 * Ctrl-C on `secsnap serve` (devnet): the terminal sends SIGINT to the whole foreground process
 * group, and `npm start` forwards it once more. A paid request in flight still finishes verify →
 * snapshot → settle and gets its 200; the chain (anvil, in its own group) outlives the drain and
 * stops last.
 */
import { mkdtemp, rm } from "node:fs/promises";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createPublicClient, http, type Address, type Hex } from "viem";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEV_USDC_ABI, DEVNET_USDC_ADDRESS } from "../../../src/devnet/constants.js";
import { startTarget } from "../../fixtures/held-target.js";
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

it(
  "a process-group SIGINT during a paid request: the client gets its 200, the transfer is on chain, anvil stops last",
  { timeout: 180_000 },
  async () => {
    const { child, exited } = spawnServe(await devnetServeSettings(target.port), {
      detached: true,
    });
    const stopping = waitForLine(child.stderr, /^SIGINT: shutting down/);
    let keeper: Socket | undefined;
    try {
      const { first, base } = await listeningLine(child);
      const rpcUrl = / at (http:\/\/127\.0\.0\.1:\d+)/.exec(first)?.[1] as string;
      const payTo = /payTo (0x[0-9a-fA-F]{40})/.exec(first)?.[1] as Address;
      expect([base, rpcUrl, payTo].every(Boolean), first).toBe(true);
      const chain = createPublicClient({ transport: http(rpcUrl) });
      const balance = () =>
        chain.readContract({
          address: DEVNET_USDC_ADDRESS,
          abi: DEV_USDC_ABI,
          functionName: "balanceOf",
          args: [payTo],
        });
      const before = await balance();

      // The paid snapshot waits on the held target when Ctrl-C comes.
      const arrived = target.hold();
      const paying = runCli(["pay", target.url, "--api", base], cleanEnv());
      await arrived;
      keeper = await openRequest(base);
      process.kill(-child.pid!, "SIGINT"); // the terminal: the whole foreground group
      await stopping;
      process.kill(child.pid!, "SIGINT"); // npm start: the same Ctrl-C, forwarded a moment later
      target.release();

      const paid = await paying;
      expect(paid, paid.stderr + paid.stdout).toMatchObject({ code: 0 });
      expect(JSON.parse(paid.stdout)).toMatchObject({ requested_url: target.url, reachable: true });
      const tx = /settlement transaction: (0x[0-9a-f]{64})/.exec(paid.stderr)?.[1] as Hex;
      expect(tx, paid.stderr).toBeDefined();

      // Still draining (the unfinished request), so the chain is still up: the transfer is there.
      const receipt = await chain.getTransactionReceipt({ hash: tx });
      expect(receipt.status).toBe("success");
      expect((await balance()) - before).toBe(50_000n);

      keeper.destroy();
      expect(await exited).toBe(0);
      // Anvil went with it, after the drain.
      await expect(chain.getChainId()).rejects.toThrow();
    } finally {
      keeper?.destroy();
      child.kill("SIGKILL");
    }
  },
);

it(
  "a second SIGINT a second later stops at once, saying what becomes of the paid call in flight; the client says the charge is not known yet and resends safely",
  { timeout: 180_000 },
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "secsnap-sigint-"));
    const { child, exited } = spawnServe(
      { ...(await devnetServeSettings(target.port)), DATA_DIR: dataDir },
      { detached: true },
    );
    const stopping = waitForLine(child.stderr, /^SIGINT: shutting down/);
    const stopNow = waitForLine(child.stderr, /^stopping now/);
    try {
      const { first, base } = await listeningLine(child);
      const rpcUrl = / at (http:\/\/127\.0\.0\.1:\d+)/.exec(first)?.[1] as string;
      expect([base, rpcUrl].every(Boolean), first).toBe(true);

      // The paid snapshot waits on the held target through both signals.
      const arrived = target.hold();
      const paying = runCli(
        ["pay", target.url, "--api", base, "--rpc", rpcUrl, "--timeout", "4"],
        cleanEnv(),
      );
      await arrived;
      process.kill(child.pid!, "SIGINT");
      await stopping;
      // A repeat within a second is the same Ctrl-C (npm start forwards it); this is a second one.
      await sleep(1_100);
      process.kill(child.pid!, "SIGINT");

      expect(await stopNow).toBe(
        `stopping now: 1 paid call in flight; its payment record is kept in ${dataDir} and a ` +
          "retry of the same proof is served or refused by what the chain says, charged at most " +
          "once (devnet: no real money)",
      );
      expect(await exited).toBe(1);

      const paid = await paying;
      expect(paid.code, paid.stderr).toBe(4);
      expect(paid.stderr).toMatch(
        /secsnap pay: the service did not answer \(.*\); whether you were charged is not known yet — sending the same proof again in \d+s is safe \(charged at most once\)\n/,
      );
      expect(paid.stderr).toMatch(
        /secsnap pay: the service did not answer the signed proof after \d+ sends .*; whether you were charged is what the chain says, on the next line\n/,
      );
      const last = paid.stderr.trimEnd().split("\n").at(-1) ?? "";
      expect(last).toMatch(/^secsnap pay: (not charged|charged|unknown whether charged): /);
    } finally {
      target.release();
      child.kill("SIGKILL");
      await rm(dataDir, { recursive: true, force: true });
    }
  },
);
