import { createHash, randomBytes } from "node:crypto";
import type { ReportProof, SnapshotResult } from "../../snapshot/index.js";
import type { KeptAnswer } from "../../store/index.js";
import { canonicalize } from "./jcs.js";
import type { ServiceSigner } from "./signer.js";

/** Random bytes of a snapshot id: 128 bits, URL-safe once base64url-encoded (22 characters). */
const SNAPSHOT_ID_BYTES = 16;

/** What the settlement says of a paid call: what the proof names besides the report. */
export interface SettledPayment {
  /** CAIP-2 id of the network paid on. */
  network: string;
  payer: string;
  transaction: string;
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
 * record as it is, so every replay serves these same bytes.
 */
export async function withProof(
  report: KeptAnswer,
  settled: SettledPayment,
  signer: ServiceSigner,
): Promise<KeptAnswer> {
  const result = JSON.parse(report.body) as SnapshotResult;
  const unsigned: Omit<ReportProof, "jws"> = {
    snapshot_id: randomBytes(SNAPSHOT_ID_BYTES).toString("base64url"),
    issued_at: new Date().toISOString(),
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
