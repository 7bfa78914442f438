/** The target's own x402: the section and each defect of a challenge, judged from evidence. */
import { getAddress } from "viem";
import { describe, expect, it } from "vitest";
import { NETWORKS } from "../../../src/networks.js";
import type {
  Evidence,
  X402Challenge,
  X402Evidence,
} from "../../../src/snapshot/rules/evidence.js";
import {
  isWellKnownX402,
  judgeX402,
  namesPaymentInfo,
  x402Section,
} from "../../../src/snapshot/rules/x402.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const URL_SCANNED = "https://site.test/paid";
const PAY_TO = getAddress("0x209693bc6afc0c5328ba36faf03c514ef312287c");
const USDC = NETWORKS.base.usdc.address;

/** A v2 challenge as a careful seller sends it. */
function goodChallenge(): X402Challenge {
  return {
    from: "header",
    version: 2,
    refused: null,
    resources: [URL_SCANNED],
    offers: [
      {
        scheme: "exact",
        network: "eip155:8453",
        asset: USDC,
        amount: "10000",
        payTo: PAY_TO,
        payToChecksummed: true,
      },
    ],
    bazaar: true,
  };
}

function goodX402(): X402Evidence {
  return {
    challenges: [goodChallenge()],
    headerBytes: 900,
    discovery: { wellKnown: true, openApi: false },
  };
}

const EXPOSED = { "access-control-expose-headers": "PAYMENT-REQUIRED, PAYMENT-RESPONSE" };

function evidence(
  x402: X402Evidence,
  headers: Record<string, string> = EXPOSED,
  url = URL_SCANNED,
): Evidence {
  return { ...evidenceOf(headers, { url }), x402 };
}

/** The good challenge with its one offer changed. */
function withOffer(change: Partial<X402Challenge["offers"][number]>): X402Evidence {
  const x = goodX402();
  const [challenge] = x.challenges;
  challenge!.offers = [{ ...challenge!.offers[0]!, ...change }];
  return x;
}

