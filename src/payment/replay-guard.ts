import { createHash } from "node:crypto";

/**
 * Serves each payment proof at most once (docs/contract.md §7.4). A proof is claimed atomically before the
 * snapshot runs, released when the answer is not served (400, failed settlement) so the client
 * may retry with the same proof, and marked spent once settled. Releases after work that was
 * not paid for (a refused snapshot, a client that hung up) are counted, and a claim can refuse a
 * proof released too often, so one signature cannot buy unlimited refused snapshots.
 *
 * The store is an interface so a shared store (e.g. Redis `SET key NX PX ttl`, or a small
 * script for the count) can replace the in-memory one when the service runs as several processes.
 */
export interface ReplayStore {
  /**
   * True when this caller now owns `key`; false when it is already claimed or spent, or was
   * released (counted) `maxReleases` times already. Check and claim are one atomic step.
   */
  claim(key: string, ttlMs: number, maxReleases?: number): Promise<boolean>;
  /**
   * Gives up a claim that did not lead to a served answer; `counted` when work was done for it
   * (a refused snapshot). A spent key stays spent.
   */
  release(key: string, counted?: boolean): Promise<void>;
  /** A claim still held lives `ttlMs` from now: a lease its request renews while it runs. */
  extend(key: string, ttlMs: number): Promise<void>;
  /** The proof was settled: it can never be claimed again while the entry lives. */
  markSpent(key: string): Promise<void>;
  /** Counted releases of `key` so far (0 for an unknown key). */
  releases(key: string): Promise<number>;
  /**
   * A record kept beside the claims (paid-records.ts: kept answers, unsettled payments), as
   * the text `putRecord` stored; undefined when absent or expired.
   */
  getRecord(key: string): Promise<string | undefined>;
  /** Keeps `value` under `key` for `ttlMs`, replacing any record there. */
  putRecord(key: string, value: string, ttlMs: number): Promise<void>;
  deleteRecord(key: string): Promise<void>;
}

interface Entry {
  /** "free": released, kept only to remember its count. */
  state: "claimed" | "free" | "spent";
  releases: number;
  expiresAt: number;
}

export interface MemoryReplayStoreOptions {
  /** Upper bound on remembered proofs; the oldest are forgotten first when it is reached. */
  maxEntries?: number;
  /** Injectable clock for tests. */
  now?: () => number;
}

/**
 * In-process store. JavaScript runs claim() to completion without yielding, so the
 * check-and-set is atomic for every connection this process serves.
 */
