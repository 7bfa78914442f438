/**
 * The judges over what the engine's extra probes gather (page, CORS, http:// side, redirect
 * chain), and their finding definitions, as one list for findings/index.ts.
 */
import { CORS_FINDINGS, judgeCors } from "./cors.js";
import type { Evidence, Finding, FindingDef, Judge } from "./finding.js";
import { bySeverity } from "./finding.js";
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
  return bySeverity(sayHttpOnlyOnce(PROBE_JUDGES.flatMap((judge) => judge(evidence))));
}
