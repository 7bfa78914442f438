import { createHash } from "node:crypto";
import type { ReportProof, SnapshotResult } from "../../snapshot/index.js";
import type { KeptAnswer } from "../../store/index.js";
import { canonicalize } from "./jcs.js";
import type { ServiceSigner } from "./signer.js";

/** What the settlement says of a paid call: what the proof names besides the report. */
export interface SettledPayment {
  /** CAIP-2 id of the network paid on. */
  network: string;
  payer: string;
  transaction: string;
  /** The payment record's key: the snapshot id is derived from it, the same on every signing. */
  recordKey: string;
}

/** Hex SHA-256 of a report's JCS form, its `proof` left out: the proof's `report_sha256`. */
export function reportSha256(report: Readonly<Record<string, unknown>>): string {
  const { proof: _proof, ...bare } = report;
  return createHash("sha256").update(canonicalize(bare), "utf8").digest("hex");
}

/** The bytes a proof's `jws` signs: the JCS form of the proof without `jws`. */
export function signedProofBytes(proof: Omit<ReportProof, "jws"> | ReportProof): Uint8Array {
  const { jws: _jws, ...signed } = proof as ReportProof;
  return new TextEncoder().encode(canonicalize(signed));
}

/**
 * The paid report with its `proof` (docs/proof.md), made once the payment settled: the body
 * re-serialised with `proof` last, the rest of the answer as it was. Written to the payment
 * record as it is, so every replay serves these same bytes; and made alike every time for one
 * payment (the id derived from its record, the time the report's own, Ed25519 deterministic), so
 * a report handed out while the store could not keep it is the one a retry gets later.
 */
export async function withProof(
  report: KeptAnswer,
  settled: SettledPayment,
  signer: ServiceSigner,
): Promise<KeptAnswer> {
  const result = JSON.parse(report.body) as SnapshotResult;
  const unsigned: Omit<ReportProof, "jws"> = {
    snapshot_id: signer.opaqueId(settled.recordKey),
    issued_at: result.fetched_at,
    network: settled.network,
    payer: settled.payer,
    transaction: settled.transaction,
    report_sha256: reportSha256(result as unknown as Record<string, unknown>),
    kid: signer.kid,
  };
  const proof: ReportProof = {
    ...unsigned,
    jws: await signer.signDetached(signedProofBytes(unsigned)),
  };
  return { ...report, body: JSON.stringify({ ...result, proof }) };
}
