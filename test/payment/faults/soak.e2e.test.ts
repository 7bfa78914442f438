/**
 * The money soak's short run (docs/faults.md, "The soak"): 50 paid calls drawn by a fixed seed,
 * over x402 v1 and v2, HTTP and MCP, the embedded store and Redis, each under a fault drawn at
 * random (facilitator answers held, lost or pending; an instance SIGKILLed or SIGTERMed and
 * started again; Redis restarted; the payer spending its own nonce), each retried by an honest
 * client; then every signed authorization is audited on chain. Each must have moved nothing and
 * got no report, or moved the price to payTo once and got its report (now or on a last send of
 * the same proof). `npm run soak` is the long run.
 */
import { describe, expect, it } from "vitest";
import { SOAK_FAULTS } from "../../fixtures/soak-call.js";
import { formatTally, runSoak, violationsOf } from "../../fixtures/soak.js";

/** A seed whose 50 calls draw every fault, every place a crash strikes, and all 16 mixes of
 * generation, route, store and payment id. */
const SEED = 82;
const CALLS = 50;

describe("the money soak, short run", () => {
  it(
    `${CALLS} calls of seed ${SEED}: every authorization moved nothing and got no report, or paid the price once and got its report`,
    {
      timeout: 600_000,
    },
    async () => {
      const result = await runSoak({ calls: CALLS, seed: SEED, concurrency: 3, log: () => {} });
      const tally = formatTally(result);
      console.log(tally);
      expect(
        result.calls.filter((c) => c.error !== undefined).map((c) => c.plan.index),
        `calls the soak could not run\n${tally}`,
      ).toEqual([]);
      // Every fault was drawn (Redis restarts with a Redis), every call audited, and the faults
      // did strike: the soak is not idle.
      const drawn = new Set(result.calls.map((c) => c.plan.fault));
      const possible = SOAK_FAULTS.filter(
        (f) => f !== "redis-restart" || result.stores.includes("redis"),
      );
      expect([...drawn].sort()).toEqual([...possible].sort());
      expect(result.calls.filter((c) => c.verdict).length).toBe(CALLS);
      expect(
        result.calls.filter((c) => c.plan.fault !== "none" && c.record?.struck).length,
      ).toBeGreaterThan(CALLS / 2);
      expect(
        violationsOf(result).map((c) => c.plan.index),
        `violations\n${tally}`,
      ).toEqual([]);
    },
  );
});
