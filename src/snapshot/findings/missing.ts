/**
 * The missing-header findings (docs/findings.md): one per security header whose `*_present`
 * field is false, in the exact words of its note. A Content-Security-Policy in a `<meta>` tag
 * waives `csp-missing`; `frame-ancestors` waives `x-frame-options-missing`. The fields keep
 * their meaning (header present on the final response) either way.
 */
import type { HeaderPresence } from "../checks/headers.js";
import { HEADER_CHECKS, checkNamed } from "../checks/registry.js";
import type { HeaderCheckName } from "../checks/registry.js";
import { hasFrameAncestors, hasMetaCsp } from "./csp.js";
import { found } from "./finding.js";
import type { Evidence, Finding, FindingDef, Severity } from "./finding.js";
import { finalHeader } from "./values.js";

function missing(
  name: HeaderCheckName,
  id: string,
  severity: Severity,
  recommendation: string,
): FindingDef {
  return { id, check: name, severity, message: checkNamed(name).missingNote, recommendation };
}

export const HSTS_MISSING = missing(
  "hsts",
  "hsts-missing",
  "medium",
  "Serve the site over HTTPS and set `Strict-Transport-Security: max-age=31536000; includeSubDomains`.",
);
export const CSP_MISSING = missing(
  "csp",
  "csp-missing",
  "medium",
  "Set a `Content-Security-Policy`, e.g. `default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`.",
);
export const X_FRAME_OPTIONS_MISSING = missing(
  "x_frame_options",
  "x-frame-options-missing",
  "medium",
  "Set `X-Frame-Options: DENY` (or `SAMEORIGIN`), or `Content-Security-Policy: frame-ancestors 'none'`.",
);
export const X_CONTENT_TYPE_OPTIONS_MISSING = missing(
  "x_content_type_options",
  "x-content-type-options-missing",
  "low",
  "Set `X-Content-Type-Options: nosniff`.",
);
export const REFERRER_POLICY_MISSING = missing(
  "referrer_policy",
  "referrer-policy-missing",
  "low",
  "Set `Referrer-Policy: strict-origin-when-cross-origin` (or `no-referrer`).",
);
export const PERMISSIONS_POLICY_MISSING = missing(
  "permissions_policy",
  "permissions-policy-missing",
  "info",
  "Set a `Permissions-Policy` turning off what the site does not use, e.g. `camera=(), microphone=(), geolocation=()`.",
);

const MISSING: Readonly<Record<HeaderCheckName, FindingDef>> = {
  hsts: HSTS_MISSING,
  csp: CSP_MISSING,
  x_frame_options: X_FRAME_OPTIONS_MISSING,
  x_content_type_options: X_CONTENT_TYPE_OPTIONS_MISSING,
  referrer_policy: REFERRER_POLICY_MISSING,
  permissions_policy: PERMISSIONS_POLICY_MISSING,
};

export const MISSING_FINDINGS: readonly FindingDef[] = Object.values(MISSING);

/** The findings of the headers absent from `presence`, in report order. */
export function missingHeaderFindings(
  presence: HeaderPresence,
  waived: ReadonlySet<HeaderCheckName> = new Set(),
): Finding[] {
  return HEADER_CHECKS.filter((h) => !presence[h.name] && !waived.has(h.name)).map((h) =>
    found(MISSING[h.name]),
  );
}

export function judgeMissingHeaders(e: Evidence): Finding[] {
  const presence = {} as HeaderPresence;
  for (const { name, header } of HEADER_CHECKS) presence[name] = finalHeader(e, header).length > 0;
  const waived = new Set<HeaderCheckName>();
  if (hasMetaCsp(e)) waived.add("csp");
  if (hasFrameAncestors(e)) waived.add("x_frame_options");
  return missingHeaderFindings(presence, waived);
}
