/**
 * X-Frame-Options (docs/findings.md): the check of `x_frame_options_present`, its missing-header
 * finding (waived by CSP frame-ancestors), and its values as HTML reads them.
 */
import { hasFrameAncestors, openFrameAncestors } from "./csp.js";
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const X_FRAME_OPTIONS_MISSING: FindingDef = {
  id: "x-frame-options-missing",
  check: "x_frame_options",
  severity: "medium",
  message: "X-Frame-Options header is missing.",
  recommendation:
    "Set `X-Frame-Options: DENY` (or `SAMEORIGIN`), or `Content-Security-Policy: frame-ancestors 'none'`.",
};
export const X_FRAME_OPTIONS_INVALID: FindingDef = {
  id: "x-frame-options-invalid",
  check: "x_frame_options",
  severity: "medium",
  message:
    "X-Frame-Options is not DENY or SAMEORIGIN (ALLOW-FROM is obsolete), so browsers ignore it.",
  recommendation:
    "Set `X-Frame-Options: DENY` (or `SAMEORIGIN`), or `Content-Security-Policy: frame-ancestors 'none'`.",
};

/** Values that refuse framing outright when the header has more than one value. */
const REFUSING = ["deny", "sameorigin", "allowall"];

/**
 * HTML's "check a navigation response's adherence to X-Frame-Options": the values of every
 * instance, split on commas, trimmed and lower-cased, as a set. One value protects if it is deny
 * or sameorigin; several refuse framing if any of them is deny, sameorigin or allowall (a
 * conflict is read as deny), and allow it otherwise. Browsers ignore X-Frame-Options when the
 * CSP header has frame-ancestors: one that protects leaves it unjudged, one that lets any site
 * frame the page makes it protect nothing, whatever its value.
 */
export function judgeXFrameOptions(e: Evidence): Finding[] {
  const values = finalHeader(e, "x-frame-options");
  if (values.length === 0 || hasFrameAncestors(e)) return [];
  const open = openFrameAncestors(e);
  if (open.length > 0) {
    const named = open.map((s) => `\`${s}\``).join(", ");
    return [
      found(
        X_FRAME_OPTIONS_INVALID,
        `X-Frame-Options is ignored: the Content-Security-Policy's frame-ancestors takes its place and lets any site frame the page (${named}).`,
      ),
    ];
  }
  const set = new Set(
    values
      .join(",")
      .split(",")
      .map((v) => v.trim().toLowerCase()),
  );
  const [only] = set;
  const protects =
    set.size > 1 ? REFUSING.some((v) => set.has(v)) : only === "deny" || only === "sameorigin";
  return protects ? [] : [found(X_FRAME_OPTIONS_INVALID)];
}

export const xFrameOptionsRule = defineRule({
  topic: "x_frame_options",
  check: {
    kind: "header",
    name: "x_frame_options",
    field: "x_frame_options_present",
    header: "x-frame-options",
    missing: X_FRAME_OPTIONS_MISSING,
    // frame-ancestors in the CSP header protects against framing, unless it lets any host in.
    waived: hasFrameAncestors,
    label: "X-Frame-Options",
  },
  findings: [X_FRAME_OPTIONS_MISSING, X_FRAME_OPTIONS_INVALID],
  judge: judgeXFrameOptions,
});
