import type { PublicSigningKey, SnapshotStore } from "../../store/index.js";
import { describeError } from "../describe-error.js";
import type { ReportSigner } from "../ledger/settled-report.js";

/**
 * The report signer that also keeps each signed report for its payer (GET
 * /v1/snapshots/{snapshot_id}, docs/contract.md §10.4): the bytes of the paid 200 under the
 * proof's `snapshot_id`, with the payer, for the retention. Kept before the ledger writes the
 * settled record, so a report served is one its payer can fetch again. The public key that signed
 * it is remembered for as long (GET /.well-known/jwks.json lists it after a rotation): at most once
 * per KEY_REFRESH_MS, for the retention and that much more, so every report's key outlives it
 * without a second store write per paid call. A store that fails is logged: the paid report is
 * never withheld for it.
 */
/** How often an instance pushes its key's expiry on; each push adds this much slack. */
export const KEY_REFRESH_MS = 60 * 60_000;

export function keepingSnapshots(
  sign: ReportSigner,
  keeping: {
    store: SnapshotStore;
    retentionMs: number;
    /** The public key that signs the reports. */
    signingKey: Promise<PublicSigningKey>;
    log: (line: string) => void;
  },
): ReportSigner {
  const { store, retentionMs, signingKey, log } = keeping;
  /** When this instance last remembered the key (its expiry then: that + retention + slack). */
  let rememberedAt = -Infinity;
  const rememberKey = async (): Promise<void> => {
    const now = Date.now();
    if (now - rememberedAt < KEY_REFRESH_MS) return;
    rememberedAt = now;
    try {
      await store.rememberSigningKey(await signingKey, retentionMs + KEY_REFRESH_MS);
    } catch (error) {
      rememberedAt = -Infinity;
      log(`signing key not remembered: ${describeError(error)}`);
    }
  };
  return async (report, settled) => {
    const signed = await sign(report, settled);
    if (retentionMs <= 0) return signed;
    const { proof } = JSON.parse(signed.body) as {
      proof?: { snapshot_id: string; issued_at: string };
    };
    if (proof === undefined) return signed;
    const snapshot = {
      payer: settled.payer.toLowerCase(),
      issuedAt: proof.issued_at,
      answer: signed,
    };
    await Promise.all([
      store
        .keepSnapshot(proof.snapshot_id, snapshot, retentionMs)
        .catch((error: unknown) => log(`snapshot not kept: ${describeError(error)}`)),
      rememberKey(),
    ]);
    return signed;
  };
}
