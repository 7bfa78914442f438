/**
 * Findings: judgements of what a snapshot saw (docs/findings.md). Each judge is a pure function
 * over one Evidence; each finding id is defined once, with its severity, sentence and advice.
 */
import type { HttpsVerdict } from "../checks/https.js";
import type { FileVerdicts } from "../checks/well-known.js";
import type { Chain, HeaderMap, RequestFailure } from "../types.js";

export const SEVERITIES = ["high", "medium", "low", "info"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** One finding of a report. `message` is also one of the report's notes. */
export interface Finding {
  /** Stable, documented id (docs/findings.md), e.g. "hsts-max-age-short". */
  id: string;
  /** The check it is about: a key of `checks`, or a name of its own ("cookies", "cors", …). */
  check: string;
  severity: Severity;
  message: string;
  recommendation: string;
}

/** A finding's fixed parts; `message` may be filled in by its judge from what was seen. */
export type FindingDef = Omit<Finding, "message"> & { message: string };

/** What the first 64 KiB of the final response's HTML says. */
export interface PageEvidence {
  /** Content of every `<meta http-equiv="Content-Security-Policy" content="…">`, in order. */
  metaCsp: string[];
  /** Every `<script src>`, its URL resolved against the page, and its integrity attribute. */
  scripts: { src: string; integrity: string | null }[];
}

/** The final URL asked again with a made-up `Origin`: its answer's headers, or nothing. */
export type CorsProbe =
  { kind: "response"; origin: string; status: number; headers: HeaderMap } | { kind: "failed" };

/** `GET http://<input host>/` under the same rules as the main chain. */
export type HttpSideProbe =
  | { kind: "redirect"; status: number; location: string }
  | { kind: "response"; status: number }
  | { kind: "failed"; failure: RequestFailure };

/** Everything the judges look at, gathered by the engine from one snapshot. */
export interface Evidence {
  /** The input URL (normalized). */
  input: URL;
  chain: Chain;
  /** null when the final response is not HTML or its body was not read. */
  page: PageEvidence | null;
  /** null when the probe was not sent (no final response). */
  cors: CorsProbe | null;
  /** null when the probe was not sent. */
  httpSide: HttpSideProbe | null;
  /** The https check with its reason when it failed. */
  https: HttpsVerdict;
  /** The well-known files of the final origin; null when the site was not reachable. */
  files: FileVerdicts | null;
}

/** One judge: a pure function from evidence to the findings it is responsible for. */
export type Judge = (evidence: Evidence) => Finding[];

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
