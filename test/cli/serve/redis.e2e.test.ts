/**
 * Two real `secsnap serve` processes with one REDIS_URL (a real redis-server) on one devnet:
 * an instance killed with SIGKILL after its payment settled but before it answered; the client's
 * retry with the same proof, through the other instance, gets the report, and the payer paid
 * once. Money checked on chain.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/devnet.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { redisServerBinary, startRedis, type RedisProcess } from "../../fixtures/redis.js";
import { TEST_SIGNING_KEY } from "../../fixtures/signing-key.js";
import { usdcBalance } from "../../fixtures/usdc.js";
import { cleanEnv, spawnCli } from "../run.js";

const PRICE_UNITS = 50_000n;
/** Both instances say the same public URL, as behind one load balancer. */
const PUBLIC_URL = "http://secsnap.test";

interface Instance {
  child: ChildProcessWithoutNullStreams;
  url: string;
  exited: Promise<number | null>;
}

let redis: RedisProcess;
let devnet: Devnet;
let chain: PublicClient;
let proxy: FacilitatorProxy;
let target: { server: Server; url: string; port: number; hits: () => number };
const instances: Instance[] = [];

async function startTarget(): Promise<typeof target> {
  let hits = 0;
  const server = createServer((req, res) => {
    const root = req.url === "/";
    // The CORS probe (it carries an Origin) asks for the page once more: not another snapshot.
    if (root && req.headers.origin === undefined) hits++;
    res.writeHead(root ? 200 : 404).end("ok\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/`, port, hits: () => hits };
}

async function serve(): Promise<Instance> {
  const child = spawnCli(
    ["serve"],
    cleanEnv({
      PORT: "0",
      HOST: "127.0.0.1",
      PUBLIC_URL,
      REDIS_URL: redis.url,
      SIGNING_KEY: TEST_SIGNING_KEY,
      X402_PAY_TO: devnet.payTo,
      X402_NETWORKS: "base-sepolia",
      X402_FACILITATOR_URL: proxy.url,
      X402_RPC_URL_BASE_SEPOLIA: devnet.rpcUrl,
      SNAPSHOT_ALLOW_CIDRS: "127.0.0.0/8",
      SNAPSHOT_ALLOWED_PORTS: `80,443,${target.port}`,
    }),
  );
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) resolve(match[1]);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("close", (code) => reject(new Error(`serve exited (${code}): ${output}`)));
  });
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once("close", (code) => resolve(code));
  });
  const instance = { child, url, exited };
  instances.push(instance);
  return instance;
}

function post(base: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url: target.url }),
  });
}

beforeAll(async () => {
  if (!redisServerBinary) return;
  redis = await startRedis();
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  target = await startTarget();
}, 120_000);

afterAll(async () => {
  for (const instance of instances) {
    if (instance.child.exitCode === null) instance.child.kill("SIGKILL");
  }
  await Promise.all(instances.map((i) => i.exited));
  await proxy?.close();
  await new Promise<void>((resolve) => (target ? target.server.close(() => resolve()) : resolve()));
  await devnet?.close();
  await redis?.close();
});

describe.skipIf(!redisServerBinary)("two serve processes sharing REDIS_URL", () => {
  it("one killed after settling, before answering: the retry through the other gets the report; one transfer", async () => {
    const [a, b] = [await serve(), await serve()];
    const account = privateKeyToAccount(devnet.payerPrivateKeys[0]!);
    const before = await usdcBalance(chain, devnet.usdcAddress, account.address);

    const unpaid = await post(a.url);
    expect(unpaid.status).toBe(402);
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: account });
    const payload = await client.createPaymentPayload(
      decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!),
    );
    const headers = new x402HTTPClient(client).encodePaymentSignatureHeader(payload);

    // A settles (the transfer lands), and is killed while waiting for the settle's answer.
    proxy.failNextSettle("settle-then-hold");
    const lost = post(a.url, headers).then(
      (r) => r.status,
      () => "connection lost",
    );
    await expect.poll(() => proxy.settles.held, { timeout: 30_000 }).toBe(1);
    expect(before - (await usdcBalance(chain, devnet.usdcAddress, account.address))).toBe(
      PRICE_UNITS,
    );
    a.child.kill("SIGKILL");
    expect(await lost).toBe("connection lost");
    expect(target.hits()).toBe(1);

    // The client retries with the same proof; the load balancer sends it to B.
    let retry = await post(b.url, headers);
    while (retry.status === 409) {
      // A's lease on the payment ends unrenewed; Retry-After says when to come back.
      expect(Number(retry.headers.get("retry-after"))).toBeGreaterThan(0);
      await retry.text();
      await new Promise((resolve) => setTimeout(resolve, 500));
      retry = await post(b.url, headers);
    }
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ requested_url: target.url, reachable: true });
    const receipt = decodePaymentResponseHeader(retry.headers.get("payment-response")!);
    expect(receipt.success).toBe(true);
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    // No second snapshot, no second transfer; served once, the proof buys nothing more.
    expect(target.hits()).toBe(1);
    expect(before - (await usdcBalance(chain, devnet.usdcAddress, account.address))).toBe(
      PRICE_UNITS,
    );
    expect((await post(b.url, headers)).status).toBe(402);

    // SIGTERM: B closes its Redis connection and exits cleanly.
    b.child.kill("SIGTERM");
    expect(await b.exited).toBe(0);
  }, 90_000);
});
