import { describe, expect, it } from "vitest";
import { ConfigError, loadPaymentConfig } from "../../src/config.js";
import {
  paidRecordOptionsFromConfig,
  paymentGateOptionsFromConfig,
} from "../../src/payment/index.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const production = {
  X402_PAY_TO: PAY_TO,
  X402_FACILITATOR_URL: "https://facilitator.example/x402",
};

describe("payment configuration", () => {
  it("turns the environment into one accepts network per configured name", () => {
    const options = paymentGateOptionsFromConfig(
      loadPaymentConfig({ ...production, X402_NETWORKS: "base,base-sepolia" }),
    );
    expect(options).toEqual({
      payTo: PAY_TO,
      networks: ["eip155:8453", "eip155:84532"],
      priceUsdc: "0.05",
      facilitatorUrl: "https://facilitator.example/x402",
    });
    const one = loadPaymentConfig({ ...production, X402_NETWORKS: "base" });
    expect(paymentGateOptionsFromConfig(one).networks).toEqual(["eip155:8453"]);
  });

  it("sells on Base alone in production unless a test network is named; devnet mode on its own", () => {
    expect(loadPaymentConfig(production).networks).toEqual(["base"]);
    expect(loadPaymentConfig({ ...production, X402_NETWORKS: " " }).networks).toEqual(["base"]);
    expect(loadPaymentConfig({}).networks).toEqual(["base-sepolia"]);
  });

  it("devnet mode offers only eip155:84532 with the devnet's payTo and facilitator", () => {
    const options = paymentGateOptionsFromConfig(loadPaymentConfig({}), {
      payTo: PAY_TO,
      facilitatorUrl: "http://127.0.0.1:4022",
      network: "eip155:84532",
    });
    expect(options.networks).toEqual(["eip155:84532"]);
    expect(options.facilitatorUrl).toBe("http://127.0.0.1:4022");
  });

  it("reads X402_FACILITATOR_AUTH_HEADER as one header, and names it when malformed", () => {
    const config = loadPaymentConfig({
      ...production,
      X402_FACILITATOR_AUTH_HEADER: "Authorization: Bearer abc def",
    });
    expect(paymentGateOptionsFromConfig(config).facilitatorHeaders).toEqual({
      Authorization: "Bearer abc def",
    });
    for (const bad of ["no colon here", ": value", "Bad Name: x", "Authorization:"]) {
      expect(() => loadPaymentConfig({ ...production, X402_FACILITATOR_AUTH_HEADER: bad })).toThrow(
        ConfigError,
      );
      try {
        loadPaymentConfig({ ...production, X402_FACILITATOR_AUTH_HEADER: bad });
      } catch (err) {
        expect((err as ConfigError).variable).toBe("X402_FACILITATOR_AUTH_HEADER");
      }
    }
  });

  it.each([
    ["X402_PAY_TO", { X402_PAY_TO: "0x123" }],
    ["X402_PAY_TO", { X402_PAY_TO: "70997970C51812dc3A010C7d01b50e0d17dc79C8" }],
    ["X402_NETWORKS", { X402_NETWORKS: "ethereum" }],
    ["X402_NETWORKS", { X402_NETWORKS: "base,BASE-SEPOLIA" }],
    ["X402_NETWORKS", { X402_NETWORKS: " , " }],
    ["X402_NETWORKS", { X402_NETWORKS: "base,base" }],
    ["X402_PAY_TO", { X402_PAY_TO: `0x${"0".repeat(40)}` }],
    ["X402_FACILITATOR_URL", { X402_FACILITATOR_URL: "ftp://facilitator.example/" }],
    ["X402_FACILITATOR_URL", { X402_FACILITATOR_URL: "not a url" }],
    ["X402_FACILITATOR_URL", { X402_FACILITATOR_URL: "" }],
    ["X402_PRICE_USDC", { X402_PRICE_USDC: "0" }],
    ["X402_PRICE_USDC", { X402_PRICE_USDC: "-1" }],
    ["X402_PRICE_USDC", { X402_PRICE_USDC: "1e3" }],
    ["X402_PRICE_USDC", { X402_PRICE_USDC: "0.0000001" }],
    ["X402_PRICE_USDC", { X402_PRICE_USDC: "five cents" }],
    ["SNAPSHOT_PROOF_RELEASES", { SNAPSHOT_PROOF_RELEASES: "-1" }],
    ["SNAPSHOT_PROOF_RELEASES", { SNAPSHOT_PROOF_RELEASES: "2.5" }],
    ["SNAPSHOT_PROOF_RELEASES", { SNAPSHOT_PROOF_RELEASES: "many" }],
    ["SNAPSHOT_PROOF_RELEASES", { SNAPSHOT_PROOF_RELEASES: "1000" }],
    ["SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE", { SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE: "0" }],
    ["SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE", { SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE: "1e9" }],
    ["SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE", { SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE: "ten" }],
  ])("refuses a bad %s at start with one line naming it (%j)", (variable, bad) => {
    let error: unknown;
    try {
      loadPaymentConfig({ ...production, ...bad });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as ConfigError).message).toMatch(new RegExp(`^${variable} `));
    expect((error as ConfigError).message).not.toContain("\n");
  });

  it("accepts the smallest USDC unit (6 decimals) as a price; 0.05 by default", () => {
    const config = loadPaymentConfig({ ...production, X402_PRICE_USDC: "0.000001" });
    expect(config.priceUsdc).toBe("0.000001");
    expect(loadPaymentConfig(production).priceUsdc).toBe("0.05");
  });
});