describe("x402 judge", () => {
  it("a correct challenge has no finding, and its section says what it offers", () => {
    const e = evidence(goodX402());
    expect(judgeX402(e)).toEqual([]);
    expect(x402Section(e)).toEqual({
      versions: [2],
      valid: true,
      networks: ["eip155:8453"],
      assets: [USDC],
      amounts: ["10000"],
      pay_to: [PAY_TO],
      resources: [URL_SCANNED],
      header_bytes: 900,
      bazaar: true,
      discovery: true,
    });
  });

  it("no challenge: no section, no finding", () => {
    const e = { ...evidenceOf({}), x402: null };
    expect(x402Section(e)).toBeUndefined();
    expect(judgeX402(e)).toEqual([]);
  });

  it("a challenge the official schema refused", () => {
    const x = goodX402();
    x.challenges = [{ ...goodChallenge(), refused: "accepts.0.network: bad", offers: [] }];
    const f = judgeX402(evidence(x));
    expect(idsOf(f)).toEqual(["x402-challenge-invalid"]);
    expect(f[0]?.message).toContain("accepts.0.network: bad");
    expect(x402Section(evidence(x))?.valid).toBe(false);
  });

  it("a resource that is not the scanned https URL", () => {
    for (const resource of ["https://other.test/paid", "http://site.test/paid", "not a url"]) {
      const x = goodX402();
      x.challenges[0]!.resources = [resource];
      const f = judgeX402(evidence(x));
      expect(idsOf(f)).toEqual(["x402-resource-mismatch"]);
      expect(f[0]?.message).toContain(JSON.stringify(resource));
    }
    // A plain-HTTP site cannot name its own URL as an https resource.
    const plain = goodX402();
    plain.challenges[0]!.resources = ["http://site.test/paid"];
    const f = judgeX402(evidence(plain, EXPOSED, "http://site.test/paid"));
    expect(f[0]?.message).toContain("it is not https");
  });

  it("payTo the zero address, or not checksummed", () => {
    const zero = withOffer({ payTo: `0x${"0".repeat(40)}`, payToChecksummed: true });
    expect(idsOf(judgeX402(evidence(zero)))).toEqual(["x402-pay-to-zero"]);
    const lower = withOffer({ payTo: PAY_TO.toLowerCase(), payToChecksummed: false });
    expect(idsOf(judgeX402(evidence(lower)))).toEqual(["x402-pay-to-not-checksummed"]);
  });

  it("an amount of 0, or over 100 USDC", () => {
    expect(idsOf(judgeX402(evidence(withOffer({ amount: "0" }))))).toEqual(["x402-amount-zero"]);
    const high = judgeX402(evidence(withOffer({ amount: "100000001" })));
    expect(idsOf(high)).toEqual(["x402-amount-over-100-usdc"]);
    expect(high[0]?.message).toContain("100.000001 USDC");
    expect(judgeX402(evidence(withOffer({ amount: "100000000" })))).toEqual([]);
  });

  it("an asset that is not the network's USDC; a network the service does not know is not judged", () => {
    const other = withOffer({ asset: NETWORKS["base-sepolia"].usdc.address });
    expect(idsOf(judgeX402(evidence(other)))).toEqual(["x402-asset-not-usdc"]);
    // v1 names the network; its USDC is still known.
    const v1 = withOffer({ network: "base-sepolia", asset: USDC });
    expect(idsOf(judgeX402(evidence(v1)))).toEqual(["x402-asset-not-usdc"]);
    expect(x402Section(evidence(v1))?.networks).toEqual(["eip155:84532"]);
    const lowerCase = withOffer({ asset: USDC.toLowerCase() });
    expect(judgeX402(evidence(lowerCase))).toEqual([]);
    const unknown = withOffer({ network: "eip155:137", asset: "0xabc", amount: "10" });
    expect(judgeX402(evidence(unknown))).toEqual([]);
  });

  it("PAYMENT-REQUIRED or PAYMENT-RESPONSE not exposed to browsers", () => {
    const one = judgeX402(
      evidence(goodX402(), { "access-control-expose-headers": "payment-required" }),
    );
    expect(idsOf(one)).toEqual(["x402-headers-not-exposed"]);
    expect(one[0]?.message).toMatch(/^PAYMENT-RESPONSE is missing/);
    expect(idsOf(judgeX402(evidence(goodX402(), {})))).toEqual(["x402-headers-not-exposed"]);
    expect(judgeX402(evidence(goodX402(), { "access-control-expose-headers": "*" }))).toEqual([]);
    // What a browser reads is the answer to a request with an Origin: the CORS probe's.
    const probed: Evidence = {
      ...evidence(goodX402(), EXPOSED),
      cors: { kind: "response", origin: "https://a.invalid", status: 402, headers: {} },
    };
    expect(idsOf(judgeX402(probed))).toEqual(["x402-headers-not-exposed"]);
    // A v1 challenge in the body alone uses no such header.
    const v1 = goodX402();
    v1.headerBytes = null;
    expect(judgeX402(evidence(v1, {}))).toEqual([]);
  });

  it("a PAYMENT-REQUIRED header over 8 KiB", () => {
    const x = goodX402();
    x.headerBytes = 8 * 1024 + 1;
    expect(idsOf(judgeX402(evidence(x)))).toEqual(["x402-header-too-large"]);
    x.headerBytes = 8 * 1024;
    expect(judgeX402(evidence(x))).toEqual([]);
  });

  it("no Bazaar description; no discovery document (judged only when known)", () => {
    const x = goodX402();
    x.challenges[0]!.bazaar = false;
    expect(idsOf(judgeX402(evidence(x)))).toEqual(["x402-no-bazaar"]);
    const hidden = goodX402();
    hidden.discovery = { wellKnown: false, openApi: false };
    expect(idsOf(judgeX402(evidence(hidden)))).toEqual(["x402-no-discovery"]);
    hidden.discovery = { wellKnown: false, openApi: null };
    expect(judgeX402(evidence(hidden))).toEqual([]);
    expect(x402Section(evidence(hidden))?.discovery).toBeNull();
  });

  it("the discovery documents' contents", () => {
    expect(isWellKnownX402(Buffer.from('{"version":1,"resources":["POST https://a/x"]}'))).toBe(
      true,
    );
    expect(isWellKnownX402(Buffer.from("<html>not found</html>"))).toBe(false);
    expect(isWellKnownX402(Buffer.from('{"version":1}'))).toBe(false);
    expect(namesPaymentInfo(Buffer.from('{"paths":{"/x":{"post":{"x-payment-info":{}}}}}'))).toBe(
      true,
    );
    expect(namesPaymentInfo(Buffer.from('{"paths":{}}'))).toBe(false);
  });
});
