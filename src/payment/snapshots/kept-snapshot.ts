import type { PublicSigningKey, SnapshotStore } from "../../store/index.js";
import { describeError } from "../describe-error.js";
import type { ReportSigner } from "../ledger/settled-report.js";

/**
 * The report signer that also keeps each signed report for its payer (GET
 * /v1/snapshots/{snapshot_id}, docs/contract.md §10.4): the bytes of the paid 200 under the
 * proof's `snapshot_id`, with the payer, for the retention. Kept before the ledger writes the
 * settled record, so a report served is one its payer can fetch again. The public key that signed
 * it is remembered for as long (GET /.well-known/jwks.json lists it after a rotation). A store that
 * fails is logged: the paid report is never withheld for it.
 */
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
      signingKey
        .then((key) => store.rememberSigningKey(key, retentionMs))
        .catch((error: unknown) => log(`signing key not remembered: ${describeError(error)}`)),
    ]);
    return signed;
  };
}
