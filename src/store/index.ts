/**
 * The payment records' store (docs/operations.md, "Where payment records live"): the interface,
 * its three implementations and the factory. Other folders import only from here.
 */
export type {
  KeptAnswer,
  KeptSnapshot,
  PaymentRecord,
  PaymentRecordStore,
  PaymentState,
  PublicSigningKey,
  SnapshotStore,
} from "./records.js";
export { MemoryPaymentRecordStore } from "./memory.js";
export { EmbeddedPaymentRecordStore } from "./embedded.js";
export { RedisPaymentRecordStore, redisPersistenceWarning } from "./redis.js";
export { KEY_PREFIX, REDIS_COMMAND_TIMEOUT_MS, createRedisClient } from "./redis-client.js";
export { createPaymentRecordStore } from "./create.js";
