/**
 * The report signer that keeps each paid report (src/payment/snapshots/kept-snapshot.ts): every
 * report kept for its payer, and the key that signed it remembered at least as long as the
 * report — with one store write per KEY_REFRESH_MS, not one per paid call.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { KEY_REFRESH_MS, keepingSnapshots } from "../../../src/payment/snapshots/kept-snapshot.js";
import type { SettledPayment } from "../../../src/payment/signing/index.js";
import { MemoryPaymentRecordStore, type PublicSigningKey } from "../../../src/store/index.js";

const RETENTION_MS = 30 * 86_400_000;
const KEY: PublicSigningKey = { kty: "OKP", crv: "Ed25519", x: "AAAA", kid: "key-1" };

/** The in-memory store, counting the key writes and failing them while `failing` is set. */
class CountingStore extends MemoryPaymentRecordStore {
  keyWrites = 0;
  failing = false;
  override async rememberSigningKey(key: PublicSigningKey, ttlMs: number): Promise<void> {
    this.keyWrites++;
    if (this.failing) throw new Error("store down");
    return super.rememberSigningKey(key, ttlMs);
  }
}

let store: CountingStore;
let logged: string[];

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse("2026-11-28T12:00:00Z"), toFake: ["Date"] });
  store = new CountingStore({}, () => Date.now());
  logged = [];
});
afterEach(() => vi.useRealTimers());

/** One shared signer, as the gate makes it. */
function signer() {
  return keepingSnapshots(
    async (report, settled) => ({
      ...report,
      body: JSON.stringify({
        proof: { snapshot_id: settled.recordKey, issued_at: new Date().toISOString() },
      }),
    }),
    {
      store,
      retentionMs: RETENTION_MS,
      signingKey: Promise.resolve(KEY),
      log: (l) => logged.push(l),
    },
  );
}

const settledAs = (recordKey: string): SettledPayment => ({
  network: "eip155:84532",
  payer: "0xAbC0000000000000000000000000000000000001",
  transaction: "0x01",
  recordKey,
});

describe("keeping paid reports", () => {
  it("keeps every report but remembers the key once per refresh, always past the last report's retention", async () => {
    const sign = signer();
    for (let i = 0; i < 10; i++) {
      await sign({ status: 200, headers: {}, body: "{}" }, settledAs(`r${i}`));
      vi.advanceTimersByTime(KEY_REFRESH_MS / 20);
    }
    expect(store.keyWrites).toBe(1);
    for (let i = 0; i < 10; i++) expect(await store.snapshot(`r${i}`)).toBeDefined();
    // The last report lives until its issue + retention; the key still listed just before then.
    const lastIssued = Date.now() - KEY_REFRESH_MS / 20;
    vi.setSystemTime(lastIssued + RETENTION_MS - 1);
    expect(await store.snapshot("r9")).toBeDefined();
    expect((await store.signingKeys()).map((key) => key.kid)).toEqual([KEY.kid]);
  });

  it("remembers the key again once the refresh has passed", async () => {
    const sign = signer();
    await sign({ status: 200, headers: {}, body: "{}" }, settledAs("a"));
    vi.advanceTimersByTime(KEY_REFRESH_MS);
    await sign({ status: 200, headers: {}, body: "{}" }, settledAs("b"));
    expect(store.keyWrites).toBe(2);
  });

  it("a store that fails to remember the key: the report still signed, logged, and the next report tries again", async () => {
    const sign = signer();
    store.failing = true;
    const signed = await sign({ status: 200, headers: {}, body: "{}" }, settledAs("a"));
    expect(JSON.parse(signed.body)).toMatchObject({ proof: { snapshot_id: "a" } });
    expect(logged).toEqual(["signing key not remembered: store down"]);
    store.failing = false;
    await sign({ status: 200, headers: {}, body: "{}" }, settledAs("b"));
    expect(store.keyWrites).toBe(2);
    expect((await store.signingKeys()).map((key) => key.kid)).toEqual([KEY.kid]);
  });
});
