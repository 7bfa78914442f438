import { afterAll, beforeAll, expect, it } from "vitest";
import {
  cleanEnv,
  devnetServeSettings,
  listeningLine,
  runCli,
  spawnServe,
  waitForLine,
} from "../run.js";
import { startTarget } from "../../fixtures/held-target.js";

let target: Awaited<ReturnType<typeof startTarget>>;
beforeAll(async () => {
  target = await startTarget();
});
afterAll(() => target.close());

it(
  "serve (devnet): SIGTERM lets a paid, running snapshot finish with 200, then exits 0",
  {
    timeout: 180_000,
  },
  async () => {
    const { child, exited } = spawnServe(await devnetServeSettings(target.port));
    const stopping = waitForLine(child.stderr, /^SIGTERM: shutting down/);
    try {
      const { first, base } = await listeningLine(child);
      expect(first).toMatch(
        /^secsnap 1\.0\.0 listening on (http:\/\/\S+) \(mode: DEVNET: .+\); pay with: \.\/bin\/secsnap\.js pay https:\/\/example\.com --api \1 /,
      );

      expect(await (await fetch(`${base}/health`)).json()).toEqual({
        status: "ok",
        version: "1.0.0",
      });

      // The page offers what the challenge offers: the devnet's chain, said to be one.
      const page = await (await fetch(`${base}/`)).text();
      expect(page).toContain("Base Sepolia (eip155:84532), here the local devnet");
      expect(page).not.toContain("(eip155:8453)");

      // Unpaid: the x402 v2 challenge, as the OpenAPI document describes it.
      const unpaid = await fetch(`${base}/v1/snapshot`, {
        method: "POST",
        // A page of the service itself: devnet mode answers no other origin through CORS.
        headers: { "content-type": "application/json", origin: base },
        body: JSON.stringify({ url: target.url }),
      });
      expect(unpaid.status).toBe(402);
      const challenge = JSON.parse(
        Buffer.from(unpaid.headers.get("payment-required") ?? "", "base64").toString(),
      ) as { x402Version: number; accepts: Array<{ network: string; amount: string }> };
      expect(challenge.x402Version).toBe(2);
      expect(challenge.accepts).toEqual([
        expect.objectContaining({ network: "eip155:84532", amount: "50000" }),
      ]);
      expect(unpaid.headers.get("access-control-expose-headers")).toContain("PAYMENT-REQUIRED");
      // The body is the same offer as the x402 v1 challenge.
      expect(await unpaid.json()).toEqual({
        x402Version: 1,
        error: expect.any(String),
        accepts: [expect.objectContaining({ network: "base-sepolia", maxAmountRequired: "50000" })],
        // The signed offers (x402 offer-receipt) ride in the v1 body too.
        extensions: { "offer-receipt": { info: { offers: [expect.any(Object)] } } },
      });

      // The real x402 client pays; its snapshot then waits on the held target.
      const arrived = target.hold();
      const paying = runCli(["pay", target.url, "--api", base], cleanEnv());
      await arrived;
      child.kill("SIGTERM");
      await stopping; // the server has stopped accepting new connections
      target.release();

      const paid = await paying;
      expect(paid, paid.stderr + paid.stdout).toMatchObject({ code: 0 });
      expect(JSON.parse(paid.stdout)).toMatchObject({ requested_url: target.url, reachable: true });
      expect(paid.stderr).toMatch(/settlement transaction: 0x[0-9a-f]{64}/);
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  },
);
