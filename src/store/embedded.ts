/**
 * The default store: payment records in an embedded LMDB database under DATA_DIR.
 *
 * Why lmdb (the npm package): it is maintained, ships prebuilt native binaries inside its npm
 * packages for linux, darwin and windows on x64 and arm64 (nothing is downloaded or compiled at
 * install time), runs on Node 20, and gives ACID transactions. Its asynchronous writes are
 * batched into one commit per event turn, so many concurrent requests share one commit.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { open, type Database, type RootDatabase } from "lmdb";
import { ConfigError } from "../config-error.js";
import { IssuedNonces } from "./issued-nonces.js";
import { lockDataDir } from "./data-dir-lock.js";
import type {
  Acquired,
  KeptSnapshot,
  PaymentIdBinding,
  PaymentRecord,
  PaymentRecordStore,
  PublicSigningKey,
} from "./records.js";

/** A stored record and the epoch ms after which it counts as absent. */
interface RecordEntry {
  r: PaymentRecord;
  x: number;
}

interface BindingEntry {
  b: PaymentIdBinding;
  x: number;
}

interface SnapshotEntry {
  s: KeptSnapshot;
  x: number;
}

interface SigningKeyEntry {
  k: PublicSigningKey;
  x: number;
}

/** Expiry index keys: [expiresAt, kind, key], in expiry order. */
type ExpiryKey = [number, "r" | "i" | "s" | "n" | "k", string];

const UNRESOLVED_STATES: ReadonlySet<string> = new Set(["settling", "report_kept"]);
const SWEEP_BATCH = 1_000;
/**
 * Expired entries deleted by each write that adds one (a new record or binding): deletions keep
 * pace with writes however fast they come, more than one so a backlog drains; the timer only
 * tidies an idle store.
 */
const SWEEP_PER_WRITE = 2;

export interface EmbeddedStoreOptions {
  /** DATA_DIR, absolute (config.ts resolves it). */
  dataDir: string;
  /** Lifetime of a record created by `acquire` before its first `write`. */
  recordTtlMs?: number;
  /** How often expired records and bindings are deleted (default 1 min). */
  sweepIntervalMs?: number;
  /** One short line when a background sweep fails. */
  log?: (line: string) => void;
  /** The clock (tests). */
  now?: () => number;
}

export class EmbeddedPaymentRecordStore implements PaymentRecordStore {
  readonly kind = "embedded" as const;
  private closed = false;
  private readonly sweeper: NodeJS.Timeout;
  /** Sign-in nonces live in memory: one process owns the directory (IssuedNonces says why). */
  private readonly nonces: IssuedNonces;

  private constructor(
    private readonly root: RootDatabase,
    private readonly records: Database<RecordEntry, string>,
    private readonly ids: Database<BindingEntry, string>,
    /** Keys of records in an unresolved state: what `unresolved` reads instead of every record. */
    private readonly pending: Database<true, string>,
    private readonly expiry: Database<true, ExpiryKey>,
    /** Kept paid reports. */
    private readonly snapshots: Database<SnapshotEntry, string>,
    /** The public keys that signed kept reports, by kid, with the latest such report's expiry. */
    private readonly signingKeysByKid: Database<SigningKeyEntry, string>,
    private readonly unlock: () => void,
    private readonly recordTtlMs: number,
    private readonly now: () => number,
    sweepIntervalMs: number,
    log: (line: string) => void,
  ) {
    this.nonces = new IssuedNonces(now);
    this.sweeper = setInterval(() => {
      this.sweep().catch((error: unknown) =>
        log(`payment store sweep failed: ${(error as Error).message}`),
      );
    }, sweepIntervalMs);
    this.sweeper.unref(); // never keeps the process alive
  }

