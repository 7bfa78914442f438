import { base64url, createLocalJWKSet, flattenedVerify, type JSONWebKeySet } from "jose";
import type { ReportProof } from "../../snapshot/index.js";
import { reportSha256, signedProofBytes } from "./report-proof.js";

/** What checking a report's proof came to: the proof it verified, or why not. */
export type ProofCheck = { ok: true; proof: ReportProof } | { ok: false; why: string };

const PROOF_FIELDS = [
  "snapshot_id",
  "issued_at",
  "network",
  "payer",
  "transaction",
  "report_sha256",
  "kid",
  "jws",
] as const;

/**
 * Checks a paid report as a third party would (docs/proof.md, "Verifying"): its `report_sha256`
 * against the report, then the detached JWS over the proof against `jwks`.
 */
export async function verifyReportProof(report: unknown, jwks: JSONWebKeySet): Promise<ProofCheck> {
  if (typeof report !== "object" || report === null || Array.isArray(report)) {
    return { ok: false, why: "not a report: a JSON object is expected" };
  }
  const proof = (report as { proof?: unknown }).proof;
  if (!isProof(proof)) return { ok: false, why: "no proof: only a paid report is signed" };
  const sha256 = reportSha256(report as Record<string, unknown>);
  if (sha256 !== proof.report_sha256) {
    return { ok: false, why: `report_sha256 differs: the report hashes to ${sha256}` };
  }
  const [header = "", payload, signature = "", ...rest] = proof.jws.split(".");
  // Base64url that decodes to the same bytes otherwise (spare bits set) is not the one signed.
  if (
    payload !== "" ||
    rest.length > 0 ||
    base64url.encode(base64url.decode(signature)) !== signature
  ) {
    return { ok: false, why: "jws is not a compact JWS with a detached payload" };
  }
  try {
    const verified = await flattenedVerify(
      { protected: header, payload: base64url.encode(signedProofBytes(proof)), signature },
      createLocalJWKSet(jwks),
      { algorithms: ["EdDSA"] },
    );
    if (verified.protectedHeader?.kid !== proof.kid) {
      return { ok: false, why: "the JWS header's kid is not the proof's kid" };
    }
  } catch (error) {
    return { ok: false, why: `signature: ${(error as Error).message}` };
  }
  return { ok: true, proof };
}

function isProof(value: unknown): value is ReportProof {
  if (typeof value !== "object" || value === null) return false;
  return PROOF_FIELDS.every(
    (field) => typeof (value as Record<string, unknown>)[field] === "string",
  );
}
