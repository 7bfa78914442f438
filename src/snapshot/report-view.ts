/**
 * A report as a person reads it (docs/contract.md §8.5, the human view): what each finding costs,
 * what capped the grade, each check's judged state (a header that is present but that the
 * findings call ignored or weak is no ✓), and the report's sections as labelled rows. The
 * terminal text of `scan`/`pay` and the page both render this one view; the JSON is unchanged.
 */
import { CHECKS, HEADER_CHECKS } from "./rules/registry.js";
import type { Finding } from "./rules/finding.js";
import {
  GRADES,
  NO_SECURITY_HEADER_CAP,
  findingGradeCap,
  gradeOf,
  penaltyOf,
} from "./rules/score.js";
import type { SnapshotResult } from "./result.js";

/**
 * pass: present (or true) and no finding above info against it; flawed: present, but a finding
 * says it is ignored, invalid or weak; fail: absent, with a finding; not_judged: false, but
 * nothing held against the site (our limit, a secure context, another header covering it);
 * unknown: could not be determined (null).
 */
export type CheckState = "pass" | "flawed" | "fail" | "not_judged" | "unknown";

export interface CheckView {
  name: string;
  label: string;
  state: CheckState;
  /** The findings about this check, most severe first. */
  findings: readonly Finding[];
}

export interface FindingView extends Finding {
  /** Points it took off the score. */
  points: number;
  /** The grade it caps the report at, if any. */
  cap: string | null;
}

export interface GradeView {
  grade: string;
  score: number;
  /** The grade the score alone gives. */
  scoreGrade: string;
  /** Why the grade is below scoreGrade (empty when it is not). */
  cappedBy: readonly string[];
}

export interface SectionView {
  key: string;
  title: string;
  rows: ReadonlyArray<readonly [label: string, value: string]>;
}

export interface ReportView {
  grade: GradeView;
  checks: readonly CheckView[];
  findings: readonly FindingView[];
  sections: readonly SectionView[];
}

const CHECK_BY_NAME: ReadonlyMap<string, (typeof CHECKS)[number]> = new Map(
  CHECKS.map((c) => [c.name, c]),
);

/** Top-level keys that are no section of their own. */
const NOT_SECTIONS = new Set(["checks", "findings", "notes", "proof"]);

const SECTION_TITLES: Readonly<Record<string, string>> = {
  tls: "TLS",
  dns: "Domain (DNS)",
  cross_origin: "Cross-origin isolation",
};

/** Labels of section fields, by their key or `parent.key` path; others are spelled out. */
const FIELD_LABELS: Readonly<Record<string, string>> = {
  protocol: "Protocol",
  cipher: "Cipher",
  certificate: "Certificate",
  "certificate.not_after": "expires",
  "certificate.days_left": "days left",
  "certificate.key_bits": "key size (bits)",
  tls1_0_accepted: "TLS 1.0 accepted",
  tls1_1_accepted: "TLS 1.1 accepted",
  caa: "CAA",
  spf: "SPF",
  dmarc: "DMARC",
  mta_sts: "MTA-STS",
  mx: "MX",
  "mx.null_mx": "null (no mail accepted)",
  "spf.all": "all",
  "mta_sts.max_age": "max age (s)",
  coop: "Cross-Origin-Opener-Policy",
  coep: "Cross-Origin-Embedder-Policy",
  corp: "Cross-Origin-Resource-Policy",
  cross_origin_isolated: "Cross-origin isolated",
};

function spelledOut(key: string): string {
  return key.replaceAll("_", " ");
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A section value as text: yes/no, "unknown" for null, lists joined. */
function valueText(value: unknown): string {
  if (value === null || value === undefined) return "unknown";
  if (value === true) return "yes";
  if (value === false) return "no";
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.map(valueText).join(", ");
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function sectionRows(
  value: Record<string, unknown>,
  parent: { key: string; label: string } | null,
): Array<readonly [string, string]> {
  return Object.entries(value).flatMap(([key, v]) => {
    const path = parent ? `${parent.key}.${key}` : key;
    const own = FIELD_LABELS[path] ?? FIELD_LABELS[key] ?? spelledOut(key);
    const label = parent ? `${parent.label} ${own}` : capitalised(own);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      return sectionRows(v as Record<string, unknown>, { key, label });
    }
    return [[label, valueText(v)] as const];
  });
}

/** The report's own sections (tls, dns, cross_origin, and any a rule adds), those it has. */
function sectionsOf(report: SnapshotResult): SectionView[] {
  return Object.entries(report)
    .filter(
      ([key, value]) =>
        !NOT_SECTIONS.has(key) &&
        value !== null &&
        typeof value === "object" &&
        !Array.isArray(value),
    )
    .map(([key, value]) => ({
      key,
      title: SECTION_TITLES[key] ?? capitalised(spelledOut(key)),
      rows: sectionRows(value as Record<string, unknown>, null),
    }));
}

function stateOf(
  value: boolean | null,
  findings: readonly Finding[],
  ignoredOverHttp: boolean,
  isFile: boolean,
): CheckState {
  if (value === null) return "unknown";
  // Browsers ignore HSTS over plain HTTP: present there, it is never a pass.
  if (value && ignoredOverHttp) return findings.length > 0 ? "flawed" : "not_judged";
  if (value) return findings.some((f) => f.severity !== "info") ? "flawed" : "pass";
  // A missing file is just missing; a false HTTPS or header without a finding was not held
  // against the site (our limit, a secure context, another header that covers it).
  return findings.length > 0 || isFile ? "fail" : "not_judged";
}

function gradeViewOf(report: SnapshotResult): GradeView {
  const scoreGrade = gradeOf(report.score);
  const cappedBy: string[] = [];
  const worseThanScore = GRADES.indexOf(report.grade as never) > GRADES.indexOf(scoreGrade);
  if (worseThanScore) {
    for (const f of report.findings) {
      const cap = findingGradeCap(f.id);
      if (cap === report.grade) cappedBy.push(`${f.id}: ${f.message} (${cap} at best)`);
    }
    // As rules/score.ts decides it: a site that answered without any security header.
    const noHeader = report.reachable && HEADER_CHECKS.every((c) => report[c.field] !== true);
    if (noHeader && NO_SECURITY_HEADER_CAP === report.grade) {
      cappedBy.push(`no security header at all (${NO_SECURITY_HEADER_CAP} at best)`);
    }
  }
  return { grade: report.grade, score: report.score, scoreGrade, cappedBy };
}

/** The view of one report: its grade explained, its checks judged, its sections as rows. */
export function reportView(report: SnapshotResult): ReportView {
  const overHttp = new URL(report.final_url).protocol === "http:";
  // Every check the report carries, in its order (a report may carry one this code predates).
  const checks = Object.entries<boolean | null>(
    report.checks as unknown as Record<string, boolean | null>,
  ).map(([name, value]) => {
    const findings = report.findings.filter((f) => f.check === name);
    const check = CHECK_BY_NAME.get(name);
    const state = stateOf(value, findings, name === "hsts" && overHttp, check?.kind === "file");
    return { name, label: check?.label ?? name, state, findings };
  });
  const findings = report.findings.map((f) => ({
    ...f,
    points: penaltyOf(f),
    cap: findingGradeCap(f.id) ?? null,
  }));
  return { grade: gradeViewOf(report), checks, findings, sections: sectionsOf(report) };
}
