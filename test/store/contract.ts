/**
 * The payment record store's contract (src/store/records.ts), one suite run against every
 * implementation: memory (test/store/memory.test.ts), the embedded database
 * (test/store/embedded.test.ts) and Redis (test/store/redis.e2e.test.ts). Leases and TTLs run on
 * the real clock with short lifetimes; the tests wait well past an expiry and never measure
 * how long anything took.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { PaymentRecord, PaymentRecordStore } from "../../src/store/index.js";

export interface ContractOptions {
  /** Lifetime of a record created by `acquire` before its first `write`. */
  recordTtlMs?: number;
}

/** Opens a fresh, empty store. */
export type StoreFactory = (options: ContractOptions) => Promise<PaymentRecordStore>;

const LONG = 60_000;
/** A lease or TTL short enough to wait out. */
const SHORT = 150;
/** Waits well past SHORT (a lower bound on elapsed time, whatever the machine's load). */
const pastShort = () => new Promise((resolve) => setTimeout(resolve, SHORT * 3));

const init = { fingerprint: "fp-1", version: 2 as const };

let unique = 0;
const keyOf = (name: string) => `eip155:84532|0xusdc|0xfrom|${name}-${process.pid}-${++unique}`;

/** What the payment layer would write next: the record as acquired, moved on. */
function next(record: PaymentRecord, change: Partial<PaymentRecord>): PaymentRecord {
  return { ...record, ...change };
}

