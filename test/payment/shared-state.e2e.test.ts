/**
 * The shared state's contract (docs/operations.md, "Shared state in Redis"), the same table run
 * against memory and against a real redis-server: every Redis key has a TTL; the payer budget
 * and the rate budget are one budget across instances; a Redis stopped or hung fails fast, and
 * one started again is used again. (The payment records have their own store, src/store/.)
 */
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  KEY_PREFIX,
  REDIS_COMMAND_TIMEOUT_MS,
  createSharedState,
  type SharedState,
} from "../../src/payment/index.js";
import {
  redisServerBinary,
  silentRedis,
  startRedis,
  type RedisProcess,
} from "../fixtures/redis.js";

let redis: RedisProcess | undefined;
const opened: SharedState[] = [];

beforeAll(async () => {
  if (redisServerBinary) redis = await startRedis();
}, 30_000);

afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await redis?.close();
});

async function shared(kind: "memory" | "redis"): Promise<SharedState> {
  const state = await createSharedState(kind === "redis" ? { redisUrl: redis!.url } : {});
  opened.push(state);
  return state;
}

/** Every key Redis holds under our prefix, with its PTTL. */
async function keysWithTtl(): Promise<Map<string, number>> {
  const keys = await redis!.inspect.keys(`${KEY_PREFIX}*`);
  const ttls = new Map<string, number>();
  for (const key of keys) ttls.set(key, await redis!.inspect.pttl(key));
  return ttls;
}

let unique = 0;

const variants = ["memory", "redis"] as const;

describe.each(variants)("shared state in %s", (kind) => {
  const skip = kind === "redis" && !redisServerBinary;

  it.skipIf(skip)("one payer budget for two instances sharing the store", async () => {
    // Two instances: two SharedStates (two Redis clients); in memory, one process's budget.
    const a = (await shared(kind)).payerBudget(3);
    const b = kind === "redis" ? (await shared(kind)).payerBudget(3) : a;
    const payer = `0x${(++unique).toString(16).padStart(40, "0")}`;
    const results = await Promise.all([
      ...Array.from({ length: 5 }, () => a.reserve(payer)),
      ...Array.from({ length: 5 }, () => b.reserve(payer)),
    ]);
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    await b.refund(payer);
    expect((await a.reserve(payer)).ok).toBe(true);
    expect((await b.reserve(payer)).ok).toBe(false);
  });

  it.skipIf(skip)(
    "limiterFor: one rate budget for two instances, refused with the time to wait",
    async () => {
      const options = { keyPrefix: `ip-${++unique}`, points: 4, durationSeconds: 60 };
      const a = (await shared(kind)).limiterFor(options);
      const b = kind === "redis" ? (await shared(kind)).limiterFor(options) : a;
      const results = await Promise.allSettled([
        ...Array.from({ length: 3 }, () => a.consume("203.0.113.7")),
        ...Array.from({ length: 3 }, () => b.consume("203.0.113.7")),
      ]);
      const refused = results.filter((r) => r.status === "rejected");
      expect(refused).toHaveLength(2);
      for (const r of refused) {
        const wait = (r.reason as { msBeforeNext: number }).msBeforeNext;
        expect(wait).toBeGreaterThan(0);
        expect(wait).toBeLessThanOrEqual(60_000);
      }
      // Another client has its own budget.
      await expect(b.consume("203.0.113.8")).resolves.toBeDefined();
    },
  );

  it.skipIf(skip)("ping answers ok", async () => {
    expect(await (await shared(kind)).ping()).toBe("ok");
  });

  it.skipIf(skip)("writable() is true while the store takes writes", async () => {
    expect(await (await shared(kind)).writable()).toBe(true);
  });
});

describe.skipIf(!redisServerBinary)("Redis keys", () => {
  it("every key the store writes has a TTL, under the secsnap: prefix", async () => {
    const state = await shared("redis");
    await redis!.inspect.flushall();
    const budget = state.payerBudget(5);
    await budget.reserve("0xabc");
    await budget.refund("0xabc");
    await state.limiterFor({ keyPrefix: "ip", points: 10, durationSeconds: 60 }).consume("1.2.3.4");
    expect(await state.writable()).toBe(true);
    const ttls = await keysWithTtl();
    // The payer budget's counter, the client's counter, and the write probe (a few seconds).
    expect(ttls.size).toBe(3);
    for (const [name, ttl] of ttls) {
      expect(name.startsWith(KEY_PREFIX)).toBe(true);
      expect(ttl, name).toBeGreaterThan(0);
    }
  });
});

describe.skipIf(!redisServerBinary)("Redis faults", () => {
  it("a Redis that answers PING but refuses writes: writable() is false, true once it takes them", async () => {
    const own = await startRedis();
    const state = await createSharedState({ redisUrl: own.url });
    try {
      expect(await state.writable()).toBe(true);
      // No replica can acknowledge: Redis refuses every write (NOREPLICAS) and still answers PING.
      await own.inspect.config("SET", "min-replicas-to-write", "1");
      expect(await state.ping()).toBe("ok");
      expect(await state.writable()).toBe(false);
      await own.inspect.config("SET", "min-replicas-to-write", "0");
      expect(await state.writable()).toBe(true);
    } finally {
      await state.close();
      await own.close();
    }
  });

  it("stopped: every call rejects at once and ping says down; started again: used again, no new client", async () => {
    const own = await startRedis();
    const lines: string[] = [];
    const state = await createSharedState({ redisUrl: own.url, log: (l) => lines.push(l) });
    try {
      expect((await state.payerBudget(5).reserve("0xbefore")).ok).toBe(true);
      await own.stop();
      const started = performance.now();
      await expect(
        state.limiterFor({ keyPrefix: "ip", points: 10, durationSeconds: 60 }).consume("down"),
      ).rejects.toThrow();
      await expect(state.payerBudget(5).reserve("0xabc")).rejects.toThrow();
      expect(await state.ping()).toBe("down");
      expect(await state.writable()).toBe(false);
      // Generous bound: a failure, not a wait for Redis.
      expect(performance.now() - started).toBeLessThan(10 * REDIS_COMMAND_TIMEOUT_MS);

      // Reconnect attempts keep failing meanwhile: the error is said once, not per attempt.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(lines.filter((l) => l.startsWith("redis unavailable"))).toHaveLength(1);

      await own.start();
      await expect.poll(() => state.ping(), { timeout: 15_000, interval: 100 }).toBe("ok");
      await expect.poll(() => lines.at(-1)).toBe("redis answers again");
      expect((await state.payerBudget(5).reserve("0xabc")).ok).toBe(true);
    } finally {
      await state.close();
      await own.close();
    }
  }, 30_000);

  it("a Redis that accepts and never answers: calls fail within the command timeout", async () => {
    const silent = await silentRedis();
    const lines: string[] = [];
    const state = await createSharedState({ redisUrl: silent.url, log: (l) => lines.push(l) });
    // The start waited a little for the first answer, then said so in one line.
    expect(lines).toContain("redis not answering yet: paid requests get 503 until it does");
    try {
      await expect.poll(() => silent.accepted(), { timeout: 5_000 }).toBeGreaterThan(0);
      const started = performance.now();
      await expect(state.payerBudget(5).reserve("0xhung")).rejects.toThrow();
      expect(await state.ping()).toBe("down");
      expect(performance.now() - started).toBeLessThan(10 * REDIS_COMMAND_TIMEOUT_MS);
    } finally {
      await state.close();
      await silent.close();
    }
  }, 30_000);
});
