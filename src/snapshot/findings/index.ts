/**
 * The findings of a report (docs/findings.md): every judge, run over one Evidence, and every
 * finding definition, for the docs and the OpenAPI document.
 */
import type { HeaderPresence } from "../checks/headers.js";
import { COOKIE_FINDINGS, judgeCookies } from "./cookies.js";
import { CSP_FINDINGS, judgeCsp } from "./csp.js";
import { bySeverity } from "./finding.js";
import type { Evidence, Finding, FindingDef, Judge } from "./finding.js";
import { HSTS_FINDINGS, judgeHsts } from "./hsts.js";
import { sayHttpOnlyOnce } from "./http-side.js";
import { HTTPS_FINDINGS, judgeHttps, judgeSecurityTxt } from "./https.js";
import { MISSING_FINDINGS, judgeMissingHeaders, missingHeaderFindings } from "./missing.js";
import { PERMISSIONS_POLICY_FINDINGS, judgePermissionsPolicy } from "./permissions-policy.js";
import { PROBE_FINDINGS, PROBE_JUDGES } from "./probes.js";
import { REFERRER_POLICY_FINDINGS, judgeReferrerPolicy } from "./referrer-policy.js";
import {
  X_CONTENT_TYPE_OPTIONS_FINDINGS,
  judgeXContentTypeOptions,
} from "./x-content-type-options.js";
import { X_FRAME_OPTIONS_FINDINGS, judgeXFrameOptions } from "./x-frame-options.js";

export type { Evidence, Finding, FindingDef } from "./finding.js";

/** Every judge, in the order their findings are listed within one severity. */
export const JUDGES: readonly Judge[] = [
  judgeHttps,
  judgeMissingHeaders,
  judgeHsts,
  judgeCsp,
  judgeXFrameOptions,
  judgeXContentTypeOptions,
  judgeReferrerPolicy,
  judgePermissionsPolicy,
  judgeCookies,
  judgeSecurityTxt,
  ...PROBE_JUDGES,
];

/** Every finding a report can carry; ids are unique (a test holds docs/findings.md to it). */
export const ALL_FINDINGS: readonly FindingDef[] = [
  ...HTTPS_FINDINGS,
  ...MISSING_FINDINGS,
  ...HSTS_FINDINGS,
  ...CSP_FINDINGS,
  ...X_FRAME_OPTIONS_FINDINGS,
  ...X_CONTENT_TYPE_OPTIONS_FINDINGS,
  ...REFERRER_POLICY_FINDINGS,
  ...PERMISSIONS_POLICY_FINDINGS,
  ...COOKIE_FINDINGS,
  ...PROBE_FINDINGS,
];

/** The findings of one snapshot, most severe first. */
export function judge(evidence: Evidence): Finding[] {
  return bySeverity(sayHttpOnlyOnce(JUDGES.flatMap((j) => j(evidence))));
}

/** The findings of a sample report that knows only which headers are present (the demo). */
export function headerFindings(presence: HeaderPresence): Finding[] {
  return bySeverity(missingHeaderFindings(presence));
}
