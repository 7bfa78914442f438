/**
 * The score and grade of a report (docs/findings.md "Scoring"): 100 less a fixed penalty per
 * finding by severity, never below 0; the grade is read off the score on a fixed scale.
 */
import type { Finding, Severity } from "./finding.js";

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

export function scoreOf(findings: readonly Finding[]): number {
  const lost = findings.reduce((sum, f) => sum + PENALTY[f.severity], 0);
  return Math.max(0, 100 - lost);
}

export function gradeOf(score: number): Grade {
  for (const [grade, lowest] of GRADE_SCALE) if (score >= lowest) return grade;
  return "F";
}
