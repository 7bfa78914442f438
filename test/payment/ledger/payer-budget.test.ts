import { RateLimiterMemory } from "rate-limiter-flexible";
import { describe, expect, it } from "vitest";
import { RateLimiterPayerBudget, memoryPayerBudget } from "../../../src/payment/index.js";

const PAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

describe("payer budget", () => {
  it("reserves up to the limit, then refuses with the time until a unit is free", async () => {
    const budget = memoryPayerBudget(2);
    expect(await budget.reserve(PAYER)).toEqual({ ok: true });
    expect(await budget.reserve(PAYER.toLowerCase())).toEqual({ ok: true });
    const refused = await budget.reserve(PAYER);
    expect(refused.ok).toBe(false);
    expect(refused.ok === false && refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.ok === false && refused.retryAfterMs).toBeLessThanOrEqual(60_000);
    // Another payer has its own budget.
    expect(await budget.reserve("0x90F79bf6EB2c4f870365E785982E1f101E93b906")).toEqual({
      ok: true,
    });
  });

  it("a refund frees a unit; refused reservations take none", async () => {
    const budget = memoryPayerBudget(1);
    expect((await budget.reserve(PAYER)).ok).toBe(true);
    for (let i = 0; i < 5; i++) expect((await budget.reserve(PAYER)).ok).toBe(false);
    await budget.refund(PAYER);
    expect((await budget.reserve(PAYER)).ok).toBe(true);
  });

  it("of many simultaneous reservations only the limit succeed", async () => {
    const budget = memoryPayerBudget(3);
    const results = await Promise.all(Array.from({ length: 10 }, () => budget.reserve(PAYER)));
    expect(results.filter((r) => r.ok)).toHaveLength(3);
  });

  it("a refund into a fresh window gives no spare unit", async () => {
    const limiter = new RateLimiterMemory({ points: 1, duration: 60 });
    const budget = new RateLimiterPayerBudget(limiter);
    await budget.refund(PAYER);
    expect((await budget.reserve(PAYER)).ok).toBe(true);
    expect((await budget.reserve(PAYER)).ok).toBe(false);
  });
});
