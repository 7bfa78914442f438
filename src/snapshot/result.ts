import { CHECKS, HEADER_CHECKS } from "./rules/registry.js";
import type { CheckField, CheckName } from "./rules/registry.js";
import type { Finding } from "./rules/finding.js";
import { gradeCapOf, gradeOf, scoreOf } from "./rules/score.js";
import type { CrossOriginSection } from "./rules/cross-origin.js";
import type { DnsSection } from "./rules/dns.js";
import type { TlsSection } from "./rules/tls.js";
import type { X402Section } from "./rules/x402.js";

/**
 * The report shapes of docs/contract.md §2, as the engine builds them: plain types, so the engine
 * loads no schema library (docs/benchmarks.md "Start-up"). Their zod schemas, which check
 * answers and make the OpenAPI document, are the HTTP layer's
 * (src/http/documents/report-schemas.ts), and `tsc` fails if the two differ. Key order is that of
 * docs/contract.md §2.1; the check fields and `checks` follow the rules registry
 * (rules/registry.ts), which a test holds them to.
 */

/** Each check's value by check name: the `checks` object of a report. */
export interface CheckValues {
  https: boolean;
  hsts: boolean;
  csp: boolean;
  x_frame_options: boolean;
  x_content_type_options: boolean;
  referrer_policy: boolean;
  permissions_policy: boolean;
  /** null: could not be determined. */
  security_txt: boolean | null;
  robots_txt: boolean | null;
  sitemap_xml: boolean | null;
}

/**
 * The sections of the report that rules add (docs/contract.md §9; rule.ts, `Section`), one
 * member each, keyed as the rule's `section.key`.
 */
export interface ReportSections {
  /** rules/tls.ts; null when no TLS handshake to the final host completed. */
  tls: TlsSection | null;
  /** The registrable domain's CAA, SPF, DMARC, MTA-STS; null when the host is not a public name. */
  dns: DnsSection | null;
  /** rules/cross-origin.ts: COOP, COEP, CORP and cross-origin isolation; null without a response. */
  cross_origin: CrossOriginSection | null;
  /** rules/x402.ts: the final answer's x402 challenge; only when it is a 402 carrying one. */
  x402?: X402Section;
}

/** A paid report's proof (docs/proof.md): who paid, by which transaction, and the signature. */
export interface ReportProof {
  /** Opaque, URL-safe, at least 128 random bits. */
  snapshot_id: string;
  /** When the report was made: its `fetched_at` (ISO 8601, ms, UTC). */
  issued_at: string;
  /** The CAIP-2 id of the network paid on. */
  network: string;
  payer: string;
  transaction: string;
  /** Hex SHA-256 of the report without `proof`, in its RFC 8785 (JCS) form. */
  report_sha256: string;
  /** The signing key's RFC 7638 thumbprint, as listed in GET /.well-known/jwks.json. */
  kid: string;
  /** EdDSA JWS, compact with a detached payload, over the JCS form of the proof without `jws`. */
  jws: string;
}

/** One report (docs/contract.md §2.1, then §9's sections). */
export interface SnapshotResult extends ReportSections {
  requested_url: string;
  normalized_url: string;
  final_url: string;
  /** ISO 8601, ms, UTC. */
  fetched_at: string;
  reachable: boolean;
  /** null exactly when reachable is false. */
  final_status_code: number | null;
  redirect_count: number;
  https_ok: boolean;
  hsts_present: boolean;
  csp_present: boolean;
  x_frame_options_present: boolean;
  x_content_type_options_present: boolean;
  referrer_policy_present: boolean;
  permissions_policy_present: boolean;
  security_txt_present: boolean | null;
  robots_txt_present: boolean | null;
  sitemap_xml_present: boolean | null;
  notes: string[];
  checks: CheckValues;
  findings: Finding[];
  score: number;
  grade: string;
  /**
   * The service's signature over what was paid for (docs/contract.md §10.1): in every paid 200,
   * added once the payment settled; never in the demo or a 400.
   */
  proof?: ReportProof;
}

/** What a report says besides its checks and notes. */
export type ReportFacts = Omit<
  SnapshotResult,
  CheckField | "notes" | "checks" | "findings" | "score" | "grade" | keyof ReportSections
>;

/**
 * A report in the key order of docs/contract.md §2.1: the facts, each check's field, the notes,
 * then `checks`, whose every entry equals its field (§2.3).
 */
export function buildReport(
  facts: ReportFacts,
  values: CheckValues,
  notes: string[],
  findings: Finding[],
  sections: ReportSections,
): SnapshotResult {
  const score = scoreOf(findings);
  // Only a site that answered can be said to send no security header (an unfinished chain's
  // header fields are false because nothing was seen).
  const noSecurityHeader = facts.reachable && HEADER_CHECKS.every((c) => values[c.name] !== true);
  const fields: Partial<Record<CheckField, boolean | null>> = {};
  const checks: Partial<Record<CheckName, boolean | null>> = {};
  for (const { name, field } of CHECKS) {
    fields[field] = values[name];
    checks[name] = values[name];
  }
  return {
    requested_url: facts.requested_url,
    normalized_url: facts.normalized_url,
    final_url: facts.final_url,
    fetched_at: facts.fetched_at,
    reachable: facts.reachable,
    final_status_code: facts.final_status_code,
    redirect_count: facts.redirect_count,
    ...(fields as Pick<SnapshotResult, CheckField>),
    notes,
    checks: checks as CheckValues,
    findings,
    score,
    grade: gradeOf(score, gradeCapOf(findings, noSecurityHeader)),
    ...sections,
  };
}

/** The demo report (docs/contract.md §2.4). */
export interface DemoSnapshotResult extends SnapshotResult {
  _demo: true;
  _note: string;
}

export { SnapshotError } from "./snapshot-error.js";
export type { SnapshotErrorBody, SnapshotErrorType } from "./snapshot-error.js";
