/**
 * The target's own x402 through the engine, from real HTTPS targets answering 402: a careful
 * seller's v2 header and v1 body give the `x402` section and no finding; each defect of a
 * challenge is one target with one finding; and the discovery documents are asked only of a
 * site that answers with a challenge. Nothing is paid: no request carries a payment header.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import type { PaymentRequiredV1 } from "@x402/core/schemas";
import { getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { NETWORKS } from "../../src/networks.js";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { PUBLIC_HOST, createTestEngine, respond, startHttpsTarget } from "../fixtures/targets.js";
import type { RouteHandler, TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

const PAY_TO = getAddress("0x209693bc6afc0c5328ba36faf03c514ef312287c");
const USDC = NETWORKS.base.usdc.address;
const EXPOSE = { "access-control-expose-headers": "PAYMENT-REQUIRED, PAYMENT-RESPONSE" };
const BAZAAR = {
  bazaar: {
    info: { input: { type: "http", method: "GET" }, output: { type: "json" } },
    schema: { type: "object" },
  },
};
const WELL_KNOWN = JSON.stringify({ version: 1, resources: ["GET https://site.test/paid"] });

/** The URL a request was sent to, as the engine asked for it. */
function urlOf(req: IncomingMessage): string {
  return `https://${req.headers.host}${req.url}`;
}

/** A careful seller's v2 challenge for `url`: Base USDC, 0.01 USDC, checksummed payTo, Bazaar. */
function challenge(url: string, offer: Partial<PaymentRequirements> = {}): PaymentRequired {
  return {
    x402Version: 2,
    resource: { url, description: "A paid answer", mimeType: "application/json" },
    accepts: [
      {
        scheme: "exact",
        network: "eip155:8453",
        amount: "10000",
        asset: USDC,
        payTo: PAY_TO,
        maxTimeoutSeconds: 60,
        extra: { name: "USD Coin", version: "2" },
        ...offer,
      },
    ],
    extensions: BAZAAR,
  };
}

/** A 402 with `PAYMENT-REQUIRED` made of the challenge `change` gives for the request's URL. */
function answer402(
  change: (url: string) => unknown,
  headers: Record<string, string> = EXPOSE,
): RouteHandler {
  return (req: IncomingMessage, res: ServerResponse) => {
    const doc = change(urlOf(req));
    const value =
      typeof doc === "string" ? doc : encodePaymentRequiredHeader(doc as PaymentRequired);
    res.writeHead(402, {
      "content-type": "application/json",
      "payment-required": value,
      ...headers,
    });
    res.end("{}");
  };
}

/** A v1 seller: the challenge in the JSON body, no header. */
const v1Body: RouteHandler = (req, res) => {
  const body: PaymentRequiredV1 = {
    x402Version: 1,
    accepts: [
      {
        scheme: "exact",
        network: "base",
        maxAmountRequired: "10000",
        resource: urlOf(req),
        description: "A paid answer",
        mimeType: "application/json",
        outputSchema: { input: { type: "http", method: "GET" }, output: { type: "object" } },
        payTo: PAY_TO,
        maxTimeoutSeconds: 60,
        asset: USDC,
        extra: { name: "USD Coin", version: "2" },
      },
    ],
  };
  res.writeHead(402, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

/** The challenge in the header, then a body that trickles and never ends. */
const trickling: RouteHandler = (req, res) => {
  res.writeHead(402, {
    "content-type": "application/json",
    "payment-required": encodePaymentRequiredHeader(challenge(urlOf(req))),
    ...EXPOSE,
  });
  res.flushHeaders();
  const timer = setInterval(() => res.write(" "), 50);
  res.on("close", () => clearInterval(timer));
};

/** Each defect: its path on the seller, the challenge it sends, and the one finding it gets. */
const DEFECTS: Record<string, [RouteHandler, string]> = {
  "/invalid": [
    answer402((url) => ({
      ...challenge(url),
      accepts: [{ ...challenge(url).accepts[0], network: "base" }],
    })),
    "x402-challenge-invalid",
  ],
  "/not-base64": [answer402(() => "not base64 {}"), "x402-challenge-invalid"],
  "/elsewhere": [answer402(() => challenge("https://other.test/paid")), "x402-resource-mismatch"],
  "/zero-pay-to": [
    answer402((url) => challenge(url, { payTo: `0x${"0".repeat(40)}` })),
    "x402-pay-to-zero",
  ],
  "/lower-pay-to": [
    answer402((url) => challenge(url, { payTo: PAY_TO.toLowerCase() })),
    "x402-pay-to-not-checksummed",
  ],
  "/free": [answer402((url) => challenge(url, { amount: "0" })), "x402-amount-zero"],
  "/dear": [
    answer402((url) => challenge(url, { amount: "250000000" })),
    "x402-amount-over-100-usdc",
  ],
  "/other-asset": [
    answer402((url) => challenge(url, { asset: NETWORKS["base-sepolia"].usdc.address })),
    "x402-asset-not-usdc",
  ],
  "/hidden": [answer402((url) => challenge(url), {}), "x402-headers-not-exposed"],
  "/big": [
    answer402((url) => ({
      ...challenge(url),
      resource: { url, description: "x".repeat(9 * 1024) },
    })),
    "x402-header-too-large",
  ],
  "/no-bazaar": [
    answer402((url) => ({ ...challenge(url), extensions: undefined })),
    "x402-no-bazaar",
  ],
};

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
  const defects = Object.fromEntries(Object.entries(DEFECTS).map(([path, [h]]) => [path, h]));
  [seller, undiscovered, plain] = await Promise.all([
    startHttpsTarget({
      cert,
      routes: {
        "/paid": answer402((url) => challenge(url)),
        "/v1": v1Body,
        "/trickle": trickling,
        "/.well-known/x402": respond.text(WELL_KNOWN, { "content-type": "application/json" }),
        ...defects,
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
  for (const [path, [, id]] of Object.entries(DEFECTS)) {
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
