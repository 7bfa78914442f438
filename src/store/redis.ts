import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { KEY_PREFIX } from "./redis-client.js";
import type {
  Acquired,
  KeptSnapshot,
  PaymentIdBinding,
  PaymentRecord,
  PaymentRecordStore,
  PaymentState,
  PublicSigningKey,
} from "./records.js";

/**
 * One hash per record: `r` the record as JSON (without its lease), `s` its state, `n` its
 * releases, `o` / `e` the lease's owner and expiry (ms on Redis's clock). The JSON is written
 * and read only by this process; the scripts never decode it, because Redis's cjson would turn an
 * empty array into an object and round numbers to 14 digits in a payload it re-encoded.
 */
const RECORD = `${KEY_PREFIX}payment:`;
const PAYMENT_ID = `${KEY_PREFIX}payment-id:`;
/** Sorted set of record keys in `settling` / `report_kept`, scored by the record's expiry. */
const UNRESOLVED = `${KEY_PREFIX}payment-unresolved`;
const PROBE = `${KEY_PREFIX}probe:`;
/** A kept paid report (JSON), expiring with its retention; a sign-in nonce we issued. */
const SNAPSHOT = `${KEY_PREFIX}snapshot:`;
const SIWX_NONCE = `${KEY_PREFIX}siwx-nonce:`;
/** The kids of the keys that signed kept reports, scored by their expiry; their JWKs by kid. */
const SIGNING_KEYS = `${KEY_PREFIX}signing-keys`;
const SIGNING_KEY_JWKS = `${KEY_PREFIX}signing-key-jwks`;

// Every script reads the clock with TIME, so leases of all instances compare on one clock.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** Keeps the index's own TTL at least as long as its newest member's. */
const INDEX = `
local function index(key, state, ttl, now)
  if state == 'settling' or state == 'report_kept' then
    redis.call('ZADD', KEYS[2], now + ttl, key)
    if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
  else
    redis.call('ZREM', KEYS[2], key)
  end
end`;

// KEYS: record, index. ARGV: owner, leaseMs, new record JSON, new record TTL, key.
// Returns {held, r, o, e, now}: the record as it was (r false when new) and its lease.
const ACQUIRE = `${NOW}
local lease = tonumber(ARGV[2])
local cur = redis.call('HMGET', KEYS[1], 'r', 'o', 'e')
if cur[1] and cur[3] and tonumber(cur[3]) > now then
  return {1, cur[1], cur[2], cur[3], now}
end
if cur[1] then
  redis.call('HSET', KEYS[1], 'o', ARGV[1], 'e', now + lease)
  if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
else
  redis.call('HSET', KEYS[1], 'r', ARGV[3], 's', 'claimed', 'n', 0, 'o', ARGV[1], 'e', now + lease)
  redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[4]), lease))
end
return {0, cur[1] or false, cur[2] or false, cur[3] or false, now}`;

// KEYS: record. ARGV: owner, leaseMs. A lease is ours until somebody else takes it.
const RENEW = `${NOW}
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'e', now + lease)
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
return 1`;

// KEYS: record, index. ARGV: owner, record JSON, state, releases, ttlMs, key.
const WRITE = `${NOW}${INDEX}
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[5])
redis.call('HSET', KEYS[1], 'r', ARGV[2], 's', ARGV[3], 'n', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ttl)
index(ARGV[6], ARGV[3], ttl, now)
return 1`;

// KEYS: record, index. ARGV: owner, key. Nothing learnt nor moved: deleted as if never claimed.
const RELEASE = `
local cur = redis.call('HMGET', KEYS[1], 'o', 's', 'n')
if cur[1] ~= ARGV[1] then return 0 end
if (cur[2] == 'free' or cur[2] == 'claimed') and tonumber(cur[3]) == 0 then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
else
  redis.call('HDEL', KEYS[1], 'o', 'e')
end
return 1`;

