/** X-Frame-Options values (docs/findings.md): DENY or SAMEORIGIN, nothing else. */
import { hasFrameAncestors } from "./csp.js";
import { found } from "./finding.js";
import type { Evidence, Finding, FindingDef } from "./finding.js";
import { finalHeader } from "./values.js";

export const X_FRAME_OPTIONS_INVALID: FindingDef = {
  id: "x-frame-options-invalid",
  check: "x_frame_options",
  severity: "medium",
  message:
    "X-Frame-Options is not DENY or SAMEORIGIN (ALLOW-FROM is obsolete), so browsers ignore it.",
  recommendation:
    "Set `X-Frame-Options: DENY` (or `SAMEORIGIN`), or `Content-Security-Policy: frame-ancestors 'none'`.",
};

export const X_FRAME_OPTIONS_FINDINGS: readonly FindingDef[] = [X_FRAME_OPTIONS_INVALID];

/**
 * HTML's X-Frame-Options processing: the values, split on commas, must be one of the two.
 * Browsers ignore X-Frame-Options when the CSP has frame-ancestors, so then it is not judged.
 */
export function judgeXFrameOptions(e: Evidence): Finding[] {
  const values = finalHeader(e, "x-frame-options");
  if (values.length === 0 || hasFrameAncestors(e)) return [];
  const distinct = new Set(values.flatMap((v) => v.split(",")).map((v) => v.trim().toLowerCase()));
  const [only] = distinct;
  const valid = distinct.size === 1 && (only === "deny" || only === "sameorigin");
  return valid ? [] : [found(X_FRAME_OPTIONS_INVALID)];
}
