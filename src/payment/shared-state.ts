import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis } from "rate-limiter-flexible";
import type { RateLimiterAbstract } from "rate-limiter-flexible";
import { describeError } from "./describe-error.js";
import { RateLimiterPayerBudget, type PayerBudget } from "./ledger/payer-budget.js";
import { KEY_PREFIX, createRedisClient } from "../store/index.js";

/** A rate budget: `points` per `durationSeconds` per key, counted under `keyPrefix`. */
export interface LimiterOptions {
  keyPrefix: string;
  points: number;
  durationSeconds: number;
}

/**
 * The rate counters several instances of the service share to act as one (docs/operations.md,
 * "Shared state in Redis"): in Redis when REDIS_URL is set, else in this process's memory. The
 * payment records have their own store (src/store/).
 */
export interface SharedState {
  readonly kind: "memory" | "redis";
  /** A rate limiter over the shared counters (memory or Redis, the same API). */
  limiterFor(options: LimiterOptions): RateLimiterAbstract;
  /** The per-payer unpaid-snapshot budget (ledger/payer-budget.ts) over `limiterFor`. */
  payerBudget(perMinute: number): PayerBudget;
  /** "down" when Redis does not answer a PING within the command timeout; memory is always up. */
  ping(): Promise<"ok" | "down">;
  /**
   * Whether the store takes a write now: one short-lived probe key is SET. A Redis that answers
   * PING may still refuse writes (a read-only replica, out of memory, too few replicas).
   */
  writable(): Promise<boolean>;
  close(): Promise<void>;
}

export interface SharedStateOptions {
  /** REDIS_URL; unset: memory. */
  redisUrl?: string | undefined;
  /** One short line per event; the caller rate-limits it (src/cli/serve/rate-limited-log.ts). */
  log?: (line: string) => void;
  /** Told of every error of the Redis connection (a metric). */
  onError?: () => void;
}

/** The key `writable()` sets; it lives a few seconds, as every key here has a TTL. */
const WRITE_PROBE_KEY = `${KEY_PREFIX}ready-probe`;
const WRITE_PROBE_TTL_MS = 5_000;

/** How long a start waits for Redis's first answer; past it the paid route is 503 until then. */
const FIRST_CONNECT_WAIT_MS = 3_000;

/**
 * The shared state the CLI creates once per process and hands to the gate and the limits. With
 * Redis, waits (briefly) for the first connection, so the first paid request finds it ready; a
 * Redis still down then is one log line, and the state connects by itself when it is up.
 */
export async function createSharedState(options: SharedStateOptions = {}): Promise<SharedState> {
  if (options.redisUrl === undefined) return memorySharedState();
  const log = options.log ?? (() => {});
  const { state, client } = redisSharedState(options.redisUrl, log, options.onError);
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => done(false), FIRST_CONNECT_WAIT_MS);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    if (client.status === "ready") done(true);
    else client.on("ready", onReady);
  });
  if (!ready) log("redis not answering yet: paid requests get 503 until it does");
  return state;
}

/** The per-payer budget over a state's own limiters, memory or Redis alike. */
function payerBudgetOver(
  limiterFor: (o: LimiterOptions) => RateLimiterAbstract,
): (perMinute: number) => PayerBudget {
  return (perMinute) =>
    new RateLimiterPayerBudget(
      limiterFor({ keyPrefix: "payer", points: perMinute, durationSeconds: 60 }),
    );
}

function memorySharedState(): SharedState {
  const limiterFor = (o: LimiterOptions): RateLimiterAbstract =>
    new RateLimiterMemory({
      keyPrefix: o.keyPrefix,
      points: o.points,
      duration: o.durationSeconds,
    });
  return {
    kind: "memory",
    limiterFor,
    payerBudget: payerBudgetOver(limiterFor),
    ping: () => Promise.resolve("ok"),
    writable: () => Promise.resolve(true),
    close: () => Promise.resolve(),
  };
}

function redisSharedState(
  url: string,
  log: (line: string) => void,
  onError: () => void = () => {},
): { state: SharedState; client: Redis } {
  let lastError: string | undefined;
  const client = createRedisClient(url, (error) => {
    onError();
    // The same error repeats on every reconnect attempt: said once until Redis answers again.
    const line = `redis unavailable: ${describeError(error)}`;
    if (line !== lastError) log(line);
    lastError = line;
  });
  client.on("ready", () => {
    if (lastError !== undefined) log("redis answers again");
    lastError = undefined;
  });
  const limiterFor = (o: LimiterOptions): RateLimiterAbstract =>
    new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${KEY_PREFIX}${o.keyPrefix}`,
      points: o.points,
      duration: o.durationSeconds,
      // Disconnected: reject at once (the caller answers 503), never queue.
      rejectIfRedisNotReady: true,
    });
  const state: SharedState = {
    kind: "redis",
    limiterFor,
    payerBudget: payerBudgetOver(limiterFor),
    ping: () =>
      client.ping().then(
        () => "ok" as const,
        () => "down" as const,
      ),
    writable: () =>
      client.set(WRITE_PROBE_KEY, "1", "PX", WRITE_PROBE_TTL_MS).then(
        (reply) => reply === "OK",
        () => false,
      ),
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
  };
  return { state, client };
}
