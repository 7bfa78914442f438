import type { SnapshotStore } from "../../store/index.js";
import { describeError } from "../describe-error.js";
import type { ReportSigner } from "../ledger/settled-report.js";

/**
 * The report signer that also keeps each signed report for its payer (GET
 * /v1/snapshots/{snapshot_id}, docs/contract.md §10.4): the bytes of the paid 200 under the
 * proof's `snapshot_id`, with the payer, for the retention. Kept before the ledger writes the
 * settled record, so a report served is one its payer can fetch again. A store that fails is
 * logged: the paid report is never withheld for it.
 */
export function keepingSnapshots(
  sign: ReportSigner,
  keeping: { store: SnapshotStore; retentionMs: number; log: (line: string) => void },
): ReportSigner {
  const { store, retentionMs, log } = keeping;
  return async (report, settled) => {
    const signed = await sign(report, settled);
    if (retentionMs <= 0) return signed;
    const { proof } = JSON.parse(signed.body) as {
      proof?: { snapshot_id: string; issued_at: string };
    };
    if (proof === undefined) return signed;
    await store
      .keepSnapshot(
        proof.snapshot_id,
        { payer: settled.payer.toLowerCase(), issuedAt: proof.issued_at, answer: signed },
        retentionMs,
      )
      .catch((error: unknown) => log(`snapshot not kept: ${describeError(error)}`));
    return signed;
  };
}
