/**
 * Findings: judgements of what a snapshot saw (docs/findings.md). Each finding id is defined
 * once, in the rule module of its topic, with its severity, sentence and advice.
 */

export const SEVERITIES = ["high", "medium", "low", "info"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** One finding of a report. `message` is also one of the report's notes. */
export interface Finding {
  /** Stable, documented id (docs/findings.md), e.g. "hsts-max-age-short". */
  id: string;
  /** The check it is about: a key of `checks`, or a topic of its own ("cookies", "cors", …). */
  check: string;
  severity: Severity;
  message: string;
  recommendation: string;
}

/** A finding's fixed parts; `message` may be filled in by its judge from what was seen. */
export interface FindingDef extends Finding {
  /** Points it costs the score; without it, the penalty of its severity (rules/score.ts). */
  penalty?: number;
  /** The best grade a report with it can get, whatever its score (rules/score.ts). */
  gradeCap?: "F";
  /** Ids it says more precisely: a report that has this finding drops those. */
  supersedes?: readonly string[];
}

/** A finding from its definition, with the message its judge wrote when it varies. */
export function found(def: FindingDef, message: string = def.message): Finding {
  return {
    id: def.id,
    check: def.check,
    severity: def.severity,
    message,
    recommendation: def.recommendation,
  };
}

/** Most severe first; within a severity, in the order found (Array.prototype.sort is stable). */
export function bySeverity(findings: Finding[]): Finding[] {
  return findings.sort((a, b) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity));
}
