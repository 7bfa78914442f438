import { describe, expect, it } from "vitest";
import { MemoryReplayStore, paymentProofKey, paymentProofTtlMs } from "../../src/payment/index.js";

const accepted = { network: "eip155:84532", asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" };
function proof(overrides: Record<string, unknown> = {}, signature = "0xaa") {
  return {
    accepted,
    payload: {
      signature,
      authorization: {
        from: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
        to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
        value: "50000",
        validAfter: "0",
        validBefore: "2000000000",
        nonce: "0x" + "11".repeat(32),
        ...overrides,
      },
    },
  };
}

describe("MemoryReplayStore", () => {
  it("keeps a paid record until its time to live, and a bounded number of them", async () => {
    let now = 1_000;
    const store = new MemoryReplayStore({ now: () => now, maxEntries: 2 });
    await store.putRecord("r", "kept", 3_600_000);
    now += 3_599_999;
    expect(await store.getRecord("r")).toBe("kept");
    now += 1;
    expect(await store.getRecord("r")).toBeUndefined();
    for (const key of ["a", "b", "c"]) await store.putRecord(key, key, 60_000);
    expect(await store.getRecord("a")).toBeUndefined();
    expect(await store.getRecord("c")).toBe("c");
    await store.deleteRecord("c");
    expect(await store.getRecord("c")).toBeUndefined();
  });

  it("lets exactly one of many simultaneous claims win", async () => {
    const store = new MemoryReplayStore();
    const results = await Promise.all(Array.from({ length: 10 }, () => store.claim("k", 60_000)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it("a released claim can be claimed again; a spent one cannot", async () => {
    const store = new MemoryReplayStore();
    expect(await store.claim("a", 60_000)).toBe(true);
    await store.release("a");
    expect(await store.claim("a", 60_000)).toBe(true);
    await store.markSpent("a");
    await store.release("a"); // a late release must not free a spent proof
    expect(await store.claim("a", 60_000)).toBe(false);
  });

  it("counts releases after unpaid work and refuses a proof released maxReleases times", async () => {
    const store = new MemoryReplayStore();
    for (let i = 0; i < 3; i++) {
      expect(await store.claim("p", 60_000, 3)).toBe(true);
      await store.release("p", true);
    }
    expect(await store.releases("p")).toBe(3);
    expect(await store.claim("p", 60_000, 3)).toBe(false);
    // Releases that were not counted (nothing ran) do not use the allowance up.
    expect(await store.claim("q", 60_000, 1)).toBe(true);
    await store.release("q");
    expect(await store.claim("q", 60_000, 1)).toBe(true);
    await store.release("q", true);
    expect(await store.claim("q", 60_000, 1)).toBe(false);
  });

  it("a counted proof is claimed by one of many simultaneous copies, and forgotten after its ttl", async () => {
    let now = 1_000;
    const store = new MemoryReplayStore({ now: () => now });
    expect(await store.claim("r", 100, 2)).toBe(true);
    await store.release("r", true);
    const results = await Promise.all(Array.from({ length: 5 }, () => store.claim("r", 100, 2)));
    expect(results.filter(Boolean)).toHaveLength(1);
    now += 200;
    expect(await store.releases("r")).toBe(0);
  });

  it("forgets entries after their ttl and stays within its bound", async () => {
    let now = 1_000;
    const store = new MemoryReplayStore({ maxEntries: 3, now: () => now });
    expect(await store.claim("old", 10)).toBe(true);
    now += 11;
    expect(await store.claim("old", 10)).toBe(true);
    for (const k of ["b", "c", "d", "e"]) await store.claim(k, 60_000);
    expect(store.size).toBeLessThanOrEqual(3);
    expect(await store.claim("e", 60_000)).toBe(false);
  });
});

describe("paymentProofKey", () => {
  it("is the same for the same authorization whatever the signature bytes", () => {
    expect(paymentProofKey(proof({}, "0xaa"))).toBe(paymentProofKey(proof({}, "0xbb")));
  });

  it("differs by nonce, payer and network", () => {
    const base = paymentProofKey(proof());
    expect(paymentProofKey(proof({ nonce: "0x" + "22".repeat(32) }))).not.toBe(base);
    expect(paymentProofKey(proof({ from: "0x90F79bf6EB2c4f870365E785982E1f101E93b906" }))).not.toBe(
      base,
    );
    expect(
      paymentProofKey({ ...proof(), accepted: { ...accepted, network: "eip155:8453" } }),
    ).not.toBe(base);
  });

  it("hashes non-EIP-3009 payloads whole, independent of key order", () => {
    const a = { accepted, payload: { x: 1, y: { b: 2, a: 1 } } };
    const b = { accepted, payload: { y: { a: 1, b: 2 }, x: 1 } };
    expect(paymentProofKey(a)).toBe(paymentProofKey(b));
    expect(paymentProofKey({ accepted, payload: { x: 2, y: { a: 1, b: 2 } } })).not.toBe(
      paymentProofKey(a),
    );
  });

  it("remembers a proof until its authorization expires, within bounds", () => {
    const now = 1_700_000_000_000;
    const ttl = paymentProofTtlMs(proof({ validBefore: String(now / 1000 + 3600) }), now);
    expect(ttl).toBe(3600_000 + 60_000);
    expect(paymentProofTtlMs(proof({ validBefore: "1" }), now)).toBe(120_000);
  });
});
