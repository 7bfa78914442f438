/**
 * The score and grade of a report (docs/findings.md "Score and grade"): 100 less each finding's
 * penalty (its own `penalty` in its rule module, else the one of its severity), never below 0;
 * the grade is read off the score on a fixed scale, then capped: F without working HTTPS (a
 * finding with `gradeCap`), D at best for a site that answered with no security header.
 */
import type { Finding, Severity } from "./finding.js";
import { ALL_FINDINGS } from "./registry.js";

/** Calibrated against MDN HTTP Observatory's deductions (docs/findings.md "Score and grade"). */
export const PENALTY: Readonly<Record<Severity, number>> = {
  high: 25,
  medium: 20,
  low: 5,
  info: 0,
};

/** Lowest score of each grade, best first (the same scale as Observatory's). */
export const GRADE_SCALE = [
  ["A+", 100],
  ["A", 90],
  ["A-", 85],
  ["B+", 80],
  ["B", 70],
  ["B-", 65],
  ["C+", 60],
  ["C", 50],
  ["C-", 45],
  ["D+", 40],
  ["D", 30],
  ["D-", 25],
  ["F", 0],
] as const;

export const GRADES = GRADE_SCALE.map(([grade]) => grade);
export type Grade = (typeof GRADE_SCALE)[number][0];

/**
 * The best grade of a site that answered without any of the six security headers
 * (docs/findings.md "Score and grade").
 */
export const NO_SECURITY_HEADER_CAP: Grade = "D";

const PENALTY_OF_ID = new Map(
  ALL_FINDINGS.flatMap((d) => (d.penalty === undefined ? [] : [[d.id, d.penalty] as const])),
);

const CAP_OF_ID = new Map(
  ALL_FINDINGS.flatMap((d) => (d.gradeCap === undefined ? [] : [[d.id, d.gradeCap] as const])),
);

/** The points one finding costs the score. */
export function penaltyOf(finding: Pick<Finding, "id" | "severity">): number {
  return PENALTY_OF_ID.get(finding.id) ?? PENALTY[finding.severity];
}

/** The grade a finding caps the report at, if it caps it. */
export function findingGradeCap(id: string): Grade | undefined {
  return CAP_OF_ID.get(id);
}

export function scoreOf(findings: readonly Finding[]): number {
  const lost = findings.reduce((sum, f) => sum + penaltyOf(f), 0);
  return Math.max(0, 100 - lost);
}

/** The worse of two grades. */
function worse(a: Grade, b: Grade): Grade {
  return GRADES.indexOf(a) >= GRADES.indexOf(b) ? a : b;
}

/**
 * The best grade the report can have whatever its score: the worst `gradeCap` of its findings,
 * and D when the site answered without any security header (`noSecurityHeader`). Only findings
 * cap: a check our own limits stopped has none (docs/contract.md §4.4), so it caps nothing.
 */
export function gradeCapOf(findings: readonly Finding[], noSecurityHeader: boolean): Grade {
  let cap: Grade = noSecurityHeader ? NO_SECURITY_HEADER_CAP : "A+";
  for (const f of findings) cap = worse(cap, CAP_OF_ID.get(f.id) ?? "A+");
  return cap;
}

/** The grade of `score` on the scale, no better than `cap`. */
export function gradeOf(score: number, cap: Grade = "A+"): Grade {
  for (const [grade, lowest] of GRADE_SCALE) if (score >= lowest) return worse(grade, cap);
  return "F";
}
