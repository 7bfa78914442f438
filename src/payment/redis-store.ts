import type { Redis } from "ioredis";
import { KEY_PREFIX } from "../store/index.js";
import type { ReplayStore } from "./replay-guard.js";

/** A proof or payment-id claim: a hash {s: c(laimed) | f(ree) | p (spent), r: counted releases}. */
const CLAIM = `${KEY_PREFIX}claim:`;
/** A paid record (kept answer, unsettled report): a string. */
const RECORD = `${KEY_PREFIX}record:`;

// Lua, so that each check-and-change is one atomic step for every instance sharing the Redis.
// The claim and its release count live in one hash with one TTL (PEXPIRE on every write path).
const CLAIM_SCRIPT = `
local s = redis.call('HGET', KEYS[1], 's')
local ttl = tonumber(ARGV[1])
if not s then
  redis.call('HSET', KEYS[1], 's', 'c', 'r', 0)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return 1
end
if s ~= 'f' then return 0 end
if ARGV[2] ~= '' and tonumber(redis.call('HGET', KEYS[1], 'r') or '0') >= tonumber(ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 's', 'c')
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1`;

const RELEASE_SCRIPT = `
if redis.call('HGET', KEYS[1], 's') ~= 'c' then return 0 end
local r = tonumber(redis.call('HGET', KEYS[1], 'r') or '0')
if ARGV[1] == '1' then r = r + 1 end
if r == 0 then redis.call('DEL', KEYS[1]) else redis.call('HSET', KEYS[1], 's', 'f', 'r', r) end
return 1`;

const EXTEND_SCRIPT = `
if redis.call('HGET', KEYS[1], 's') ~= 'c' then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[1])`;

// HSET on an existing key keeps its TTL; a missing (expired) key is not brought back.
const MARK_SPENT_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 's', 'p')
return 1`;

interface ReplayCommands {
  secsnapClaim(key: string, ttlMs: number, maxReleases: string): Promise<number>;
  secsnapRelease(key: string, counted: "0" | "1"): Promise<number>;
  secsnapMarkSpent(key: string): Promise<number>;
  secsnapExtend(key: string, ttlMs: number): Promise<number>;
}

/**
 * The ReplayStore (replay-guard.ts) in Redis, shared by every instance that uses the same
 * Redis: the same rules as MemoryReplayStore, each change one Lua script, every key with a TTL.
 * A command that fails or times out rejects; the gate answers 503 then (docs/operations.md).
 */
export class RedisReplayStore implements ReplayStore {
  private readonly commands: ReplayCommands;

  constructor(private readonly client: Redis) {
    client.defineCommand("secsnapClaim", { numberOfKeys: 1, lua: CLAIM_SCRIPT });
    client.defineCommand("secsnapRelease", { numberOfKeys: 1, lua: RELEASE_SCRIPT });
    client.defineCommand("secsnapMarkSpent", { numberOfKeys: 1, lua: MARK_SPENT_SCRIPT });
    client.defineCommand("secsnapExtend", { numberOfKeys: 1, lua: EXTEND_SCRIPT });
    this.commands = client as unknown as ReplayCommands;
  }

  async claim(key: string, ttlMs: number, maxReleases = Infinity): Promise<boolean> {
    const max = Number.isFinite(maxReleases) ? String(maxReleases) : "";
    return (await this.commands.secsnapClaim(CLAIM + key, Math.max(1, ttlMs), max)) === 1;
  }

  async release(key: string, counted = false): Promise<void> {
    await this.commands.secsnapRelease(CLAIM + key, counted ? "1" : "0");
  }

  async extend(key: string, ttlMs: number): Promise<void> {
    await this.commands.secsnapExtend(CLAIM + key, Math.max(1, ttlMs));
  }

  async markSpent(key: string): Promise<void> {
    await this.commands.secsnapMarkSpent(CLAIM + key);
  }

  async releases(key: string): Promise<number> {
    return Number((await this.client.hget(CLAIM + key, "r")) ?? 0);
  }

  async getRecord(key: string): Promise<string | undefined> {
    return (await this.client.get(RECORD + key)) ?? undefined;
  }

  async putRecord(key: string, value: string, ttlMs: number): Promise<void> {
    await this.client.set(RECORD + key, value, "PX", Math.max(1, ttlMs));
  }

  async deleteRecord(key: string): Promise<void> {
    await this.client.del(RECORD + key);
  }
}
