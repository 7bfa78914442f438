/**
 * The durable records of payments (docs/payment.md, "The payment record"): one record per signed
 * authorization, keyed by its canonical key (CAIP-2 network, asset, `from`, `nonce`, whichever
 * protocol generation carried it), written before each outside step so that a crash, a restart
 * or a lost answer never loses what the service knows about money.
 *
 * This file holds only data shapes and the store's interface; the payment layer decides what
 * the states mean. Three implementations: the embedded database on local disk (the default),
 * Redis (a fleet), and memory (a test double and the benchmark's yardstick, never a default).
 */

/**
 * Where one authorization stands. `claimed`: a request holds it, nothing verified yet.
 * `verified`: the facilitator accepted it, the snapshot may run. `report_kept`: the report is
 * stored. `settling`: the settlement was sent (tx hash once known); its outcome is unproven until
 * the chain says. `settled`: one transfer moved and the report is kept. `free`: nothing moved and
 * the proof may be used again (after a refused snapshot or settlement), counted in `releases`.
 */
export type PaymentState = "claimed" | "verified" | "report_kept" | "settling" | "settled" | "free";

/** A complete HTTP-free answer kept with a record (the same shape as payment's Answer). */
export interface KeptAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A lease: who holds the record and until when (epoch ms). Absent when nobody holds it. */
export interface Lease {
  readonly owner: string;
  readonly expiresAt: number;
}

export interface PaymentRecord {
  /** The canonical authorization key (also the store key). */
  readonly key: string;
  readonly state: PaymentState;
  /** Hash of the authorization and the request body: another body under this key is a 409. */
  readonly fingerprint: string;
  /** Protocol generation that carried the proof (1 or 2). */
  readonly version: 1 | 2;
  /** The decoded payment payload and the requirements it matched, to settle or reconcile. */
  readonly payload?: unknown;
  readonly requirements?: unknown;
  /** The report (without the payment response), once kept. */
  readonly report?: KeptAnswer;
  /** The settlement transaction, once known (also while `settling`). */
  readonly transaction?: string;
  /** The facilitator's (or the chain's) settle response, once `settled`. */
  readonly settlement?: unknown;
  /** Whether the settled answer was handed to the client (then a replay without an id is a 402). */
  readonly delivered?: boolean;
  /** Releases after work nobody paid for (refused snapshots, client gone). */
  readonly releases: number;
  /** The payment-identifier's key (payer-scoped), when the proof carried one. */
  readonly paymentIdKey?: string;
  /** The authorization's validBefore (epoch s): after it nothing can move any more. */
  readonly validBefore?: number;
  readonly lease?: Lease;
  /** Epoch ms of the last write. */
  readonly updatedAt: number;
}

/** What `acquire` found: the lease is ours (with the record as it stood, if any), or held. */
export type Acquired =
  | { readonly held: false; readonly record: PaymentRecord | undefined }
  | { readonly held: true; readonly record: PaymentRecord | undefined };

/**
 * The durable store of payment records, one interface for the embedded database, Redis and
 * memory. Every method that writes resolves only once the write is durable as the store can make
 * it (fsync'ed for the embedded database; acknowledged by Redis, whose persistence the operator
 * configures), and rejects when the store cannot answer: the caller then tells the client 503
 * and never moves money on an unrecorded step.
 */
export interface PaymentRecordStore extends SnapshotStore {
  readonly kind: "embedded" | "redis" | "memory";
  /**
   * Takes the lease of `key` for `owner` for `leaseMs`, atomically: when there is no record,
   * or its lease is absent or expired, the lease becomes ours (a missing record is created as
   * `claimed`, with `fingerprint` and `version` from `init`) and `held: false` comes back with
   * the record as it was before (undefined when new). Otherwise `held: true` and the record.
   */
  acquire(
    key: string,
    owner: string,
    leaseMs: number,
    init: Pick<PaymentRecord, "fingerprint" | "version">,
  ): Promise<Acquired>;
  /** Extends our lease; false when it is no longer ours (expired and taken). */
  renew(key: string, owner: string, leaseMs: number): Promise<boolean>;
  /**
   * Replaces the record while `owner` holds its lease (the lease is kept as it is); false, and
   * nothing written, when the lease is not ours. `ttlMs`: how long the record lives.
   */
  write(key: string, owner: string, record: PaymentRecord, ttlMs: number): Promise<boolean>;
  /**
   * Gives up our lease; the record stays. A `free` or `claimed` record with no releases (nothing
   * learnt, nothing moved) is deleted instead, as if never claimed. Nothing happens when the lease
   * is not ours.
   */
  release(key: string, owner: string): Promise<void>;
  /** The record as stored now, lease included; undefined when absent or expired. */
  get(key: string): Promise<PaymentRecord | undefined>;
  /**
   * Binds a payment id's key to an authorization key and fingerprint, if it is not bound yet;
   * returns what it is bound to now (ours, or the earlier binding).
   */
  bindPaymentId(idKey: string, binding: PaymentIdBinding, ttlMs: number): Promise<PaymentIdBinding>;
  /** Records in `settling` (or `report_kept`) whose lease is absent or expired: the reconciler's work. */
  unresolved(limit: number): Promise<PaymentRecord[]>;
  /** Writes and deletes a probe key: false when the store refuses writes (GET /ready). */
  writable(): Promise<boolean>;
  close(): Promise<void>;
}

export interface PaymentIdBinding {
  readonly authorizationKey: string;
  readonly fingerprint: string;
}

/**
 * A paid report kept for GET /v1/snapshots/{snapshot_id} (docs/contract.md §10): who paid, and
 * the paid 200 as it was served (its body's bytes, its headers).
 */
export interface KeptSnapshot {
  /** The address that paid, lower case (the proof's `payer`). */
  readonly payer: string;
  /** The proof's `issued_at`. */
  readonly issuedAt: string;
  readonly answer: KeptAnswer;
}

/**
 * The paid reports kept for their payers, in the same store as the payment records, so they
 * survive restarts and a fleet shares them; and the sign-in nonces the service issued, which a
 * fleet shares through Redis and one instance keeps in memory (IssuedNonces).
 */
export interface SnapshotStore {
  /** Keeps `snapshot` under its id for `ttlMs` (the retention). */
  keepSnapshot(id: string, snapshot: KeptSnapshot, ttlMs: number): Promise<void>;
  /** The snapshot kept under `id`; undefined when absent or past its retention. */
  snapshot(id: string): Promise<KeptSnapshot | undefined>;
  /** Records a sign-in nonce the service issued, valid for `ttlMs`. */
  issueNonce(nonce: string, ttlMs: number): Promise<void>;
  /** Takes an issued nonce, atomically: true once, while it lives; false ever after. */
  takeNonce(nonce: string): Promise<boolean>;
  /**
   * Remembers the public key that signed a kept report, under its `kid`, for at least `ttlMs`
   * (the report's retention): a later report pushes its expiry on, an earlier never shortens it.
   */
  rememberSigningKey(key: PublicSigningKey, ttlMs: number): Promise<void>;
  /** Every remembered signing key not yet expired, the latest to expire first. */
  signingKeys(): Promise<PublicSigningKey[]>;
}

/** A public JWK with its `kid` (the RFC 7638 thumbprint), as GET /.well-known/jwks.json lists it. */
export type PublicSigningKey = Readonly<Record<string, unknown>> & { readonly kid: string };
