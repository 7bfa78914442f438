/**
 * The target's own x402 through the engine, from real HTTPS targets answering 402: a careful
 * seller's v2 header and v1 body give the `x402` section and no finding; each defect of a
 * challenge is one target with one finding; and the discovery documents are asked only of a
 * site that answers with a challenge. Nothing is paid: no request carries a payment header.
 */
import { encodePaymentRequiredHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { ALL_FINDINGS } from "../../src/snapshot/rules/registry.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { PUBLIC_HOST, createTestEngine, respond, startHttpsTarget } from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";
import {
  PAY_TO,
  USDC,
  X402_DEFECTS,
  answer402,
  challenge,
  sellerRoutes,
  trickling,
  v1Body,
} from "../fixtures/x402-sellers.js";

let dns: DnsFixture;
/** Publishes /.well-known/x402: each path is a seller with one defect. */
let seller: TargetServer;
/** A correct challenge, but no discovery document. */
let undiscovered: TargetServer;
/** A 200 page, and a 402 that is no x402 challenge. */
let plain: TargetServer;
let engine: SnapshotEngine;

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
  const cert = await issueLeaf(ca, { dnsNames: ["site.test"], ips: [PUBLIC_HOST] });
  [seller, undiscovered, plain] = await Promise.all([
    startHttpsTarget({
      cert,
      routes: {
        ...sellerRoutes(),
        "/v1": v1Body,
        "/trickle": trickling,
      },
    }),
    startHttpsTarget({ cert, routes: { "/paid": answer402((url) => challenge(url)) } }),
    startHttpsTarget({
      cert,
      routes: {
        "/": respond.text("free"),
        "/pay": respond.status(402, { "content-type": "text/plain" }, "Payment required"),
      },
    }),
  ]);
  engine = createTestEngine({ dns, ports: [seller.port, undiscovered.port, plain.port] });
}, 60_000);

afterAll(async () => {
  await engine?.close();
  await Promise.all([seller, undiscovered, plain, dns].map((t) => t?.close()));
});

async function snapshot(target: TargetServer, path: string): Promise<SnapshotResult> {
  return SnapshotResultSchema.parse(await engine.snapshot(target.url(path, "site.test")));
}

function x402Ids(report: SnapshotResult): string[] {
  return report.findings.filter((f) => f.check === "x402").map((f) => f.id);
}

describe("a correct x402 seller", () => {
  it("v2 header: the section says what it offers, and nothing is held against it", async () => {
    const report = await snapshot(seller, "/paid");
    expect(report.final_status_code).toBe(402);
    expect(x402Ids(report)).toEqual([]);
    const header = encodePaymentRequiredHeader(challenge(seller.url("/paid", "site.test")));
    expect(report.x402).toEqual({
      versions: [2],
      valid: true,
      networks: ["eip155:8453"],
      assets: [USDC],
      amounts: ["10000"],
      pay_to: [PAY_TO],
      resources: [seller.url("/paid", "site.test")],
      header_bytes: header.length,
      bazaar: true,
      discovery: true,
    });
  });

  it("v1 body: read with the v1 schema, its network given as CAIP-2", async () => {
    const report = await snapshot(seller, "/v1");
    expect(x402Ids(report)).toEqual([]);
    expect(report.x402).toMatchObject({
      versions: [1],
      valid: true,
      networks: ["eip155:8453"],
      header_bytes: null,
      bazaar: true,
    });
  });

  it("a body that never ends: the header's challenge is read without it", async () => {
    const report = await snapshot(seller, "/trickle");
    expect(x402Ids(report)).toEqual([]);
    expect(report.x402).toMatchObject({ versions: [2], valid: true, discovery: true });
  });
});

describe("each defect of a challenge, one target each", () => {
  it("every x402 finding has its target", () => {
    const ids = new Set([
      "x402-challenge-invalid",
      "x402-pay-to-zero",
      "x402-pay-to-not-checksummed",
      "x402-resource-mismatch",
      "x402-asset-not-usdc",
      "x402-amount-zero",
      "x402-amount-over-100-usdc",
      "x402-headers-not-exposed",
      "x402-header-too-large",
      "x402-no-bazaar",
      "x402-no-discovery",
    ]);
    expect(new Set(ALL_FINDINGS.filter((f) => f.check === "x402").map((f) => f.id))).toEqual(ids);
    // Each defect's seller below, and the undiscovered one.
    const served = [...Object.values(X402_DEFECTS).map(([, id]) => id), "x402-no-discovery"];
    expect(new Set(served)).toEqual(ids);
  });

  for (const [path, [, id]] of Object.entries(X402_DEFECTS)) {
    it(`${path}: ${id}`, async () => {
      const report = await snapshot(seller, path);
      expect(x402Ids(report)).toEqual([id]);
      expect(report.notes).toContain(report.findings.find((f) => f.id === id)?.message);
    });
  }

  it("no discovery document: x402-no-discovery", async () => {
    const report = await snapshot(undiscovered, "/paid");
    expect(x402Ids(report)).toEqual(["x402-no-discovery"]);
    expect(report.x402?.discovery).toBe(false);
  });
});

describe("requests", () => {
  const paths = (t: TargetServer) => t.requests.map((r) => r.path);
  const DISCOVERY = ["/.well-known/x402", "/openapi.json"];

  it("a site that does not answer with a challenge is asked nothing more, and has no section", async () => {
    plain.requests.length = 0;
    const free = await snapshot(plain, "/");
    const notX402 = await snapshot(plain, "/pay");
    expect(free.x402).toBeUndefined();
    expect(notX402.x402).toBeUndefined();
    expect(notX402.final_status_code).toBe(402);
    expect(paths(plain).filter((p) => DISCOVERY.includes(p))).toEqual([]);
  });

  it("a seller's discovery documents are asked once each, and no request carries a payment", async () => {
    undiscovered.requests.length = 0;
    await snapshot(undiscovered, "/paid");
    expect(
      paths(undiscovered)
        .filter((p) => DISCOVERY.includes(p))
        .sort(),
    ).toEqual(DISCOVERY);
    for (const r of undiscovered.requests) {
      expect(Object.keys(r.headers)).not.toContain("payment-signature");
      expect(Object.keys(r.headers)).not.toContain("x-payment");
    }
  });
});
