import { performance } from "node:perf_hooks";
import { describeError } from "./describe-error.js";
import { decodeRecord, encodeRecord, type PaidIdentity, type PaidRecord } from "./paid-records.js";
import type { ReplayStore } from "./replay-guard.js";

/**
 * A paid request holds its payment id or proof (verify, snapshot, settle) as a lease of this
 * length, renewed every PAID_LOCK_RENEW_MS while it runs: an instance that dies mid-request
 * blocks its retries (409 + Retry-After) no longer than this (docs/operations.md).
 */
const PAID_LOCK_LEASE_MS = 15_000;
const PAID_LOCK_RENEW_MS = 5_000;
/** How often a copy waiting for a settling request's lock tries it. */
const LOCK_POLL_MS = 100;

/** A held lock of a paid request, renewed until released. */
export interface Lease {
  release(): Promise<void>;
}

/** The store keys of one payment id (or proof): its lock, its record, its report in settlement. */
export interface PaidKeys {
  lock: string;
  record: string;
  settling: string;
}

export function paidKeys(identity: PaidIdentity): PaidKeys {
  return {
    lock: `paid-lock|${identity.key}`,
    record: `paid|${identity.key}`,
    settling: `settling|${identity.key}`,
  };
}

/**
 * The shared store (memory, or Redis) as paying once uses it: leased locks and paid records, each
 * record living `recordTtlMs`.
 */
export class PaidStore {
  constructor(
    private readonly store: ReplayStore,
    private readonly recordTtlMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Takes the lock of a payment id (or proof), renewed while held; undefined if held elsewhere. */
  async lock(lockKey: string): Promise<Lease | undefined> {
    const { store, log } = this;
    if (!(await store.claim(lockKey, PAID_LOCK_LEASE_MS))) return undefined;
    const timer = setInterval(() => {
      store.extend(lockKey, PAID_LOCK_LEASE_MS).catch((error: unknown) => {
        log(`paid record store could not renew a lease: ${describeError(error)}`);
      });
    }, PAID_LOCK_RENEW_MS).unref();
    return {
      release: async () => {
        clearInterval(timer);
        await store.release(lockKey).catch((error: unknown) => {
          log(`paid record store failed: ${describeError(error)}`);
        });
      },
    };
  }

  /** Waits for a lock held elsewhere: until it is released, or its lease ends unrenewed. */
  async waitForLock(lockKey: string): Promise<Lease | undefined> {
    const deadline = performance.now() + PAID_LOCK_LEASE_MS + PAID_LOCK_RENEW_MS;
    while (performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
      const held = await this.lock(lockKey);
      if (held) return held;
    }
    return undefined;
  }

  /** The record under this key, if any; a store failure rejects. */
  async read(recordKey: string): Promise<PaidRecord | undefined> {
    return decodeRecord(await this.store.getRecord(recordKey));
  }

  /** Stores a record; a paid answer goes out whatever the store says, so a failure is logged. */
  async keep(recordKey: string, record: PaidRecord): Promise<void> {
    await this.store
      .putRecord(recordKey, encodeRecord(record), this.recordTtlMs)
      .catch((error: unknown) => {
        this.log(
          `paid record store could not keep a ${record.state} record: ${describeError(error)}`,
        );
      });
  }

  async forget(recordKey: string): Promise<void> {
    await this.store.deleteRecord(recordKey).catch((error: unknown) => {
      this.log(`paid record store could not drop a record: ${describeError(error)}`);
    });
  }
}
