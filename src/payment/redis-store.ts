import { Redis } from "ioredis";

/** Every key this service writes starts with it, so one Redis can be shared with other uses. */
export const KEY_PREFIX = "secsnap:";

/**
 * A shared counter is one command away at most this long; past it the paid route answers 503
 * (docs/operations.md). Short, because a paid request waits on it before the snapshot runs.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 1_000;

/** Reconnect forever, a little slower each time, at most every 2 s. */
const reconnectDelayMs = (attempt: number): number => Math.min(100 * attempt, 2_000);

/**
 * A Redis client that fails fast instead of queueing: no offline queue (a command while
 * disconnected rejects at once), a short command timeout, no resend of a failed command, and
 * reconnection forever, so payments recover by themselves when Redis is back. Connection errors
 * go to `onError` (ioredis would crash the process on an unhandled 'error' event).
 */
export function createRedisClient(url: string, onError: (error: Error) => void): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 1,
    retryStrategy: reconnectDelayMs,
    lazyConnect: false,
  });
  client.on("error", onError);
  return client;
}
