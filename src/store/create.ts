import { EmbeddedPaymentRecordStore } from "./embedded.js";
import type { PaymentRecordStore } from "./records.js";
import { RedisPaymentRecordStore } from "./redis.js";
import { createRedisClient } from "./redis-client.js";

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
  return new RedisPaymentRecordStore(client, {
    recordTtlMs: options.recordTtlMs,
    ownsClient: true,
  });
}