export class MemoryReplayStore implements ReplayStore {
  private readonly entries = new Map<string, Entry>();
  private readonly records = new Map<string, { value: string; expiresAt: number }>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: MemoryReplayStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 100_000;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.entries.size;
  }

  claim(key: string, ttlMs: number, maxReleases = Infinity): Promise<boolean> {
    const now = this.now();
    const expiresAt = now + Math.max(1, ttlMs);
    const existing = this.entries.get(key);
    if (existing && existing.expiresAt > now) {
      if (existing.state !== "free" || existing.releases >= maxReleases) {
        return Promise.resolve(false);
      }
      existing.state = "claimed";
      existing.expiresAt = Math.max(existing.expiresAt, expiresAt);
      return Promise.resolve(true);
    }
    if (existing) this.entries.delete(key);
    this.makeRoom(now);
    this.entries.set(key, { state: "claimed", releases: 0, expiresAt });
    return Promise.resolve(true);
  }

  release(key: string, counted = false): Promise<void> {
    const entry = this.entries.get(key);
    if (entry?.state !== "claimed") return Promise.resolve();
    if (counted) entry.releases++;
    // Nothing to remember about a proof never counted: forget it, as before it was claimed.
    if (entry.releases === 0) this.entries.delete(key);
    else entry.state = "free";
    return Promise.resolve();
  }

  extend(key: string, ttlMs: number): Promise<void> {
    const entry = this.entries.get(key);
    if (entry?.state === "claimed") entry.expiresAt = this.now() + Math.max(1, ttlMs);
    return Promise.resolve();
  }

  markSpent(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (entry) entry.state = "spent";
    return Promise.resolve();
  }

  releases(key: string): Promise<number> {
    const entry = this.entries.get(key);
    return Promise.resolve(entry && entry.expiresAt > this.now() ? entry.releases : 0);
  }

  getRecord(key: string): Promise<string | undefined> {
    const record = this.records.get(key);
    if (record && record.expiresAt <= this.now()) this.records.delete(key);
    return Promise.resolve(record && record.expiresAt > this.now() ? record.value : undefined);
  }

  putRecord(key: string, value: string, ttlMs: number): Promise<void> {
    const now = this.now();
    this.records.delete(key);
    if (this.records.size >= this.maxEntries) {
      for (const [k, record] of this.records) if (record.expiresAt <= now) this.records.delete(k);
      // Still full: forget the oldest (insertion order), keeping memory finite.
      for (const k of this.records.keys()) {
        if (this.records.size < this.maxEntries) break;
        this.records.delete(k);
      }
    }
    this.records.set(key, { value, expiresAt: now + Math.max(1, ttlMs) });
    return Promise.resolve();
  }

  deleteRecord(key: string): Promise<void> {
    this.records.delete(key);
    return Promise.resolve();
  }

  private makeRoom(now: number): void {
    if (this.entries.size < this.maxEntries) return;
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt <= now) this.entries.delete(key);
    }
    // Still full: forget the oldest (Map keeps insertion order). The on-chain EIP-3009 nonce
    // still stops a second settlement of a forgotten proof; this bound only keeps memory finite.
    for (const key of this.entries.keys()) {
      if (this.entries.size < this.maxEntries) break;
      this.entries.delete(key);
    }
  }
}

/** The parts of an x402 v2 PaymentPayload a replay key is made of (read-only view). */
export interface PaymentProof {
  readonly accepted: { readonly network: string; readonly asset: string };
  readonly payload: unknown;
}

interface Eip3009Authorization {
  from: string;
  nonce: string;
  validBefore: string | number;
}

function eip3009Authorization(payload: PaymentProof): Eip3009Authorization | undefined {
  const auth = (payload.payload as { authorization?: unknown } | null)?.authorization;
  if (typeof auth !== "object" || auth === null) return undefined;
  const { from, nonce, validBefore } = auth as Record<string, unknown>;
  if (typeof from !== "string" || typeof nonce !== "string") return undefined;
  if (typeof validBefore !== "string" && typeof validBefore !== "number") return undefined;
  return { from, nonce, validBefore };
}

/** Stable JSON (sorted keys) so the same payload always hashes the same way. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The replay key of a proof. For EIP-3009 it is what the token itself treats as unique
 * (network, token, payer, nonce), not the signature bytes: an ECDSA signature can be re-encoded
 * (high-s form) into a different but equally valid proof of the same authorization.
 */
export function paymentProofKey(payload: PaymentProof): string {
  const auth = eip3009Authorization(payload);
  const material = auth
    ? [
        "eip3009",
        payload.accepted.network,
        payload.accepted.asset.toLowerCase(),
        auth.from.toLowerCase(),
        auth.nonce.toLowerCase(),
      ].join("|")
    : `payload|${payload.accepted.network}|${canonicalJson(payload.payload)}`;
  return createHash("sha256").update(material).digest("hex");
}

const MIN_TTL_MS = 2 * 60_000;
const MAX_TTL_MS = 24 * 60 * 60_000;

/**
 * How long a proof must be remembered: until its authorization expires (after that the token
 * refuses it anyway), plus a minute of clock skew, within [2 min, 24 h].
 */
export function paymentProofTtlMs(payload: PaymentProof, now = Date.now()): number {
  const auth = eip3009Authorization(payload);
  const validBeforeMs = auth ? Number(auth.validBefore) * 1000 : NaN;
  const ttl = Number.isFinite(validBeforeMs) ? validBeforeMs - now + 60_000 : MAX_TTL_MS;
  return Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, ttl));
}
