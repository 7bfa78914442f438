/**
 * Metrics and the request log with real requests: the devnet (anvil + DevUSDC + the project's
 * facilitator), the service wired as `secsnap serve` wires it (payment events, the timed engine,
 * the challenge fast path, the request observer) and its metrics listener. Every counter is read
 * from the listener's Prometheus text, every payment checked on chain.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { PaymentRequiredV1Schema, PaymentRequirementsV1Schema } from "@x402/core/schemas";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import { PAYMENT_IDENTIFIER, generatePaymentId } from "@x402/extensions/payment-identifier";
import { createPublicClient, http, type Address, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/cli/serve/logger.js";
import { startDevnet, type Devnet } from "../../../src/devnet/index.js";
import {
  ROUTES,
  ServiceMetrics,
  createApp,
  createChallengeFastPath,
  createRequestObserver,
  metricsApp,
  startServer,
  type RunningServer,
} from "../../../src/http/index.js";
import { createPaymentGate } from "../../../src/payment/index.js";
import { createSnapshotEngine, createUrlPolicy } from "../../../src/snapshot/index.js";
import type { SnapshotEngine } from "../../../src/snapshot/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { usdcBalance } from "../../fixtures/usdc.js";
import { closedPort } from "../../fixtures/targets.js";
import { devnetGate } from "../../fixtures/paid-devnet.js";

const PRICE_UNITS = 50_000n;

let devnet: Devnet;
let chain: PublicClient;
let target: Server;
let targetUrl: string;
let closedPortUrl: string;
let engine: SnapshotEngine;
let service: RunningServer;
let metricsServer: RunningServer;
/** Between the service and the devnet's facilitator: can lose a settle answer. */
let proxy: FacilitatorProxy;
/** Every line the service logged, as written. */
const logged: string[] = [];

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  target = createServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end());
  const port = await listen(target);
  targetUrl = `http://127.0.0.1:${port}/`;
  const refusingPort = await closedPort("127.0.0.1");
  closedPortUrl = `http://127.0.0.1:${refusingPort}/`;
  const snapshotConfig = {
    allowedPorts: new Set([port, refusingPort]),
    allowCidrs: ["127.0.0.0/8"],
  };

  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  const logger = createLogger("info", { write: (line: string) => logged.push(line) });
  const metrics = new ServiceMetrics();
  const gate = createPaymentGate({
    ...devnetGate(devnet, proxy.url),
    devnet: true,
    rpcUrls: { [devnet.network]: devnet.rpcUrl },
    events: metrics,
    log: (line) => logger.warn(line),
  });
  engine = metrics.instrumentEngine(
    createSnapshotEngine({
      timeoutMs: 5_000,
      maxRedirects: 10,
      dnsServers: [],
      ...snapshotConfig,
      // The https probe of the http target goes to the closed port: refused at once.
      httpsProbePort: refusingPort,
    }),
  );
  const urlPolicy = createUrlPolicy(snapshotConfig);
  const app = createApp({ engine, urlPolicy, payment: gate.route, log: () => {} });
  const front = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });
  const observe = createRequestObserver({ routes: ROUTES, metrics, logger, priceUsdc: "0.05" });
  service = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front, observe });
  metricsServer = await startServer({
    config: { host: "127.0.0.1", port: 0 },
    app: metricsApp(metrics),
  });
}, 120_000);

afterAll(async () => {
  await service?.close(1_000);
  await metricsServer?.close(1_000);
  await engine?.close();
  await proxy?.close();
  await new Promise<void>((resolve) => (target ? target.close(() => resolve()) : resolve()));
  await devnet?.close();
});

