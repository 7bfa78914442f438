import { EmbeddedPaymentRecordStore } from "./embedded.js";
import type { PaymentRecordStore } from "./records.js";
import { RedisPaymentRecordStore } from "./redis.js";
import { createRedisClient } from "./redis-client.js";

/** How long a start waits for Redis's first answer. */
const FIRST_CONNECT_WAIT_MS = 3_000;

export interface PaymentRecordStoreOptions {
  /** REDIS_URL: set, the records live in that Redis (a fleet); unset, in DATA_DIR. */
  redisUrl?: string | undefined;
  /** DATA_DIR, absolute (config.ts resolves it). */
  dataDir: string;
  /** How long a record created by `acquire` lives before its first `write`. */
  recordTtlMs: number;
  /** One short line per event (Redis errors, a failed sweep); the caller rate-limits it. */
  log?: (line: string) => void;
}

/**
 * The store the service runs with: Redis when REDIS_URL is set, else the embedded database in
 * DATA_DIR. Opening the embedded one takes DATA_DIR's lock: a second process on the same
 * directory gets a ConfigError naming DATA_DIR. Memory is never chosen here.
 */
export async function createPaymentRecordStore(
  options: PaymentRecordStoreOptions,
): Promise<PaymentRecordStore> {
  const log = options.log ?? (() => {});
  if (options.redisUrl === undefined) {
    return EmbeddedPaymentRecordStore.open({
      dataDir: options.dataDir,
      recordTtlMs: options.recordTtlMs,
      log,
    });
  }
  let lastError: string | undefined;
  const client = createRedisClient(options.redisUrl, (error) => {
    // Repeated on every reconnect attempt: said once until Redis answers again.
    const line = `payment record store: redis unavailable: ${error.message}`;
    if (line !== lastError) log(line);
    lastError = line;
  });
  client.on("ready", () => {
    if (lastError !== undefined) log("payment record store: redis answers again");
    lastError = undefined;
  });
  // The client queues nothing while disconnected: wait (briefly) for the first connection, so
  // the first paid request finds it; a Redis still down is one line, and it connects later.
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => done(false), FIRST_CONNECT_WAIT_MS);
    const onReady = () => done(true);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      resolve(ok);
    };
    if (client.status === "ready") done(true);
    else client.on("ready", onReady);
  });
  if (!ready) log("payment record store: redis not answering yet; paid requests wait for it");
  return new RedisPaymentRecordStore(client, {
    recordTtlMs: options.recordTtlMs,
    ownsClient: true,
  });
}
