/**
 * The score and grade of a report (docs/findings.md "Scoring"): 100 less each finding's penalty
 * (its own `penalty` in its rule module, else the one of its severity), never below 0; the grade
 * is read off the score on a fixed scale.
 */
import type { Finding, Severity } from "./finding.js";
import { ALL_FINDINGS } from "./registry.js";

export const PENALTY: Readonly<Record<Severity, number>> = {
  high: 25,
  medium: 10,
  low: 5,
  info: 0,
};

/** Lowest score of each grade, best first. */
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

const PENALTY_OF_ID = new Map(
  ALL_FINDINGS.flatMap((d) => (d.penalty === undefined ? [] : [[d.id, d.penalty] as const])),
);

export function scoreOf(findings: readonly Finding[]): number {
  const lost = findings.reduce(
    (sum, f) => sum + (PENALTY_OF_ID.get(f.id) ?? PENALTY[f.severity]),
    0,
  );
  return Math.max(0, 100 - lost);
}

export function gradeOf(score: number): Grade {
  for (const [grade, lowest] of GRADE_SCALE) if (score >= lowest) return grade;
  return "F";
}