/** The listener's Prometheus text. */
async function scrape(): Promise<string> {
  const response = await fetch(`${metricsServer.url}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
}

/** The value of one series in Prometheus text (0 when absent). */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) {
      if (Object.keys(have).length === Object.keys(labels).length) return Number(match[3]);
    }
  }
  return 0;
}

async function value(name: string, labels: Record<string, string> = {}): Promise<number> {
  return valueOf(await scrape(), name, labels);
}

function balanceOf(address: Address): Promise<bigint> {
  return usdcBalance(chain, devnet.usdcAddress, address);
}

function post(url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${service.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url }),
  });
}

/** A v2 proof by the official client for `url`'s challenge, as headers. */
async function v2Proof(
  payer: number,
  url = targetUrl,
  paymentId?: string,
): Promise<Record<string, string>> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(devnet.payerPrivateKeys[payer]!) });
  const unpaid = await post(url);
  const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!);
  const payload = await client.createPaymentPayload(required);
  if (paymentId !== undefined) {
    payload.extensions = {
      ...payload.extensions,
      [PAYMENT_IDENTIFIER]: { info: { required: false, id: paymentId } },
    };
  }
  return new x402HTTPClient(client).encodePaymentSignatureHeader(payload);
}

/** A v1 proof made by the SDK's v1 client scheme, as the X-PAYMENT header. */
async function v1Proof(payer: number): Promise<Record<string, string>> {
  const challenge = PaymentRequiredV1Schema.parse(await (await post(targetUrl)).json());
  const requirements = PaymentRequirementsV1Schema.parse(challenge.accepts[0]);
  const scheme = new ExactEvmSchemeV1(privateKeyToAccount(devnet.payerPrivateKeys[payer]!));
  const payload = await scheme.createPaymentPayload(1, requirements as never);
  return new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(payload as never);
}

/** The parsed log line of the request whose answer carried `requestId`. */
function lineOf(requestId: string): Record<string, unknown> {
  const lines = logged
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.req_id === requestId);
  expect(lines, logged.join("")).toHaveLength(1);
  return lines[0]!;
}

const payments = (version: string, outcome: string) =>
  value("secsnap_payments_total", { version, outcome });

describe("the metrics listener", () => {
  it("serves Prometheus text with process metrics on its own port; the public port answers 404", async () => {
    expect(metricsServer.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const response = await fetch(`${metricsServer.url}/metrics`);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    for (const name of [
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_heap_size_used_bytes",
      "nodejs_eventloop_lag_seconds",
    ]) {
      expect(text).toMatch(new RegExp(`^${name} \\d`, "m"));
    }
    // Every series an alert needs exists from the start, at 0.
    expect(text).toMatch(/^secsnap_redis_errors_total 0$/m);
    expect(text).toMatch(/^secsnap_rate_limited_total\{limit="ip"\} 0$/m);
    expect(text).toMatch(/^secsnap_payments_total\{version="2",outcome="unknown_settlement"\} 0$/m);
    expect(text).toMatch(/^secsnap_snapshots_in_flight 0$/m);

    const publicAnswer = await fetch(`${service.url}/metrics`);
    expect(publicAnswer.status).toBe(404);
    expect(await publicAnswer.json()).toEqual({ error: "not found", code: "not_found" });
    expect((await fetch(`${metricsServer.url}/v1/snapshot`)).status).toBe(404);
  });
});

describe("counters move with real requests", () => {
  it("402 challenges count under their route, through Hono and through the fast path", async () => {
    const labels = { route: "/v1/snapshot", status: "402" };
    const before = await value("secsnap_http_requests_total", labels);
    const answers = [await post(targetUrl), await post(targetUrl), await post(targetUrl)];
    expect(answers.map((a) => a.status)).toEqual([402, 402, 402]);
    const text = await scrape();
    expect(valueOf(text, "secsnap_http_requests_total", labels)).toBe(before + 3);
    expect(valueOf(text, "secsnap_http_request_duration_seconds_count", labels)).toBe(before + 3);
    // A path the app does not serve is "other", never its raw path.
    const other = { route: "other", status: "404" };
    const otherBefore = await value("secsnap_http_requests_total", other);
    await fetch(`${service.url}/no/such/path?x=1`);
    expect(await value("secsnap_http_requests_total", other)).toBe(otherBefore + 1);
    expect(await scrape()).not.toContain("/no/such/path");
  });

  it("one paid v2 call: verified and settled +1, one transfer on chain, the snapshot timed, none left in flight", async () => {
    const from = privateKeyToAccount(devnet.payerPrivateKeys[0]!).address;
    const [fromBefore, payToBefore] = [await balanceOf(from), await balanceOf(devnet.payTo)];
    const before = await scrape();
    const proof = await v2Proof(0);
    const response = await post(targetUrl, { ...proof, "x-request-id": "paid-call.1" });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ requested_url: targetUrl, reachable: true });
    expect(response.headers.get("x-request-id")).toBe("paid-call.1");
    const receipt = decodePaymentResponseHeader(response.headers.get("payment-response")!);
    expect(await balanceOf(from)).toBe(fromBefore - PRICE_UNITS);
    expect(await balanceOf(devnet.payTo)).toBe(payToBefore + PRICE_UNITS);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta("secsnap_payments_total", { version: "2", outcome: "verified" })).toBe(1);
    expect(delta("secsnap_payments_total", { version: "2", outcome: "settled" })).toBe(1);
    expect(delta("secsnap_payments_total", { version: "1", outcome: "settled" })).toBe(0);
    expect(delta("secsnap_snapshot_duration_seconds_count", { outcome: "report" })).toBe(1);
    expect(valueOf(after, "secsnap_snapshots_in_flight")).toBe(0);
    for (const operation of ["verify", "settle"]) {
      expect(
        delta("secsnap_facilitator_request_duration_seconds_count", { operation, result: "ok" }),
      ).toBe(1);
    }
    expect(
      delta("secsnap_http_requests_total", { route: "/v1/snapshot", status: "200" }),
    ).toBeGreaterThanOrEqual(1);

    // One log line for the request, with its receipt; nothing of the proof or of a key.
    expect(lineOf("paid-call.1")).toMatchObject({
      level: "info",
      msg: "request",
      method: "POST",
      route: "/v1/snapshot",
      status: 200,
      duration_ms: expect.any(Number),
      x402_version: "2",
      network: devnet.network,
      payer: from,
      amount_usdc: "0.05",
      transaction: receipt.transaction,
    });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const all = logged.join("");
    const header = proof["PAYMENT-SIGNATURE"]!;
    expect(header.length).toBeGreaterThan(100);
    for (let i = 0; i + 40 <= header.length; i += 40) {
      expect(all).not.toContain(header.slice(i, i + 40));
    }
    for (const key of devnet.payerPrivateKeys) expect(all).not.toContain(key.slice(2));
  });

  it("the same proof sent twice at once: one settles, the other counts as replayed; one transfer", async () => {
    const from = privateKeyToAccount(devnet.payerPrivateKeys[1]!).address;
    const fromBefore = await balanceOf(from);
    const [replayedBefore, settledBefore] = [
      await payments("2", "replayed"),
      await payments("2", "settled"),
    ];
    const proof = await v2Proof(1);
    const statuses = (await Promise.all([post(targetUrl, proof), post(targetUrl, proof)])).map(
      (r) => r.status,
    );
    // The copy finds it in progress (409) or already served (402): replayed either way.
    expect(statuses.sort()[0]).toBe(200);
    expect([402, 409]).toContain(statuses[1]);
    // And once more after it was served.
    expect((await post(targetUrl, proof)).status).not.toBe(200);
    expect(await balanceOf(from)).toBe(fromBefore - PRICE_UNITS);
    expect(await payments("2", "settled")).toBe(settledBefore + 1);
    expect(await payments("2", "replayed")).toBeGreaterThanOrEqual(replayedBefore + 1);
  });

  it("a paid x402 v1 call counts under version 1, and its log line says so", async () => {
    const from = privateKeyToAccount(devnet.payerPrivateKeys[2]!).address;
    const fromBefore = await balanceOf(from);
    const settledBefore = await payments("1", "settled");
    const response = await post(targetUrl, { ...(await v1Proof(2)), "x-request-id": "v1-call" });
    expect(response.status).toBe(200);
    expect(response.headers.get("x-payment-response")).toBeTruthy();
    expect(await balanceOf(from)).toBe(fromBefore - PRICE_UNITS);
    expect(await payments("1", "settled")).toBe(settledBefore + 1);
    const receipt = JSON.parse(
      Buffer.from(response.headers.get("x-payment-response")!, "base64").toString(),
    ) as { transaction: string };
    expect(lineOf("v1-call")).toMatchObject({
      status: 200,
      x402_version: "1",
      payer: from,
      transaction: receipt.transaction,
    });
  });

  it("a paid snapshot that ends in an error is timed under its error_type, and nothing is charged", async () => {
    const from = privateKeyToAccount(devnet.payerPrivateKeys[3]!).address;
    const fromBefore = await balanceOf(from);
    const before = await value("secsnap_snapshot_duration_seconds_count", {
      outcome: "unreachable",
    });
    const response = await post(closedPortUrl, {
      ...(await v2Proof(3, closedPortUrl)),
      "x-request-id": "refused-target",
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error_type: "unreachable" });
    expect(await value("secsnap_snapshot_duration_seconds_count", { outcome: "unreachable" })).toBe(
      before + 1,
    );
    expect(await value("secsnap_snapshots_in_flight")).toBe(0);
    expect(await balanceOf(from)).toBe(fromBefore);
    const line = lineOf("refused-target");
    expect(line).toMatchObject({ status: 400, route: "/v1/snapshot" });
    expect(line).not.toHaveProperty("transaction");
  });

  it("a payment id sent again: idempotent_hit +1, the same answer, one transfer", async () => {
    const from = privateKeyToAccount(devnet.payerPrivateKeys[4]!).address;
    const fromBefore = await balanceOf(from);
    const [hitsBefore, settledBefore] = [
      await payments("2", "idempotent_hit"),
      await payments("2", "settled"),
    ];
    const proof = await v2Proof(4, targetUrl, generatePaymentId());
    const first = await post(targetUrl, proof);
    const second = await post(targetUrl, proof);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.headers.get("payment-response")).toBe(first.headers.get("payment-response"));
    expect(await balanceOf(from)).toBe(fromBefore - PRICE_UNITS);
    expect(await payments("2", "settled")).toBe(settledBefore + 1);
    expect(await payments("2", "idempotent_hit")).toBe(hitsBefore + 1);
  });

  it("a settle answer lost: unknown_settlement +1 and a 503; the retry is recovered +1 from the chain; one transfer", async () => {
    const from = privateKeyToAccount(devnet.payerPrivateKeys[5]!).address;
    const fromBefore = await balanceOf(from);
    const before = await scrape();
    const proof = await v2Proof(5);
    proxy.failNextSettle("settle-then-drop");
    const lost = await post(targetUrl, proof);
    expect(lost.status).toBe(503);
    expect(await balanceOf(from)).toBe(fromBefore - PRICE_UNITS);
    const retry = await post(targetUrl, proof);
    expect(retry.status).toBe(200);
    expect(await balanceOf(from)).toBe(fromBefore - PRICE_UNITS);

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(delta("secsnap_payments_total", { version: "2", outcome: "unknown_settlement" })).toBe(
      1,
    );
    expect(delta("secsnap_payments_total", { version: "2", outcome: "recovered" })).toBe(1);
    expect(
      delta("secsnap_facilitator_request_duration_seconds_count", {
        operation: "settle",
        result: "unavailable",
      }),
    ).toBe(1);
    expect(delta("secsnap_http_requests_total", { route: "/v1/snapshot", status: "503" })).toBe(1);
  });

  it("a payer over its unpaid budget: 429 and rate_limited{limit=payer} +1, nothing charged", async () => {
    // A second service on the same devnet whose payers may cause one unpaid snapshot a minute.
    const metrics = new ServiceMetrics();
    const gate = createPaymentGate({
      ...devnetGate(devnet),
      devnet: true,
      refusedPerPayerPerMinute: 1,
      events: metrics,
    });
    const urlPolicy = createUrlPolicy({
      allowedPorts: new Set([Number(new URL(closedPortUrl).port)]),
      allowCidrs: ["127.0.0.0/8"],
    });
    const app = createApp({ engine, urlPolicy, payment: gate.route, log: () => {} });
    const strict = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
    const strictMetrics = await startServer({
      config: { host: "127.0.0.1", port: 0 },
      app: metricsApp(metrics),
    });
    try {
      const from = privateKeyToAccount(devnet.payerPrivateKeys[6]!).address;
      const fromBefore = await balanceOf(from);
      const statuses: number[] = [];
      for (let i = 0; i < 2; i++) {
        const headers = await v2Proof(6, closedPortUrl);
        const response = await fetch(`${strict.url}/v1/snapshot`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify({ url: closedPortUrl }),
        });
        statuses.push(response.status);
      }
      expect(statuses).toEqual([400, 429]);
      const text = await (await fetch(`${strictMetrics.url}/metrics`)).text();
      expect(valueOf(text, "secsnap_rate_limited_total", { limit: "payer" })).toBe(1);
      expect(valueOf(text, "secsnap_rate_limited_total", { limit: "ip" })).toBe(0);
      expect(await balanceOf(from)).toBe(fromBefore);
    } finally {
      await strict.close(1_000);
      await strictMetrics.close(1_000);
    }
  });
});