  /**
   * Locks DATA_DIR (one process per directory, else a ConfigError naming DATA_DIR), opens the
   * database, clears the leases a previous run left (their owners died with it) and deletes what
   * expired meanwhile.
   */
  static async open(options: EmbeddedStoreOptions): Promise<EmbeddedPaymentRecordStore> {
    const dir = options.dataDir;
    try {
      mkdirSync(dir, { recursive: true });
    } catch (error) {
      throw new ConfigError("DATA_DIR", `cannot be created (${dir}): ${(error as Error).message}`);
    }
    const unlock = lockDataDir(dir);
    let root: RootDatabase;
    try {
      root = open({
        path: join(dir, "payments"),
        // A write's promise resolves once its commit is written (in the OS's cache: it survives
        // the process being killed); lmdb flushes it to disk right after, overlapping the next
        // commit. Waiting for each fsync cost paid calls 17 % of their rate; a power loss may lose
        // the last moment, as with Redis's `appendfsync everysec` (docs/operations.md, "Where
        // payment records live").
        overlappingSync: true,
        maxDbs: 8,
      });
    } catch (error) {
      unlock();
      throw new ConfigError("DATA_DIR", `cannot be opened (${dir}): ${(error as Error).message}`);
    }
    const store = new EmbeddedPaymentRecordStore(
      root,
      root.openDB<RecordEntry, string>({ name: "records", encoding: "json" }),
      root.openDB<BindingEntry, string>({ name: "payment-ids", encoding: "json" }),
      root.openDB<true, string>({ name: "unresolved", encoding: "json" }),
      root.openDB<true, ExpiryKey>({ name: "expiry", encoding: "json" }),
      root.openDB<SnapshotEntry, string>({ name: "snapshots", encoding: "json" }),
      root.openDB<SigningKeyEntry, string>({ name: "signing-keys", encoding: "json" }),
      unlock,
      options.recordTtlMs ?? 3_600_000,
      options.now ?? Date.now,
      options.sweepIntervalMs ?? 60_000,
      options.log ?? (() => {}),
    );
    try {
      await store.clearLeases();
      await store.sweep();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /** Only this process uses the directory, so every lease on disk is a dead run's. */
  private clearLeases(): Promise<void> {
    return this.root.transaction(() => {
      // Collected first: the range is not walked while it is being written.
      const leased = Array.from(this.records.getRange()).filter(({ value }) => value.r.lease);
      for (const { key, value } of leased) {
        const { lease: _lease, ...rest } = value.r;
        void this.records.put(key, { r: rest, x: value.x });
      }
    });
  }

  /** Deletes up to SWEEP_BATCH expired entries (records, bindings, snapshots, nonces, keys), oldest first. */
  async sweep(): Promise<number> {
    if (this.closed) return 0;
    return this.root.transaction(() => this.deleteExpired(this.now(), SWEEP_BATCH));
  }

  /** Deletes up to `limit` entries expired at `now`, oldest first; inside a transaction. */
  private deleteExpired(now: number, limit: number): number {
    // [now + 1] sorts before every [now + 1, …] key, so this is every entry with x <= now.
    const due = Array.from(this.expiry.getKeys({ end: [now + 1], limit }));
    for (const index of due) {
      const [x, kind, key] = index;
      if (kind === "r") {
        if (this.records.get(key)?.x === x) {
          void this.records.remove(key);
          void this.pending.remove(key);
        }
      } else if (kind === "i") {
        if (this.ids.get(key)?.x === x) void this.ids.remove(key);
      } else if (kind === "s") {
        if (this.snapshots.get(key)?.x === x) void this.snapshots.remove(key);
      } else if (kind === "k") {
        if (this.signingKeysByKid.get(key)?.x === x) void this.signingKeysByKid.remove(key);
      }
      // "n": a sign-in nonce an older version kept here; now in memory (IssuedNonces).
      void this.expiry.remove(index);
    }
    return due.length;
  }

  /** The entry when present and not expired. Inside a transaction it reads the transaction. */
  private live(key: string, now: number): RecordEntry | undefined {
    const entry = this.records.get(key);
    return entry && entry.x > now ? entry : undefined;
  }

  /** Writes a record with its indexes; to be called inside a transaction. */
  private putEntry(key: string, record: PaymentRecord, x: number): void {
    const before = this.records.get(key);
    if (before && before.x !== x) void this.expiry.remove([before.x, "r", key]);
    void this.records.put(key, { r: record, x });
    void this.expiry.put([x, "r", key], true);
    if (UNRESOLVED_STATES.has(record.state)) void this.pending.put(key, true);
    else if (before && UNRESOLVED_STATES.has(before.r.state)) void this.pending.remove(key);
  }

  private removeEntry(key: string): void {
    const before = this.records.get(key);
    if (!before) return;
    void this.expiry.remove([before.x, "r", key]);
    void this.pending.remove(key);
    void this.records.remove(key);
  }

  acquire(
    key: string,
    owner: string,
    leaseMs: number,
    init: Pick<PaymentRecord, "fingerprint" | "version">,
  ): Promise<Acquired> {
    return this.root.transaction((): Acquired => {
      const now = this.now();
      const entry = this.live(key, now);
      const record = entry?.r;
      if (record?.lease && record.lease.expiresAt > now) return { held: true, record };
      const lease = { owner, expiresAt: now + leaseMs };
      const next: PaymentRecord = record
        ? { ...record, lease }
        : {
            key,
            state: "claimed",
            fingerprint: init.fingerprint,
            version: init.version,
            releases: 0,
            updatedAt: now,
            lease,
          };
      const x = Math.max(entry?.x ?? now + this.recordTtlMs, lease.expiresAt);
      this.putEntry(key, next, x);
      if (!entry) this.deleteExpired(now, SWEEP_PER_WRITE);
      return { held: false, record };
    });
  }

  renew(key: string, owner: string, leaseMs: number): Promise<boolean> {
    return this.root.transaction(() => {
      const now = this.now();
      const entry = this.live(key, now);
      if (entry?.r.lease?.owner !== owner) return false;
      const lease = { owner, expiresAt: now + leaseMs };
      this.putEntry(key, { ...entry.r, lease }, Math.max(entry.x, lease.expiresAt));
      return true;
    });
  }

  write(key: string, owner: string, record: PaymentRecord, ttlMs: number): Promise<boolean> {
    return this.root.transaction(() => {
      const now = this.now();
      const entry = this.live(key, now);
      if (entry?.r.lease?.owner !== owner) return false;
      this.putEntry(key, { ...record, key, lease: entry.r.lease, updatedAt: now }, now + ttlMs);
      return true;
    });
  }

  release(key: string, owner: string): Promise<void> {
    return this.root.transaction(() => {
      const entry = this.live(key, this.now());
      if (entry?.r.lease?.owner !== owner) return;
      const { lease: _lease, ...rest } = entry.r;
      // Nothing was learnt or moved: as if never claimed (the same rule as the memory double).
      if ((rest.state === "free" || rest.state === "claimed") && rest.releases === 0) {
        this.removeEntry(key);
      } else {
        this.putEntry(key, rest, entry.x);
      }
    });
  }

  get(key: string): Promise<PaymentRecord | undefined> {
    try {
      return Promise.resolve(this.live(key, this.now())?.r);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  bindPaymentId(
    idKey: string,
    binding: PaymentIdBinding,
    ttlMs: number,
  ): Promise<PaymentIdBinding> {
    return this.root.transaction(() => {
      const now = this.now();
      const before = this.ids.get(idKey);
      if (before && before.x > now) return before.b;
      if (before) void this.expiry.remove([before.x, "i", idKey]);
      const x = now + ttlMs;
      void this.ids.put(idKey, { b: binding, x });
      void this.expiry.put([x, "i", idKey], true);
      this.deleteExpired(now, SWEEP_PER_WRITE);
      return binding;
    });
  }

  unresolved(limit: number): Promise<PaymentRecord[]> {
    try {
      const now = this.now();
      const found: PaymentRecord[] = [];
      for (const key of this.pending.getKeys()) {
        if (found.length >= limit) break;
        const record = this.live(key, now)?.r;
        if (!record || (record.lease && record.lease.expiresAt > now)) continue;
        if (!UNRESOLVED_STATES.has(record.state)) continue;
        found.push(record);
      }
      return Promise.resolve(found);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  keepSnapshot(id: string, snapshot: KeptSnapshot, ttlMs: number): Promise<void> {
    return this.root.transaction(() => {
      const now = this.now();
      const before = this.snapshots.get(id);
      if (before) void this.expiry.remove([before.x, "s", id]);
      const x = now + ttlMs;
      void this.snapshots.put(id, { s: snapshot, x });
      void this.expiry.put([x, "s", id], true);
      this.deleteExpired(now, SWEEP_PER_WRITE);
    });
  }

  snapshot(id: string): Promise<KeptSnapshot | undefined> {
    try {
      const entry = this.snapshots.get(id);
      return Promise.resolve(entry && entry.x > this.now() ? entry.s : undefined);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  issueNonce(nonce: string, ttlMs: number): Promise<void> {
    this.nonces.issue(nonce, ttlMs);
    return Promise.resolve();
  }

  takeNonce(nonce: string): Promise<boolean> {
    return Promise.resolve(this.nonces.take(nonce));
  }

  rememberSigningKey(key: PublicSigningKey, ttlMs: number): Promise<void> {
    return this.root.transaction(() => {
      const now = this.now();
      const before = this.signingKeysByKid.get(key.kid);
      const x = Math.max(before?.x ?? 0, now + ttlMs);
      if (before && before.x !== x) void this.expiry.remove([before.x, "k", key.kid]);
      void this.signingKeysByKid.put(key.kid, { k: key, x });
      void this.expiry.put([x, "k", key.kid], true);
    });
  }

  signingKeys(): Promise<PublicSigningKey[]> {
    try {
      const now = this.now();
      const live = Array.from(this.signingKeysByKid.getRange())
        .map(({ value }) => value)
        .filter((entry) => entry.x > now)
        .sort((a, b) => b.x - a.x);
      return Promise.resolve(live.map((entry) => entry.k));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  async writable(): Promise<boolean> {
    if (this.closed) return false;
    try {
      // A real commit: a full disk or a read-only file system fails here.
      await this.root.put("writable-probe", this.now());
      await this.root.remove("writable-probe");
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    try {
      await this.root.close();
    } finally {
      this.unlock();
    }
  }
}
