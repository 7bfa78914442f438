/**
 * A correct x402 seller, scanned through the paid API: the seller is this service on the devnet
 * (its gate's own 402, its /.well-known/x402 and /openapi.json), behind an HTTPS front at
 * https://site.test (its PUBLIC_URL); another instance, paid on the same devnet by the official
 * client, scans it. The paid report carries the `x402` section with no defect, and moved exactly
 * the price on chain; the seller is never paid. Each defect of a challenge (one route each, the
 * cases of test/fixtures/x402-sellers.ts) is named in a paid report too.
 *
 * The service sells with POST and the engine only ever GETs, so the front answers a GET of the
 * paid path with the service's own answer to an unpaid POST (status, headers and body as sent).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/index.js";
import { NETWORKS } from "../../src/networks.js";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import { startDnsServer, type DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_CIDRS,
  PUBLIC_HOST,
  createTestEngine,
  startHttpsTarget,
  type TargetServer,
} from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";
import {
  PRICE_UNITS,
  devnetGate,
  paidSnapshot,
  startGatedService,
  startPaidDevnet,
  type GatedService,
  type PaidDevnet,
} from "../fixtures/paid-devnet.js";
import { X402_DEFECTS, sellerRoutes } from "../fixtures/x402-sellers.js";

/** What the front does not pass on: hop-by-hop headers, and a coding fetch already undid. */
const NOT_RELAYED = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "content-encoding",
]);

let devnet: PaidDevnet;
let dns: DnsFixture;
let front: TargetServer;
/** Hand-made sellers: one defect per path. */
let defective: TargetServer;
let seller: GatedService;
let scanner: GatedService;
let engine: SnapshotEngine;
/** What the front asked the seller, by method and path. */
const relayed: string[] = [];

/** The seller's answer to `init` at `path`, passed on as it came. */
function relay(path: string, init: RequestInit = {}) {
  return async (_req: IncomingMessage, res: ServerResponse) => {
    relayed.push(`${init.method ?? "GET"} ${path}`);
    const answer = await fetch(`${seller.url}${path}`, init);
    const headers: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!NOT_RELAYED.has(name)) headers[name] = value;
    });
    res.writeHead(answer.status, headers);
    res.end(Buffer.from(await answer.arrayBuffer()));
  };
}

beforeAll(async () => {
  devnet = await startPaidDevnet();
  const ca = await loadTestCa();
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
  const cert = await issueLeaf(ca, { dnsNames: ["site.test"], ips: [PUBLIC_HOST] });
  front = await startHttpsTarget({ cert });
  defective = await startHttpsTarget({ cert, routes: sellerRoutes() });
  const ports = [front.port, defective.port];
  const scope = { allowedPorts: new Set(ports), allowCidrs: PUBLIC_CIDRS };
  engine = createTestEngine({ dns, ports });
  const publicUrl = front.url("", "site.test");
  seller = await startGatedService({
    engine,
    scope,
    gate: { ...devnetGate(devnet), publicUrl },
    fastPath: true,
    publicUrl,
  });
  const unpaidPost = {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: front.url("/", "site.test") }),
  };
  front.route("/v1/snapshot", relay("/v1/snapshot", unpaidPost));
  front.route("/.well-known/x402", relay("/.well-known/x402"));
  front.route("/openapi.json", relay("/openapi.json"));
  scanner = await startGatedService({ engine, scope, gate: devnetGate(devnet), fastPath: true });
}, 120_000);

afterAll(async () => {
  await scanner?.close();
  await seller?.close();
  await engine?.close();
  await Promise.all([front, defective, dns].map((t) => t?.close()));
  await devnet?.close();
});

describe("this service as an x402 seller, scanned by another instance, paid", () => {
  it("its challenge has the x402 section and no x402 finding; the scan moved the price once", async () => {
    const account = devnet.payer(0);
    const [payerBefore, payeeBefore] = await Promise.all([
      devnet.balanceOf(account.address),
      devnet.balanceOf(devnet.payTo),
    ]);
    const paidUrl = front.url("/v1/snapshot", "site.test");
    const response = await paidSnapshot(scanner.url, paidUrl, account);
    expect(response.status).toBe(200);
    expect(decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!).success).toBe(
      true,
    );
    const report = SnapshotResultSchema.parse(await response.json());
    expect(report.final_status_code).toBe(402);
    expect(report.findings.filter((f) => f.check === "x402")).toEqual([]);
    expect(report.x402).toMatchObject({
      versions: [2, 1],
      valid: true,
      networks: [NETWORKS["base-sepolia"].id],
      assets: [devnet.usdcAddress],
      amounts: [PRICE_UNITS.toString()],
      pay_to: [devnet.payTo],
      resources: [paidUrl],
      bazaar: true,
      discovery: true,
    });
    expect(report.x402?.header_bytes).toBeGreaterThan(0);
    expect(report.x402?.header_bytes).toBeLessThanOrEqual(8 * 1024);
    // The scanner was paid the price, once; the seller's challenge was only read.
    const [payerAfter, payeeAfter] = await Promise.all([
      devnet.balanceOf(account.address),
      devnet.balanceOf(devnet.payTo),
    ]);
    expect(payerBefore - payerAfter).toBe(PRICE_UNITS);
    expect(payeeAfter - payeeBefore).toBe(PRICE_UNITS);
    expect(relayed).toContain("GET /.well-known/x402");
    for (const r of front.requests) {
      expect(Object.keys(r.headers)).not.toContain("payment-signature");
      expect(Object.keys(r.headers)).not.toContain("x-payment");
    }
  });

  it("each defect of a challenge is named in a paid report, each paid once", async () => {
    const account = devnet.payer(1);
    const before = await devnet.balanceOf(account.address);
    const paths = Object.keys(X402_DEFECTS);
    for (const path of paths) {
      const response = await paidSnapshot(scanner.url, defective.url(path, "site.test"), account);
      expect(response.status, path).toBe(200);
      const report = SnapshotResultSchema.parse(await response.json());
      const ids = report.findings.filter((f) => f.check === "x402").map((f) => f.id);
      expect(ids, path).toEqual([X402_DEFECTS[path]![1]]);
    }
    expect(before - (await devnet.balanceOf(account.address))).toBe(
      PRICE_UNITS * BigInt(paths.length),
    );
  });
});
