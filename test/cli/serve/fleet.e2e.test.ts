/**
 * A fleet, end to end (docs/operations.md "Running a fleet"): two `secsnap serve` processes
 * behind a real HAProxy that checks `GET /ready`, sharing a real redis-server (REDIS_URL), both
 * paid through one devnet (anvil + DevUSDC + the project's facilitator, behind a proxy that can
 * hold a settlement's answer). Money is counted on chain; the target site counts its snapshots.
 *
 * Here, not under test/payment: what is tested is `serve` run as several processes.
 */
import { connect } from "node:net";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { PAYMENT_IDENTIFIER, generatePaymentId } from "@x402/extensions/payment-identifier";
import { createPublicClient, http, type Address, type PublicClient } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/index.js";
import { startDnsServer, type DnsFixture } from "../../fixtures/dns-server.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { startLoadBalancer, type LoadBalancer } from "../../fixtures/load-balancer.js";
import { redisServerBinary, startRedis, type RedisProcess } from "../../fixtures/redis.js";
import {
  fleetEnv,
  freePort,
  startInstance,
  type ServiceInstance,
} from "../../fixtures/service-instance.js";
import { systemBinary } from "../../fixtures/system-binary.js";
import {
  PUBLIC_CIDRS,
  PUBLIC_HOST,
  respond,
  startHttpsTarget,
  type RouteHandler,
  type TargetServer,
} from "../../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../../fixtures/tls.js";
import { usdcBalance } from "../../fixtures/usdc.js";

const haproxy = systemBinary("haproxy", "haproxy");

const PRICE_UNITS = 50_000n;
const SITE = "site.test";

let redis: RedisProcess;
let devnet: Devnet;
let chain: PublicClient;
let proxy: FacilitatorProxy;
let dns: DnsFixture;
let site: TargetServer;
let siteUrl: string;
let a: ServiceInstance;
let b: ServiceInstance;
let lb: LoadBalancer;

/** Answers to `/` can be held until released, to keep a snapshot running without timing. */
let held: Promise<void> | undefined;
let releaseHeld = () => {};
let onArrival = () => {};
const home: RouteHandler = (req, res) => {
  onArrival();
  void (held ?? Promise.resolve()).then(() =>
    respond.html("<!doctype html><title>site</title>", { "x-frame-options": "DENY" })(req, res),
  );
};
function hold(): Promise<void> {
  held = new Promise<void>((resolve) => (releaseHeld = resolve));
  return new Promise<void>((resolve) => (onArrival = resolve));
}
function release() {
  held = undefined;
  releaseHeld();
}
/** Snapshots run so far: requests for the site's `/` (the CORS probe's carry an Origin). */
const snapshots = () =>
  site.requests.filter((r) => r.path === "/" && r.headers.origin === undefined).length;