export function storeContract(name: string, factory: StoreFactory, skip = false): void {
  describe.skipIf(skip)(`payment record store contract: ${name}`, () => {
    const opened: PaymentRecordStore[] = [];
    const open = async (options: ContractOptions = {}) => {
      const store = await factory(options);
      opened.push(store);
      return store;
    };
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });

    /** A key acquired by `owner`, written in `state`, its lease kept. */
    async function recordIn(
      store: PaymentRecordStore,
      state: PaymentRecord["state"],
      owner = "a",
      leaseMs = LONG,
    ): Promise<{ key: string; record: PaymentRecord }> {
      const key = keyOf(state);
      expect((await store.acquire(key, owner, leaseMs, init)).held).toBe(false);
      const record = (await store.get(key))!;
      const written = next(record, {
        state,
        transaction: state === "settling" ? "0xabc" : undefined,
      });
      expect(await store.write(key, owner, written, LONG)).toBe(true);
      return { key, record: (await store.get(key))! };
    }

    describe("acquire", () => {
      it("of a new key: ours, nothing before, a claimed record with our lease", async () => {
        const store = await open();
        const key = keyOf("new");
        const got = await store.acquire(key, "a", LONG, init);
        expect(got).toEqual({ held: false, record: undefined });
        const stored = await store.get(key);
        expect(stored).toMatchObject({
          key,
          state: "claimed",
          fingerprint: "fp-1",
          version: 2,
          releases: 0,
          lease: { owner: "a" },
        });
        expect(stored!.lease!.expiresAt).toBeGreaterThan(stored!.updatedAt);
      });

      it("while another holds a live lease: held, with the record and the holder's lease", async () => {
        const store = await open();
        const { key } = await recordIn(store, "verified", "a");
        const got = await store.acquire(key, "b", LONG, { fingerprint: "other", version: 1 });
        expect(got.held).toBe(true);
        expect(got.record).toMatchObject({ state: "verified", fingerprint: "fp-1" });
        expect(got.record!.lease!.owner).toBe("a");
        expect((await store.get(key))!.lease!.owner).toBe("a");
      });

      it("the same owner asking again while its lease lives is held too (a lease is not reentrant)", async () => {
        const store = await open();
        const key = keyOf("again");
        await store.acquire(key, "a", LONG, init);
        expect((await store.acquire(key, "a", LONG, init)).held).toBe(true);
      });

      it("of many simultaneous acquires of one key exactly one gets it", async () => {
        const store = await open();
        const key = keyOf("race");
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.acquire(key, `owner-${i}`, LONG, init)),
        );
        const winners = results.filter((r) => !r.held);
        expect(winners).toHaveLength(1);
        const holder = (await store.get(key))!.lease!.owner;
        expect(results.findIndex((r) => !r.held)).toBe(Number(holder.slice("owner-".length)));
      });

      it("after the lease expired: taken over, with the record as it stood (its state kept)", async () => {
        const store = await open();
        const { key } = await recordIn(store, "report_kept", "a", SHORT);
        await pastShort();
        const got = await store.acquire(key, "b", LONG, { fingerprint: "ignored", version: 1 });
        expect(got.held).toBe(false);
        expect(got.record).toMatchObject({ state: "report_kept", fingerprint: "fp-1", version: 2 });
        const stored = (await store.get(key))!;
        expect(stored.lease!.owner).toBe("b");
        expect(stored.state).toBe("report_kept");
        expect(stored.fingerprint).toBe("fp-1");
      });
    });

    describe("renew", () => {
      it("extends our lease: past the first expiry another acquire is still held", async () => {
        const store = await open();
        const key = keyOf("renew");
        await store.acquire(key, "a", SHORT, init);
        expect(await store.renew(key, "a", LONG)).toBe(true);
        await pastShort();
        expect((await store.acquire(key, "b", LONG, init)).held).toBe(true);
      });

      it("is refused to another owner, and to the old owner once its lease was taken", async () => {
        const store = await open();
        const key = keyOf("renew-lost");
        await store.acquire(key, "a", SHORT, init);
        expect(await store.renew(key, "b", LONG)).toBe(false);
        await pastShort();
        expect((await store.acquire(key, "b", LONG, init)).held).toBe(false);
        expect(await store.renew(key, "a", LONG)).toBe(false);
        expect((await store.get(key))!.lease!.owner).toBe("b");
      });

      it("of an absent key is false", async () => {
        const store = await open();
        expect(await store.renew(keyOf("absent"), "a", LONG)).toBe(false);
      });
    });

    describe("write, fenced by the lease", () => {
      it("by the holder: replaces the record, keeps the lease and the key", async () => {
        const store = await open();
        const key = keyOf("write");
        await store.acquire(key, "a", LONG, init);
        const before = (await store.get(key))!;
        const report = { status: 200, headers: { "content-type": "application/json" }, body: "{}" };
        const record = next(before, {
          key: "a different key is not honoured",
          state: "report_kept",
          report,
          payload: { list: [], nested: { n: 1_700_000_000_123, empty: {} } },
          lease: { owner: "forged", expiresAt: 1 },
        });
        expect(await store.write(key, "a", record, LONG)).toBe(true);
        const stored = (await store.get(key))!;
        expect(stored.key).toBe(key);
        expect(stored.state).toBe("report_kept");
        expect(stored.report).toEqual(report);
        expect(stored.payload).toEqual({ list: [], nested: { n: 1_700_000_000_123, empty: {} } });
        expect(stored.lease).toEqual(before.lease);
      });

      it("by anyone else: false and nothing written", async () => {
        const store = await open();
        const { key, record } = await recordIn(store, "verified", "a");
        expect(await store.write(key, "b", next(record, { state: "settled" }), LONG)).toBe(false);
        expect((await store.get(key))!.state).toBe("verified");
      });

      it("by the owner whose lease was taken over: false (a fenced-off request writes nothing)", async () => {
        const store = await open();
        const { key, record } = await recordIn(store, "verified", "a", SHORT);
        await pastShort();
        expect((await store.acquire(key, "b", LONG, init)).held).toBe(false);
        expect(await store.write(key, "a", next(record, { state: "settling" }), LONG)).toBe(false);
        expect((await store.get(key))!.state).toBe("verified");
      });

      it("of an absent key: false, nothing created", async () => {
        const store = await open();
        const key = keyOf("absent");
        const record: PaymentRecord = {
          key,
          state: "verified",
          releases: 0,
          updatedAt: 1,
          ...init,
        };
        expect(await store.write(key, "a", record, LONG)).toBe(false);
        expect(await store.get(key)).toBeUndefined();
      });
    });

    describe("release", () => {
      it("keeps the record without a lease; anyone may acquire it then", async () => {
        const store = await open();
        const { key } = await recordIn(store, "settled", "a");
        await store.release(key, "a");
        const stored = (await store.get(key))!;
        expect(stored.state).toBe("settled");
        expect(stored.lease).toBeUndefined();
        expect((await store.acquire(key, "b", LONG, init)).held).toBe(false);
      });

      it("of a free record with no releases deletes it, as if never claimed", async () => {
        const store = await open();
        const { key } = await recordIn(store, "free", "a");
        await store.release(key, "a");
        expect(await store.get(key)).toBeUndefined();
        expect(await store.acquire(key, "b", LONG, init)).toEqual({
          held: false,
          record: undefined,
        });
      });

      it("of a claimed record never written deletes it too", async () => {
        const store = await open();
        const key = keyOf("claimed");
        await store.acquire(key, "a", LONG, init);
        await store.release(key, "a");
        expect(await store.get(key)).toBeUndefined();
      });

      it("of a free record with releases keeps it, counted", async () => {
        const store = await open();
        const key = keyOf("free-counted");
        await store.acquire(key, "a", LONG, init);
        const record = (await store.get(key))!;
        expect(
          await store.write(key, "a", next(record, { state: "free", releases: 1 }), LONG),
        ).toBe(true);
        await store.release(key, "a");
        expect(await store.get(key)).toMatchObject({ state: "free", releases: 1 });
        expect((await store.get(key))!.lease).toBeUndefined();
      });

      it("by another owner changes nothing", async () => {
        const store = await open();
        const { key } = await recordIn(store, "free", "a");
        await store.release(key, "b");
        expect((await store.get(key))!.lease!.owner).toBe("a");
      });
    });

    describe("record TTL", () => {
      it("a written record lives ttlMs, then is absent and a new acquire starts afresh", async () => {
        const store = await open();
        const key = keyOf("ttl");
        await store.acquire(key, "a", SHORT, init);
        const record = (await store.get(key))!;
        expect(await store.write(key, "a", next(record, { state: "settled" }), SHORT)).toBe(true);
        expect(await store.get(key)).toBeDefined();
        await pastShort();
        expect(await store.get(key)).toBeUndefined();
        expect(await store.acquire(key, "b", LONG, init)).toEqual({
          held: false,
          record: undefined,
        });
      });

      it("a record only acquired lives the store's record TTL (at least its lease)", async () => {
        const store = await open({ recordTtlMs: SHORT });
        const key = keyOf("acquired-ttl");
        await store.acquire(key, "a", 1, init);
        expect(await store.get(key)).toBeDefined();
        await pastShort();
        expect(await store.get(key)).toBeUndefined();
      });
    });

    describe("bindPaymentId", () => {
      it("the first binding wins; later ones get it back", async () => {
        const store = await open();
        const id = keyOf("id");
        const first = { authorizationKey: "auth-1", fingerprint: "fp-1" };
        expect(await store.bindPaymentId(id, first, LONG)).toEqual(first);
        expect(
          await store.bindPaymentId(id, { authorizationKey: "auth-2", fingerprint: "fp-2" }, LONG),
        ).toEqual(first);
      });

      it("of simultaneous bindings exactly one is what everybody gets", async () => {
        const store = await open();
        const id = keyOf("id-race");
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.bindPaymentId(
              id,
              { authorizationKey: `auth-${i}`, fingerprint: `fp-${i}` },
              LONG,
            ),
          ),
        );
        expect(new Set(results.map((r) => r.authorizationKey)).size).toBe(1);
      });

      it("an expired binding is replaced", async () => {
        const store = await open();
        const id = keyOf("id-ttl");
        await store.bindPaymentId(id, { authorizationKey: "old", fingerprint: "fp" }, SHORT);
        await pastShort();
        const fresh = { authorizationKey: "new", fingerprint: "fp" };
        expect(await store.bindPaymentId(id, fresh, LONG)).toEqual(fresh);
      });
    });

    describe("unresolved", () => {
      it("lists only settling and report_kept records whose lease is absent or expired", async () => {
        const store = await open();
        const settling = await recordIn(store, "settling", "a");
        await store.release(settling.key, "a");
        const kept = await recordIn(store, "report_kept", "a");
        await store.release(kept.key, "a");
        const expired = await recordIn(store, "settling", "a", SHORT);
        const leased = await recordIn(store, "settling", "a", LONG);
        for (const state of ["settled", "verified", "free"] as const) {
          const other = await recordIn(store, state, "a");
          if (state !== "free") await store.release(other.key, "a");
        }
        const moved = await recordIn(store, "settling", "a");
        expect(
          await store.write(moved.key, "a", next(moved.record, { state: "settled" }), LONG),
        ).toBe(true);
        await store.release(moved.key, "a");
        await pastShort();

        const found = await store.unresolved(100);
        expect(found.map((r) => r.key).sort()).toEqual(
          [settling.key, kept.key, expired.key].sort(),
        );
        expect(found.find((r) => r.key === settling.key)).toMatchObject({
          state: "settling",
          transaction: "0xabc",
        });
        expect(found.map((r) => r.key)).not.toContain(leased.key);
      });

      it("gives at most `limit` records", async () => {
        const store = await open();
        for (let i = 0; i < 5; i++) {
          const { key } = await recordIn(store, "settling", "a");
          await store.release(key, "a");
        }
        expect(await store.unresolved(3)).toHaveLength(3);
        expect(await store.unresolved(10)).toHaveLength(5);
      });

      it("forgets expired records", async () => {
        const store = await open();
        const key = keyOf("gone");
        await store.acquire(key, "a", LONG, init);
        const record = (await store.get(key))!;
        await store.write(key, "a", next(record, { state: "settling" }), SHORT);
        await store.release(key, "a");
        await pastShort();
        expect(await store.unresolved(10)).toEqual([]);
      });
    });

    describe("kept snapshots and sign-in nonces", () => {
      const kept = {
        payer: "0xpayer",
        issuedAt: "2026-01-01T00:00:00.000Z",
        answer: { status: 200, headers: { "content-type": "application/json" }, body: '{"a":1}' },
      };

      it("a kept snapshot comes back as kept, for its retention, then is absent", async () => {
        const store = await open();
        const id = keyOf("snapshot");
        expect(await store.snapshot(id)).toBeUndefined();
        await store.keepSnapshot(id, kept, SHORT);
        expect(await store.snapshot(id)).toEqual(kept);
        await pastShort();
        expect(await store.snapshot(id)).toBeUndefined();
      });

      it("a nonce issued is taken once; one never issued, or expired, never", async () => {
        const store = await open();
        const nonce = keyOf("nonce");
        expect(await store.takeNonce(nonce)).toBe(false);
        await store.issueNonce(nonce, LONG);
        const takes = await Promise.all([1, 2, 3].map(() => store.takeNonce(nonce)));
        expect(takes.filter(Boolean)).toEqual([true]);
        expect(await store.takeNonce(nonce)).toBe(false);
        const expired = keyOf("nonce");
        await store.issueNonce(expired, SHORT);
        await pastShort();
        expect(await store.takeNonce(expired)).toBe(false);
      });
    });

    describe("signing keys", () => {
      const keyNamed = (kid: string) => ({ kty: "OKP", crv: "Ed25519", x: `x-${kid}`, kid });

      it("a remembered key is listed for its retention, then is absent", async () => {
        const store = await open();
        const kept = keyNamed(keyOf("kid"));
        const listed = () => store.signingKeys().then((keys) => keys.map((key) => key.kid));
        expect(await listed()).not.toContain(kept.kid);
        await store.rememberSigningKey(kept, SHORT);
        expect(await store.signingKeys()).toContainEqual(kept);
        await pastShort();
        expect(await listed()).not.toContain(kept.kid);
      });

      it("a later report pushes a key's expiry on; a shorter one never pulls it back", async () => {
        const store = await open();
        const pushed = keyNamed(keyOf("kid"));
        const shortened = keyNamed(keyOf("kid"));
        await store.rememberSigningKey(pushed, SHORT);
        await store.rememberSigningKey(pushed, LONG);
        await store.rememberSigningKey(shortened, LONG);
        await store.rememberSigningKey(shortened, SHORT);
        await pastShort();
        const kids = (await store.signingKeys()).map((key) => key.kid);
        expect(kids.filter((kid) => kid === pushed.kid || kid === shortened.kid).sort()).toEqual(
          [pushed.kid, shortened.kid].sort(),
        );
      });

      it("one entry per kid, the latest to expire first", async () => {
        const store = await open();
        const sooner = keyNamed(keyOf("kid"));
        const later = keyNamed(keyOf("kid"));
        await store.rememberSigningKey(sooner, LONG);
        await store.rememberSigningKey(later, LONG * 2);
        await store.rememberSigningKey(sooner, LONG);
        const kids = (await store.signingKeys()).map((key) => key.kid);
        expect(kids.filter((kid) => kid === sooner.kid || kid === later.kid)).toEqual([
          later.kid,
          sooner.kid,
        ]);
      });
    });

    it("writable: an open store accepts writes", async () => {
      const store = await open();
      expect(await store.writable()).toBe(true);
    });
  });
}
