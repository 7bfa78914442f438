import { IssuedNonces } from "./issued-nonces.js";
import type {
  Acquired,
  KeptSnapshot,
  PaymentIdBinding,
  PaymentRecord,
  PaymentRecordStore,
  PublicSigningKey,
} from "./records.js";

interface Stored<T> {
  value: T;
  expiresAt: number;
}

/**
 * Payment records in this process's memory: the test double of the store contract and the
 * benchmark's yardstick for the durable stores. Never a default: it forgets everything when the
 * process dies. JavaScript runs each method to its first await without yielding, so every
 * check-and-change here is atomic.
 */
export class MemoryPaymentRecordStore implements PaymentRecordStore {
  readonly kind = "memory" as const;
  private readonly records = new Map<string, Stored<PaymentRecord>>();
  private readonly ids = new Map<string, Stored<PaymentIdBinding>>();
  private readonly snapshots = new Map<string, Stored<KeptSnapshot>>();
  private readonly nonces: IssuedNonces;
  private readonly signingKeysByKid = new Map<string, Stored<PublicSigningKey>>();
  private readonly recordTtlMs: number;

  constructor(
    options: { recordTtlMs?: number; now?: () => number } = {},
    private readonly now: () => number = options.now ?? Date.now,
  ) {
    this.recordTtlMs = options.recordTtlMs ?? 3_600_000;
    this.nonces = new IssuedNonces(now);
  }

  private live(key: string): PaymentRecord | undefined {
    const stored = this.records.get(key);
    if (stored && stored.expiresAt <= this.now()) {
      this.records.delete(key);
      return undefined;
    }
    return stored?.value;
  }

  acquire(
    key: string,
    owner: string,
    leaseMs: number,
    init: Pick<PaymentRecord, "fingerprint" | "version">,
  ): Promise<Acquired> {
    const now = this.now();
    const record = this.live(key);
    if (record?.lease && record.lease.expiresAt > now) {
      return Promise.resolve({ held: true, record });
    }
    const lease = { owner, expiresAt: now + leaseMs };
    const next: PaymentRecord = record
      ? { ...record, lease }
      : { key, state: "claimed", releases: 0, updatedAt: now, lease, ...init };
    const expiresAt = this.records.get(key)?.expiresAt ?? now + this.recordTtlMs;
    this.records.set(key, { value: next, expiresAt: Math.max(expiresAt, now + leaseMs) });
    return Promise.resolve({ held: false, record });
  }

  renew(key: string, owner: string, leaseMs: number): Promise<boolean> {
    const stored = this.records.get(key);
    const record = this.live(key);
    if (!stored || record?.lease?.owner !== owner) return Promise.resolve(false);
    const expiresAt = this.now() + leaseMs;
    stored.value = { ...record, lease: { owner, expiresAt } };
    stored.expiresAt = Math.max(stored.expiresAt, expiresAt);
    return Promise.resolve(true);
  }

  write(key: string, owner: string, record: PaymentRecord, ttlMs: number): Promise<boolean> {
    const current = this.live(key);
    if (current?.lease?.owner !== owner) return Promise.resolve(false);
    const now = this.now();
    const value: PaymentRecord = { ...record, key, lease: current.lease, updatedAt: now };
    this.records.set(key, { value, expiresAt: now + ttlMs });
    return Promise.resolve(true);
  }

  release(key: string, owner: string): Promise<void> {
    const stored = this.records.get(key);
    const record = this.live(key);
    if (!stored || record?.lease?.owner !== owner) return Promise.resolve();
    if ((record.state === "free" || record.state === "claimed") && record.releases === 0) {
      this.records.delete(key);
    } else {
      const { lease: _lease, ...rest } = record;
      stored.value = rest;
    }
    return Promise.resolve();
  }

  get(key: string): Promise<PaymentRecord | undefined> {
    return Promise.resolve(this.live(key));
  }

  bindPaymentId(
    idKey: string,
    binding: PaymentIdBinding,
    ttlMs: number,
  ): Promise<PaymentIdBinding> {
    const now = this.now();
    const stored = this.ids.get(idKey);
    if (stored && stored.expiresAt > now) return Promise.resolve(stored.value);
    this.ids.set(idKey, { value: binding, expiresAt: now + ttlMs });
    return Promise.resolve(binding);
  }

  unresolved(limit: number): Promise<PaymentRecord[]> {
    const now = this.now();
    const found: PaymentRecord[] = [];
    for (const key of this.records.keys()) {
      const record = this.live(key);
      if (!record || (record.lease && record.lease.expiresAt > now)) continue;
      if (record.state !== "settling" && record.state !== "report_kept") continue;
      found.push(record);
      if (found.length >= limit) break;
    }
    return Promise.resolve(found);
  }

  keepSnapshot(id: string, snapshot: KeptSnapshot, ttlMs: number): Promise<void> {
    this.snapshots.set(id, { value: snapshot, expiresAt: this.now() + ttlMs });
    return Promise.resolve();
  }

  snapshot(id: string): Promise<KeptSnapshot | undefined> {
    const stored = this.snapshots.get(id);
    if (stored && stored.expiresAt <= this.now()) this.snapshots.delete(id);
    return Promise.resolve(stored && stored.expiresAt > this.now() ? stored.value : undefined);
  }

  issueNonce(nonce: string, ttlMs: number): Promise<void> {
    this.nonces.issue(nonce, ttlMs);
    return Promise.resolve();
  }

  takeNonce(nonce: string): Promise<boolean> {
    return Promise.resolve(this.nonces.take(nonce));
  }

  rememberSigningKey(key: PublicSigningKey, ttlMs: number): Promise<void> {
    const before = this.signingKeysByKid.get(key.kid)?.expiresAt ?? 0;
    const expiresAt = Math.max(before, this.now() + ttlMs);
    this.signingKeysByKid.set(key.kid, { value: key, expiresAt });
    return Promise.resolve();
  }

  signingKeys(): Promise<PublicSigningKey[]> {
    const now = this.now();
    for (const [kid, stored] of this.signingKeysByKid) {
      if (stored.expiresAt <= now) this.signingKeysByKid.delete(kid);
    }
    const live = [...this.signingKeysByKid.values()].sort((a, b) => b.expiresAt - a.expiresAt);
    return Promise.resolve(live.map((stored) => stored.value));
  }

  writable(): Promise<boolean> {
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