describe.skipIf(!redisServerBinary || !haproxy)(
  "a fleet: two instances, HAProxy, Redis, one devnet",
  () => {
    beforeAll(async () => {
      redis = await startRedis();
      devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
      chain = createPublicClient({ transport: http(devnet.rpcUrl) });
      proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
      dns = await startDnsServer({ [SITE]: { A: [PUBLIC_HOST] } });
      const cert = await issueLeaf(await loadTestCa(), { dnsNames: [SITE] });
      site = await startHttpsTarget({ cert, routes: { "/": home } });
      siteUrl = site.url("/", SITE);

      const lbPort = await freePort();
      const env = fleetEnv({
        payTo: devnet.payTo,
        facilitatorUrl: proxy.url,
        rpcUrl: devnet.rpcUrl,
        redisUrl: redis.url,
        publicUrl: `http://127.0.0.1:${lbPort}`,
        dnsServer: dns.address,
        targetPorts: [site.port],
        allowCidrs: PUBLIC_CIDRS,
        extra: { SNAPSHOT_TIMEOUT_MS: "5000" },
      });
      a = await startInstance({ name: "a", env });
      b = await startInstance({ name: "b", env });
      await Promise.all([a.start(), b.start()]);
      lb = await startLoadBalancer(haproxy!, [a, b], { port: lbPort });
      await Promise.all([lb.waitFor("a", "UP"), lb.waitFor("b", "UP")]);
    }, 180_000);

    afterAll(async () => {
      release();
      await lb?.close();
      await Promise.all([a?.close(), b?.close()]);
      await proxy?.close();
      await site?.close();
      await dns?.close();
      await devnet?.close();
      await redis?.close();
    });

    // Each case starts from a whole fleet, whatever the one before it left down.
    afterEach(async () => {
      release();
      await redis.start();
      for (const instance of [a, b]) if (instance.pid === undefined) await instance.start();
      await Promise.all([lb.waitFor("a", "UP"), lb.waitFor("b", "UP")]);
    }, 60_000);

    const balanceOf = (address: Address) => usdcBalance(chain, devnet.usdcAddress, address);

    function payer(i: number): PrivateKeyAccount {
      const key = devnet.payerPrivateKeys[i];
      if (!key) throw new Error(`no payer ${i}`);
      return privateKeyToAccount(key);
    }

    /** POST /v1/snapshot of the site through `base`; `pin` sends it to that instance. */
    function post(base: string, headers: Record<string, string> = {}, pin?: string) {
      return fetch(`${base}/v1/snapshot`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(pin !== undefined && { "x-backend": pin }),
          ...headers,
        },
        body: JSON.stringify({ url: siteUrl }),
      });
    }

    async function challenge(): Promise<PaymentRequired> {
      const response = await post(lb.url);
      expect(response.status).toBe(402);
      return decodePaymentRequiredHeader(response.headers.get("payment-required")!);
    }

    /** One proof, signed once by the official v2 client; with a payment id when given. */
    async function proof(account: PrivateKeyAccount, paymentId?: string) {
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: account });
      const payload = await client.createPaymentPayload(await challenge());
      if (paymentId !== undefined) {
        payload.extensions = {
          ...payload.extensions,
          [PAYMENT_IDENTIFIER]: { info: { required: false, id: paymentId } },
        };
      }
      return new x402HTTPClient(client).encodePaymentSignatureHeader(payload);
    }

    /** Sends again as a client told "retry" would (409 in progress, 503), honouring Retry-After. */
    async function untilAnswered(send: () => Promise<Response>, attempts = 30): Promise<Response> {
      for (let i = 0; ; i++) {
        const response = await send();
        if (![409, 502, 503].includes(response.status) || i === attempts) return response;
        const wait = Number(response.headers.get("retry-after") ?? "1");
        await response.text();
        await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 3) * 1000));
      }
    }

    /** The status line of a raw request to `port` (what HAProxy's default check would send). */
    function rawStatusLine(port: number, request: string): Promise<string> {
      return new Promise((resolve, reject) => {
        let answer = "";
        const socket = connect(port, "127.0.0.1", () => socket.write(request));
        socket.setEncoding("utf8");
        socket.on("data", (d: string) => (answer += d));
        socket.on("end", () => resolve(answer.split("\r\n")[0] ?? ""));
        socket.on("error", reject);
      });
    }

    it("HAProxy's plain HTTP/1.0 check, without Host, is answered: the instances stay up on it", async () => {
      expect(await rawStatusLine(a.port, "GET /ready HTTP/1.0\r\n\r\n")).toMatch(
        /^HTTP\/1\.1 200 /,
      );
      expect(lb.config).toMatch(/^ {2}option httpchk GET \/ready$/m);
    });

    it("HAProxy balances between both instances; a paid call through it moves money once", async () => {
      const servedBy = new Set<string | null>();
      for (let i = 0; i < 4; i++) {
        const response = await fetch(`${lb.url}/health`);
        expect(response.status).toBe(200);
        servedBy.add(response.headers.get("x-served-by"));
      }
      expect(servedBy).toEqual(new Set(["a", "b"]));
      for (const name of ["a", "b"]) {
        const pinned = await fetch(`${lb.url}/health`, { headers: { "x-backend": name } });
        expect(pinned.headers.get("x-served-by")).toBe(name);
      }

      const account = payer(0);
      const before = await balanceOf(account.address);
      const payToBefore = await balanceOf(devnet.payTo);
      const paid = await post(lb.url, await proof(account));
      expect(paid.status).toBe(200);
      expect(await paid.json()).toMatchObject({ requested_url: siteUrl, reachable: true });
      const receipt = decodePaymentResponseHeader(paid.headers.get("payment-response")!);
      expect(receipt).toMatchObject({ success: true, network: devnet.network });
      expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
      expect((await balanceOf(devnet.payTo)) - payToBefore).toBe(PRICE_UNITS);
    });

    it("the same proof at both instances at the same instant: one 200, one snapshot, one transfer", async () => {
      const account = payer(1);
      const headers = await proof(account);
      const before = await balanceOf(account.address);
      const snapshotsBefore = snapshots();
      const settlesBefore = proxy.settles.forwarded;

      const answers = await Promise.all([post(lb.url, headers, "a"), post(lb.url, headers, "b")]);
      expect(answers.map((r) => r.headers.get("x-served-by")).sort()).toEqual(["a", "b"]);
      const statuses = answers.map((r) => r.status).sort();
      await Promise.all(answers.map((r) => r.text()));

      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect([402, 409, 503]).toContain(statuses.find((s) => s !== 200));
      // The loser did no work: it never ran the snapshot nor tried to settle.
      expect(snapshots() - snapshotsBefore).toBe(1);
      expect(proxy.settles.forwarded - settlesBefore).toBe(1);
      expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
    });

    it("a payment-id retry that lands on the other instance gets the same report; one transfer", async () => {
      const account = payer(2);
      const headers = await proof(account, generatePaymentId());
      const before = await balanceOf(account.address);
      const snapshotsBefore = snapshots();

      const first = await post(lb.url, headers, "a");
      expect(first.headers.get("x-served-by")).toBe("a");
      expect(first.status).toBe(200);
      const body = await first.text();

      const retry = await untilAnswered(() => post(lb.url, headers, "b"));
      expect(retry.headers.get("x-served-by")).toBe("b");
      expect(retry.status).toBe(200);
      expect(await retry.text()).toBe(body);
      expect(retry.headers.get("payment-response")).toBe(first.headers.get("payment-response"));

      expect(snapshots() - snapshotsBefore).toBe(1);
      expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
    });

    it(
      "an instance killed (SIGKILL) after settling, before answering: the retry through the other gets the report; one transfer",
      { timeout: 120_000 },
      async () => {
        const account = payer(3);
        const headers = await proof(account);
        const before = await balanceOf(account.address);

        const settle = proxy.holdNextSettle();
        const lost = post(lb.url, headers, "a").then(
          (r) => r.status,
          () => "no answer",
        );
        await settle.settled; // the transfer is on chain; instance a waits for the answer
        expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
        await a.kill("SIGKILL");
        settle.release();
        expect(await lost).not.toBe(200);
        await lb.waitFor("a", "DOWN");

        const retry = await untilAnswered(() => post(lb.url, headers));
        expect(retry.headers.get("x-served-by")).toBe("b");
        expect(retry.status).toBe(200);
        expect(await retry.json()).toMatchObject({ requested_url: siteUrl, reachable: true });
        expect(decodePaymentResponseHeader(retry.headers.get("payment-response")!)).toMatchObject({
          success: true,
        });
        expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
      },
    );

    it(
      "Redis stopped: 503 with Retry-After, nothing charged, free endpoints answer; Redis back: paid again, no restart",
      { timeout: 120_000 },
      async () => {
        const account = payer(4);
        const headers = await proof(account);
        const before = await balanceOf(account.address);
        const pids = [a.pid, b.pid];
        const snapshotsBefore = snapshots();

        await redis.stop();
        try {
          for (const instance of [a, b]) {
            const refused = await post(instance.url, headers);
            expect(refused.status).toBe(503);
            expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
            await refused.text();
            expect((await fetch(`${instance.url}/health`)).status).toBe(200);
          }
          // Not ready without Redis: HAProxy takes both out.
          await Promise.all([lb.waitFor("a", "DOWN"), lb.waitFor("b", "DOWN")]);
          const throughLb = await post(lb.url, headers);
          expect(throughLb.status).toBe(503);
          await throughLb.text();
          expect(snapshots()).toBe(snapshotsBefore);
          expect(await balanceOf(account.address)).toBe(before);
        } finally {
          await redis.start();
        }

        await Promise.all([lb.waitFor("a", "UP"), lb.waitFor("b", "UP")]);
        const paid = await untilAnswered(() => post(lb.url, headers));
        expect(paid.status).toBe(200);
        await paid.text();
        expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
        expect([a.pid, b.pid]).toEqual(pids);
      },
    );

    it(
      "SIGTERM: HAProxy takes the draining instance out, its running paid request still ends in a report",
      { timeout: 120_000 },
      async () => {
        const account = payer(5);
        const headers = await proof(account);
        const before = await balanceOf(account.address);

        const arrived = hold();
        const running = post(lb.url, headers, "b");
        running.catch(() => undefined); // awaited below; a failure before that is not unhandled
        await arrived; // b's snapshot is waiting on the site
        const exited = b.kill("SIGTERM");
        await lb.waitFor("b", "DOWN");
        for (let i = 0; i < 4; i++) {
          const response = await fetch(`${lb.url}/health`);
          expect(response.status).toBe(200);
          expect(response.headers.get("x-served-by")).toBe("a");
        }
        release();

        const paid = await running;
        expect(paid.headers.get("x-served-by")).toBe("b");
        expect(paid.status).toBe(200);
        expect(await paid.json()).toMatchObject({ requested_url: siteUrl, reachable: true });
        expect(await exited).toBe(0);
        expect(before - (await balanceOf(account.address))).toBe(PRICE_UNITS);
      },
    );
  },
);
