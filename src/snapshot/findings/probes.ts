/**
 * The judges over what the engine's extra probes gather (page, CORS, http:// side, redirect
 * chain), and their finding definitions, as one list for findings/index.ts.
 */
import { CORS_FINDINGS, judgeCors } from "./cors.js";
import type { Evidence, Finding, FindingDef, Judge } from "./finding.js";
import { SEVERITIES } from "./finding.js";
import { HTTP_SIDE_FINDINGS, judgeHttpSide, sayHttpOnlyOnce } from "./http-side.js";
import { REDIRECT_FINDINGS, judgeRedirects } from "./redirects.js";
import { SRI_FINDINGS, judgeSri } from "./sri.js";

export const PROBE_JUDGES: readonly Judge[] = [judgeHttpSide, judgeRedirects, judgeSri, judgeCors];

export const PROBE_FINDINGS: readonly FindingDef[] = [
  ...HTTP_SIDE_FINDINGS,
  ...REDIRECT_FINDINGS,
  ...SRI_FINDINGS,
  ...CORS_FINDINGS,
];

/** The probe judges' findings, most severe first (stable within a severity). */
export function judgeProbes(evidence: Evidence): Finding[] {
  const all = sayHttpOnlyOnce(PROBE_JUDGES.flatMap((judge) => judge(evidence)));
  return all
    .map((f, i) => ({ f, i }))
    .sort(
      (a, b) => SEVERITIES.indexOf(a.f.severity) - SEVERITIES.indexOf(b.f.severity) || a.i - b.i,
    )
    .map(({ f }) => f);
}
