/**
 * Which chain `secsnap pay` reads once a signed proof got no report: `--rpc` first, the devnet's
 * anvil for a devnet offer of an API on this machine, Base's public RPC otherwise (never read by
 * the tests: test/cli/pay/pay.e2e.test.ts always passes `--rpc` to its own devnet).
 */
import type { PaymentRequirements } from "@x402/core/types";
import { describe, expect, it } from "vitest";
import { authorizationOf, chainRpc } from "../../../src/cli/pay/charge.js";

const USDC_SEPOLIA = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const LOCAL_API = new URL("http://127.0.0.1:8080/v1/snapshot");

function offer(network: string, extra: Record<string, unknown> = {}): PaymentRequirements {
  return {
    scheme: "exact",
    network: network as PaymentRequirements["network"],
    amount: "50000",
    asset: USDC_SEPOLIA,
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    maxTimeoutSeconds: 300,
    extra: { name: "USDC", version: "2", ...extra },
  };
}

describe("the chain read", () => {
  it("is --rpc when given, whatever the offer", () => {
    const rpc = "http://127.0.0.1:9999";
    expect(chainRpc(rpc, offer("eip155:84532", { devnet: true }), LOCAL_API, {})).toBe(rpc);
    expect(chainRpc(rpc, offer("eip155:8453"), LOCAL_API, {})).toBe(rpc);
  });

  it("is the devnet's anvil on this machine for a devnet offer, on DEVNET_RPC_PORT if set", () => {
    const devnet = offer("eip155:84532", { devnet: true });
    expect(chainRpc(undefined, devnet, LOCAL_API, {})).toBe("http://127.0.0.1:8545");
    expect(chainRpc(undefined, devnet, LOCAL_API, { DEVNET_RPC_PORT: "9545" })).toBe(
      "http://127.0.0.1:9545",
    );
    expect(chainRpc(undefined, devnet, LOCAL_API, { DEVNET_RPC_PORT: "x" })).toBe(
      "http://127.0.0.1:8545",
    );
    for (const api of ["http://localhost:8080/", "http://[::1]:8080/", "http://127.0.0.2/"]) {
      expect(chainRpc(undefined, devnet, new URL(api), {})).toBe("http://127.0.0.1:8545");
    }
  });

  it("is none for a devnet offer of an API on another machine: its anvil is not ours", () => {
    const devnet = offer("eip155:84532", { devnet: true });
    for (const api of [
      "http://192.0.2.10:8080/",
      "https://devnet.example.org/",
      "http://[2001:db8::1]/",
    ]) {
      expect(chainRpc(undefined, devnet, new URL(api), {})).toBeUndefined();
    }
  });

  it("is Base's public RPC otherwise (Base Sepolia without the devnet mark included)", () => {
    expect(chainRpc(undefined, offer("eip155:84532"), LOCAL_API, {})).toBe(
      "https://sepolia.base.org",
    );
    expect(chainRpc(undefined, offer("eip155:8453"), LOCAL_API, {})).toBe(
      "https://mainnet.base.org",
    );
  });

  it("asks about the proof's own authorization", () => {
    const authorization = {
      from: "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
      to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      value: "50000",
      validAfter: "1700000000",
      validBefore: "1700000600",
      nonce: `0x${"ab".repeat(32)}`,
    };
    // The same for x402 v2 and v1 payloads: both carry it in `payload.authorization`.
    for (const payload of [
      { x402Version: 2, accepted: offer("eip155:84532"), payload: { authorization } },
      { x402Version: 1, network: "base-sepolia", payload: { authorization } },
    ]) {
      expect(authorizationOf(payload, offer("eip155:84532"))).toEqual({
        network: "eip155:84532",
        asset: USDC_SEPOLIA,
        from: authorization.from,
        to: authorization.to,
        value: 50_000n,
        nonce: authorization.nonce,
        validBefore: 1_700_000_600n,
      });
    }
    expect(authorizationOf({ payload: {} }, offer("eip155:84532"))).toBeUndefined();
  });
});