// KEYS: index. ARGV: limit, record key prefix. Drops members whose record is gone; skips live
// leases (their requests are still at work). Returns {r, o, e, …} per record found.
const UNRESOLVED_SCRIPT = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local limit = tonumber(ARGV[1])
local found = {}
local start = 0
while #found < limit * 3 do
  local keys = redis.call('ZRANGE', KEYS[1], start, start + 99)
  if #keys == 0 then break end
  start = start + #keys
  for _, key in ipairs(keys) do
    local cur = redis.call('HMGET', ARGV[2] .. key, 'r', 'o', 'e', 's')
    if not cur[1] then
      redis.call('ZREM', KEYS[1], key)
      start = start - 1
    elseif (cur[4] == 'settling' or cur[4] == 'report_kept')
        and not (cur[3] and tonumber(cur[3]) > now) then
      table.insert(found, cur[1])
      table.insert(found, cur[2] or false)
      table.insert(found, cur[3] or false)
      if #found >= limit * 3 then break end
    end
  end
end
return found`;

// KEYS: expiry set, JWKs. ARGV: kid, JWK JSON, TTL. An expiry is pushed on, never pulled back.
const REMEMBER_KEY = `${NOW}
local ttl = tonumber(ARGV[3])
local before = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not before or tonumber(before) < now + ttl then redis.call('ZADD', KEYS[1], now + ttl, ARGV[1]) end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
for _, key in ipairs(KEYS) do
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
return 1`;

// KEYS: expiry set, JWKs. Drops the expired keys; returns the others' JWKs, latest expiry first.
const SIGNING_KEYS_SCRIPT = `${NOW}
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #gone > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  redis.call('HDEL', KEYS[2], unpack(gone))
end
local kids = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', '(' .. now)
if #kids == 0 then return {} end
return redis.call('HMGET', KEYS[2], unpack(kids))`;

interface StoreCommands {
  secsnapPaymentAcquire(...args: (string | number)[]): Promise<(string | number | null)[]>;
  secsnapPaymentRenew(...args: (string | number)[]): Promise<number>;
  secsnapPaymentWrite(...args: (string | number)[]): Promise<number>;
  secsnapPaymentRelease(...args: (string | number)[]): Promise<number>;
  secsnapPaymentUnresolved(...args: (string | number)[]): Promise<(string | null)[]>;
  secsnapRememberSigningKey(...args: (string | number)[]): Promise<number>;
  secsnapSigningKeys(...args: (string | number)[]): Promise<(string | null)[]>;
}

/** A record JSON from the hash, with its lease fields put back. */
function recordOf(
  json: string | number | null | undefined,
  owner: string | number | null | undefined,
  expiresAt: string | number | null | undefined,
): PaymentRecord | undefined {
  if (typeof json !== "string") return undefined;
  const record = JSON.parse(json) as PaymentRecord;
  if (owner === null || owner === undefined || expiresAt === null || expiresAt === undefined) {
    return record;
  }
  return { ...record, lease: { owner: String(owner), expiresAt: Number(expiresAt) } };
}

/** The JSON kept in `r`: the record without its lease (the lease lives in `o` / `e`). */
function bodyOf(record: PaymentRecord): string {
  const { lease: _lease, ...rest } = record;
  return JSON.stringify(rest);
}

export interface RedisStoreOptions {
  /** Lifetime of a record created by `acquire` before its first `write`. */
  recordTtlMs?: number;
  /** Whether close() quits the client (the factory's own client), or leaves it to its owner. */
  ownsClient?: boolean;
}

/**
 * Payment records in Redis, shared by every instance using it (docs/operations.md, "Where
 * payment records live"). Each change is one Lua script, atomic for all instances; leases compare
 * to Redis's clock, never an instance's. How durable a write is depends on the Redis's own
 * persistence (`appendonly yes`, `noeviction`), which `redisPersistenceWarning` checks.
 */
export class RedisPaymentRecordStore implements PaymentRecordStore {
  readonly kind = "redis" as const;
  private readonly commands: StoreCommands;
  private readonly recordTtlMs: number;
  private readonly ownsClient: boolean;

  constructor(
    private readonly client: Redis,
    options: RedisStoreOptions = {},
  ) {
    client.defineCommand("secsnapPaymentAcquire", { numberOfKeys: 2, lua: ACQUIRE });
    client.defineCommand("secsnapPaymentRenew", { numberOfKeys: 1, lua: RENEW });
    client.defineCommand("secsnapPaymentWrite", { numberOfKeys: 2, lua: WRITE });
    client.defineCommand("secsnapPaymentRelease", { numberOfKeys: 2, lua: RELEASE });
    client.defineCommand("secsnapPaymentUnresolved", { numberOfKeys: 1, lua: UNRESOLVED_SCRIPT });
    client.defineCommand("secsnapRememberSigningKey", { numberOfKeys: 2, lua: REMEMBER_KEY });
    client.defineCommand("secsnapSigningKeys", { numberOfKeys: 2, lua: SIGNING_KEYS_SCRIPT });
    this.commands = client as unknown as StoreCommands;
    this.recordTtlMs = options.recordTtlMs ?? 3_600_000;
    this.ownsClient = options.ownsClient ?? false;
  }

  async acquire(
    key: string,
    owner: string,
    leaseMs: number,
    init: Pick<PaymentRecord, "fingerprint" | "version">,
  ): Promise<Acquired> {
    const fresh: PaymentRecord = {
      key,
      state: "claimed",
      fingerprint: init.fingerprint,
      version: init.version,
      releases: 0,
      updatedAt: Date.now(),
    };
    const [held, json, leaseOwner, leaseEnd] = await this.commands.secsnapPaymentAcquire(
      RECORD + key,
      UNRESOLVED,
      owner,
      Math.max(1, Math.ceil(leaseMs)),
      bodyOf(fresh),
      Math.max(1, Math.ceil(this.recordTtlMs)),
      key,
    );
    const record = recordOf(json, leaseOwner, leaseEnd);
    return held === 1 ? { held: true, record } : { held: false, record };
  }

  async renew(key: string, owner: string, leaseMs: number): Promise<boolean> {
    const renewed = await this.commands.secsnapPaymentRenew(
      RECORD + key,
      owner,
      Math.max(1, Math.ceil(leaseMs)),
    );
    return renewed === 1;
  }

  async write(key: string, owner: string, record: PaymentRecord, ttlMs: number): Promise<boolean> {
    const stored: PaymentRecord = { ...record, key, updatedAt: Date.now() };
    const written = await this.commands.secsnapPaymentWrite(
      RECORD + key,
      UNRESOLVED,
      owner,
      bodyOf(stored),
      stored.state satisfies PaymentState,
      stored.releases,
      Math.max(1, Math.ceil(ttlMs)),
      key,
    );
    return written === 1;
  }

  async release(key: string, owner: string): Promise<void> {
    await this.commands.secsnapPaymentRelease(RECORD + key, UNRESOLVED, owner, key);
  }

  async get(key: string): Promise<PaymentRecord | undefined> {
    const [json, owner, expiresAt] = await this.client.hmget(RECORD + key, "r", "o", "e");
    return recordOf(json, owner, expiresAt);
  }

  async bindPaymentId(
    idKey: string,
    binding: PaymentIdBinding,
    ttlMs: number,
  ): Promise<PaymentIdBinding> {
    const json = JSON.stringify(binding);
    const key = PAYMENT_ID + idKey;
    const set = await this.client.set(key, json, "PX", Math.max(1, Math.ceil(ttlMs)), "NX");
    if (set === "OK") return binding;
    const current = await this.client.get(key);
    // Expired between the two commands: nobody holds it, so it is ours to take again.
    if (current === null) return this.bindPaymentId(idKey, binding, ttlMs);
    return JSON.parse(current) as PaymentIdBinding;
  }

  async unresolved(limit: number): Promise<PaymentRecord[]> {
    if (limit <= 0) return [];
    const flat = await this.commands.secsnapPaymentUnresolved(UNRESOLVED, limit, RECORD);
    const found: PaymentRecord[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      const record = recordOf(flat[i], flat[i + 1], flat[i + 2]);
      if (record) found.push(record);
    }
    return found;
  }

  async keepSnapshot(id: string, snapshot: KeptSnapshot, ttlMs: number): Promise<void> {
    const json = JSON.stringify(snapshot);
    await this.client.set(SNAPSHOT + id, json, "PX", Math.max(1, Math.ceil(ttlMs)));
  }

  async snapshot(id: string): Promise<KeptSnapshot | undefined> {
    const json = await this.client.get(SNAPSHOT + id);
    return json === null ? undefined : (JSON.parse(json) as KeptSnapshot);
  }

  async issueNonce(nonce: string, ttlMs: number): Promise<void> {
    await this.client.set(SIWX_NONCE + nonce, "1", "PX", Math.max(1, Math.ceil(ttlMs)));
  }

  /** DEL answers 1 to exactly one caller, whichever instance asks first. */
  async takeNonce(nonce: string): Promise<boolean> {
    return (await this.client.del(SIWX_NONCE + nonce)) === 1;
  }

  async rememberSigningKey(key: PublicSigningKey, ttlMs: number): Promise<void> {
    const ttl = Math.max(1, Math.ceil(ttlMs));
    const json = JSON.stringify(key);
    await this.commands.secsnapRememberSigningKey(
      SIGNING_KEYS,
      SIGNING_KEY_JWKS,
      key.kid,
      json,
      ttl,
    );
  }

  async signingKeys(): Promise<PublicSigningKey[]> {
    const jwks = await this.commands.secsnapSigningKeys(SIGNING_KEYS, SIGNING_KEY_JWKS);
    return jwks.flatMap((json) => (json === null ? [] : [JSON.parse(json) as PublicSigningKey]));
  }

  async writable(): Promise<boolean> {
    try {
      // A write: a Redis at maxmemory with `noeviction` answers OOM here while reads still work.
      const probe = PROBE + randomUUID();
      await this.client.set(probe, "1", "PX", 10_000);
      await this.client.del(probe);
      return true;
    } catch {
      return false;
    }
  }

  /** `redisPersistenceWarning` for this store's own client (the factory's, which nobody else holds). */
  persistenceWarning(): Promise<string | undefined> {
    return redisPersistenceWarning(this.client);
  }

  async close(): Promise<void> {
    if (!this.ownsClient) return;
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

/**
 * One line when the Redis lacks the persistence payment records need (docs/operations.md, "Where
 * payment records live"), or when that cannot be checked; undefined when it has it.
 */
export async function redisPersistenceWarning(client: Redis): Promise<string | undefined> {
  let appendonly: string | undefined;
  let policy: string | undefined;
  try {
    appendonly = ((await client.config("GET", "appendonly")) as string[])[1];
    policy = ((await client.config("GET", "maxmemory-policy")) as string[])[1];
  } catch (error) {
    return (
      `Redis persistence could not be checked (CONFIG GET refused: ${(error as Error).message}): ` +
      "payment records need appendonly yes and maxmemory-policy noeviction (docs/operations.md)"
    );
  }
  const missing: string[] = [];
  if (appendonly !== "yes") missing.push(`appendonly is ${appendonly ?? "unknown"}, not yes`);
  if (policy !== "noeviction")
    missing.push(`maxmemory-policy is ${policy ?? "unknown"}, not noeviction`);
  if (missing.length === 0) return undefined;
  return (
    `Redis may lose payment records: ${missing.join("; ")} ` +
    "(a restart or memory pressure can then forget a paid report; docs/operations.md)"
  );
}
