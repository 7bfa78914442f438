/**
 * One instance's sign-in nonces (src/store/issued-nonces.ts): each taken once while it lives,
 * the expired forgotten as new ones are issued, and at most 100,000 outstanding — forgetting only
 * ever refuses.
 */
import { describe, expect, it } from "vitest";
import { IssuedNonces } from "../../src/store/issued-nonces.js";

describe("IssuedNonces", () => {
  it("takes an issued nonce once while it lives; an unknown or expired one never", () => {
    let now = 1_000;
    const nonces = new IssuedNonces(() => now);
    nonces.issue("a", 5_000);
    nonces.issue("b", 5_000);
    expect(nonces.take("unknown")).toBe(false);
    expect(nonces.take("a")).toBe(true);
    expect(nonces.take("a")).toBe(false);
    now += 5_000;
    expect(nonces.take("b")).toBe(false);
  });

  it("forgets the expired as it issues, and past 100,000 outstanding the oldest: each then refused", () => {
    let now = 1_000;
    const nonces = new IssuedNonces(() => now);
    nonces.issue("expired", 1_000);
    now += 1_000;
    nonces.issue("fresh", 60_000);
    now -= 1_000; // the expired one was forgotten, not merely out of time
    expect(nonces.take("expired")).toBe(false);
    now += 1_000;
    for (let i = 0; i < 100_000; i++) nonces.issue(`n${i}`, 60_000);
    expect(nonces.take("fresh")).toBe(false);
    expect(nonces.take("n0")).toBe(true);
    expect(nonces.take("n99999")).toBe(true);
  });
});