describe("bounds on unpaid work", () => {
  it("a proof is released 3 times and a payer has 60 unpaid snapshots a minute by default", () => {
    const config = loadPaymentConfig(production);
    expect(config.proofReleases).toBe(3);
    expect(config.refusedPerPayerPerMinute).toBe(60);
  });

  it("reads SNAPSHOT_PROOF_RELEASES and SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE", () => {
    const config = loadPaymentConfig({
      ...production,
      SNAPSHOT_PROOF_RELEASES: "0",
      SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE: " 5 ",
    });
    expect(config.proofReleases).toBe(0);
    expect(config.refusedPerPayerPerMinute).toBe(5);
  });

  it("SNAPSHOT_RETENTION_DAYS: 30 days unless set, 0 keeps nothing, anything else named", () => {
    const retention = (days: string) =>
      paidRecordOptionsFromConfig(
        loadPaymentConfig({ ...production, SNAPSHOT_RETENTION_DAYS: days }),
      ).snapshotRetentionMs;
    expect(paidRecordOptionsFromConfig(loadPaymentConfig(production)).snapshotRetentionMs).toBe(
      30 * 86_400_000,
    );
    expect(retention("0")).toBe(0);
    expect(retention("7")).toBe(7 * 86_400_000);
    for (const bad of ["-1", "1.5", "thirty", "3651"]) {
      expect(() => retention(bad)).toThrow(/SNAPSHOT_RETENTION_DAYS/);
    }
  });

  it("reads the RPC URL per network and the paid record lifetime, and names a bad one", () => {
    const defaults = loadPaymentConfig(production);
    expect(defaults.rpcUrls).toEqual({});
    expect(defaults.paidRecordTtlSeconds).toBe(3600);
    const config = loadPaymentConfig({
      ...production,
      X402_RPC_URL_BASE: "https://mainnet.base.example/rpc",
      X402_RPC_URL_BASE_SEPOLIA: "http://127.0.0.1:8545",
      X402_IDEMPOTENCY_TTL_SECONDS: "7200",
    });
    expect(paidRecordOptionsFromConfig(config)).toEqual({
      paidRecordTtlMs: 7_200_000,
      snapshotRetentionMs: 30 * 86_400_000,
      rpcUrls: {
        "eip155:8453": "https://mainnet.base.example/rpc",
        "eip155:84532": "http://127.0.0.1:8545",
      },
    });
    expect(
      paidRecordOptionsFromConfig(defaults, {
        network: "eip155:84532",
        rpcUrl: "http://127.0.0.1:8545",
      }).rpcUrls,
    ).toEqual({ "eip155:84532": "http://127.0.0.1:8545" });
    expect(() => loadPaymentConfig({ ...production, X402_RPC_URL_BASE: "ftp://x" })).toThrow(
      /X402_RPC_URL_BASE/,
    );
    expect(() => loadPaymentConfig({ ...production, X402_IDEMPOTENCY_TTL_SECONDS: "60" })).toThrow(
      /X402_IDEMPOTENCY_TTL_SECONDS/,
    );
  });
});
