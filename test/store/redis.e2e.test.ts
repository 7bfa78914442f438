/**
 * The Redis store (src/store/redis.ts) against a real redis-server: the contract
 * (test/store/contract.ts), atomicity across two clients (two instances), a record that survives
 * a SIGKILL of a Redis with `appendonly yes` restarted on the same directory, `writable()` false
 * while Redis refuses writes (maxmemory reached under noeviction), TTLs on every key, and the
 * start-up line about persistence.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  KEY_PREFIX,
  RedisPaymentRecordStore,
  createPaymentRecordStore,
  createRedisClient,
  redisPersistenceWarning,
  type PaymentRecordStore,
} from "../../src/store/index.js";
import { redisServerBinary, startRedis, type RedisProcess } from "../fixtures/redis.js";
import { storeContract } from "./contract.js";

const skip = !redisServerBinary;
let redis: RedisProcess | undefined;
const clients: Redis[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (!skip) redis = await startRedis();
}, 30_000);

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await redis?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A client as the service makes it, once connected (it queues nothing before). */
async function client(url: string): Promise<Redis> {
  const made = createRedisClient(url, () => {});
  clients.push(made);
  if (made.status !== "ready") await new Promise((resolve) => made.once("ready", resolve));
  return made;
}

const init = { fingerprint: "fp-1", version: 2 as const };

storeContract(
  "redis",
  async (options) => {
    await redis!.inspect.flushall(); // each contract test starts from an empty Redis
    return createPaymentRecordStore({
      redisUrl: redis!.url,
      dataDir: "/nonexistent-unused",
      recordTtlMs: options.recordTtlMs ?? 3_600_000,
    });
  },
  skip,
);

describe.skipIf(skip)("redis payment record store", () => {
  it("two instances (two clients) racing for one key: exactly one gets it", async () => {
    const a = new RedisPaymentRecordStore(await client(redis!.url));
    const b = new RedisPaymentRecordStore(await client(redis!.url));
    const key = `race-${Date.now()}`;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).acquire(key, `o${i}`, 60_000, init)),
    );
    expect(results.filter((r) => !r.held)).toHaveLength(1);
  });

  it("every key the store writes has a TTL", async () => {
    await redis!.inspect.flushall();
    const store = new RedisPaymentRecordStore(await client(redis!.url), { recordTtlMs: 60_000 });
    await store.acquire("k", "a", 60_000, init);
    const record = (await store.get("k"))!;
    await store.write("k", "a", { ...record, state: "settling" }, 60_000);
    await store.bindPaymentId("id", { authorizationKey: "k", fingerprint: "fp-1" }, 60_000);
    const keys = await redis!.inspect.keys(`${KEY_PREFIX}*`);
    expect(keys.length).toBe(3); // the record, the unresolved index, the payment id
    for (const key of keys) {
      const ttl = await redis!.inspect.pttl(key);
      expect(ttl, key).toBeGreaterThan(0);
    }
  });

  it("writable() is false while Redis refuses writes (maxmemory reached, noeviction)", async () => {
    const store = new RedisPaymentRecordStore(await client(redis!.url));
    expect(await store.writable()).toBe(true);
    await redis!.inspect.config("SET", "maxmemory", "1");
    try {
      expect(await store.writable()).toBe(false);
      // Reads still work: only writes are refused.
      expect(await store.get("anything")).toBeUndefined();
    } finally {
      await redis!.inspect.config("SET", "maxmemory", "0");
    }
    expect(await store.writable()).toBe(true);
  });

  it("writable() is false when Redis is gone", async () => {
    const own = await startRedis();
    try {
      const store = new RedisPaymentRecordStore(await client(own.url));
      expect(await store.writable()).toBe(true);
      await own.stop();
      expect(await store.writable()).toBe(false);
    } finally {
      await own.close();
    }
  });

  it("a record in a Redis with appendonly yes survives SIGKILL and a restart on the same dir", async () => {
    const dir = mkdtempSync(join(tmpdir(), "secsnap-redis-"));
    dirs.push(dir);
    const own = await startRedis({ appendonly: true, appendfsync: "always", dir });
    try {
      const store: PaymentRecordStore = new RedisPaymentRecordStore(await client(own.url));
      await store.acquire("paid", "a", 60_000, init);
      const record = (await store.get("paid"))!;
      const report = { status: 200, headers: { "content-type": "application/json" }, body: "{}" };
      expect(
        await store.write("paid", "a", { ...record, state: "report_kept", report }, 3_600_000),
      ).toBe(true);

      await own.kill();
      await own.start();

      const after = new RedisPaymentRecordStore(await client(own.url));
      const stored = await waitFor(() => after.get("paid"));
      expect(stored).toMatchObject({ state: "report_kept", report, fingerprint: "fp-1" });
      expect(await own.inspect.pttl(`${KEY_PREFIX}payment:paid`)).toBeGreaterThan(0);
      expect((await after.unresolved(10)).map((r) => r.key)).toEqual([]); // still leased
    } finally {
      await own.close();
    }
  });

  describe("redisPersistenceWarning", () => {
    it("one line naming appendonly for a Redis without an append-only file", async () => {
      const line = await redisPersistenceWarning(redis!.inspect);
      expect(line).toBeDefined();
      expect(line).toContain("appendonly is no");
      expect(line).not.toContain("maxmemory-policy");
      expect(line).not.toContain("\n");
    });

    it("nothing for appendonly yes with maxmemory-policy noeviction", async () => {
      const dir = mkdtempSync(join(tmpdir(), "secsnap-redis-"));
      dirs.push(dir);
      const own = await startRedis({ appendonly: true, dir, maxmemoryPolicy: "noeviction" });
      try {
        expect(await redisPersistenceWarning(own.inspect)).toBeUndefined();
        await own.inspect.config("SET", "maxmemory-policy", "allkeys-lru");
        const line = await redisPersistenceWarning(own.inspect);
        expect(line).toContain("maxmemory-policy is allkeys-lru");
        expect(line).not.toContain("appendonly");
      } finally {
        await own.close();
      }
    });

    it("the factory's store says the same line through its own client", async () => {
      const store = await createPaymentRecordStore({
        redisUrl: redis!.url,
        dataDir: "/nonexistent-unused",
        recordTtlMs: 60_000,
      });
      try {
        expect(store).toBeInstanceOf(RedisPaymentRecordStore);
        expect(await (store as RedisPaymentRecordStore).persistenceWarning()).toContain(
          "appendonly is no",
        );
      } finally {
        await store.close();
      }
    });

    it("one line saying it could not be checked when CONFIG is refused", async () => {
      await redis!.inspect.acl("SETUSER", "noconfig", "on", ">pw", "~*", "+@all", "-config");
      const limited = new Redis(redis!.url.replace("redis://", "redis://noconfig:pw@"));
      clients.push(limited);
      const line = await redisPersistenceWarning(limited);
      expect(line).toMatch(/could not be checked/);
      expect(line).not.toContain("\n");
    });
  });
});

/** A restarted Redis is answering once its client reconnected: retries the read until then. */
async function waitFor<T>(read: () => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      return await read();
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw lastError;
}
