/**
 * Referrer-Policy (docs/findings.md): the check of `referrer_policy_present`, its missing-header
 * finding, and its values (W3C Referrer Policy §4.1 and §8.1).
 */
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

const POLICIES = new Set([
  "no-referrer",
  "no-referrer-when-downgrade",
  "same-origin",
  "origin",
  "strict-origin",
  "origin-when-cross-origin",
  "strict-origin-when-cross-origin",
  "unsafe-url",
]);
const UNSAFE = new Set(["unsafe-url", "no-referrer-when-downgrade"]);
/** Policies that send the origin to every other site, plain-HTTP ones too (no `strict-`). */
const ORIGIN_TO_ALL = new Set(["origin", "origin-when-cross-origin"]);

export const REFERRER_POLICY_MISSING: FindingDef = {
  id: "referrer-policy-missing",
  check: "referrer_policy",
  severity: "low",
  message: "Referrer-Policy header is missing.",
  recommendation: "Set `Referrer-Policy: strict-origin-when-cross-origin` (or `no-referrer`).",
};
export const REFERRER_POLICY_UNSAFE: FindingDef = {
  id: "referrer-policy-unsafe",
  check: "referrer_policy",
  severity: "low",
  message: "Referrer-Policy sends full URLs to other sites.",
  recommendation: "Set `Referrer-Policy: strict-origin-when-cross-origin` (or `no-referrer`).",
};
export const REFERRER_POLICY_ORIGIN: FindingDef = {
  id: "referrer-policy-origin",
  check: "referrer_policy",
  severity: "low",
  message:
    "Referrer-Policy sends the site's origin to every other site, plain-HTTP ones too (it has no `strict-`).",
  recommendation: "Set `Referrer-Policy: strict-origin-when-cross-origin` (or `no-referrer`).",
};
export const REFERRER_POLICY_INVALID: FindingDef = {
  id: "referrer-policy-invalid",
  check: "referrer_policy",
  severity: "low",
  message: "Referrer-Policy has no valid policy token, so browsers ignore it.",
  recommendation: "Set `Referrer-Policy: strict-origin-when-cross-origin` (or `no-referrer`).",
};

/** The legacy values a referrer `<meta>` still accepts (HTML §4.2.5.1), by what they mean. */
const LEGACY_META: Record<string, string> = {
  never: "no-referrer",
  default: "strict-origin-when-cross-origin",
  always: "unsafe-url",
  "origin-when-crossorigin": "origin-when-cross-origin",
};

/**
 * The policy the page's `<meta name="referrer">` tags set (each one token, legacy names mapped;
 * the last valid one wins, over the header too), or null.
 */
export function metaReferrerPolicy(e: Evidence): string | null {
  const tokens = (e.page?.metaReferrer ?? []).map((v) => {
    const t = v.toLowerCase();
    return LEGACY_META[t] ?? t;
  });
  return tokens.filter((t) => POLICIES.has(t)).at(-1) ?? null;
}

/** Comma-separated tokens; unknown ones are ignored and the last valid one wins (§8.1). */
export function effectiveReferrerPolicy(values: readonly string[]): string | null {
  const tokens = values.flatMap((v) => v.split(",")).map((t) => t.trim().toLowerCase());
  return tokens.filter((t) => POLICIES.has(t)).at(-1) ?? null;
}

export function judgeReferrerPolicy(e: Evidence): Finding[] {
  const values = finalHeader(e, "referrer-policy");
  const meta = metaReferrerPolicy(e);
  if (values.length === 0 && meta === null) return [];
  // A valid <meta> replaces the header's policy (an invalid header then does no harm).
  const policy = meta ?? effectiveReferrerPolicy(values);
  if (policy === null) return [found(REFERRER_POLICY_INVALID)];
  if (UNSAFE.has(policy)) {
    return [
      found(
        REFERRER_POLICY_UNSAFE,
        `Referrer-Policy is ${policy}, which sends full URLs to other sites.`,
      ),
    ];
  }
  if (ORIGIN_TO_ALL.has(policy)) {
    return [
      found(
        REFERRER_POLICY_ORIGIN,
        `Referrer-Policy is ${policy}, which sends the site's origin to every other site, plain-HTTP ones too.`,
      ),
    ];
  }
  return [];
}

export const referrerPolicyRule = defineRule({
  topic: "referrer_policy",
  check: {
    kind: "header",
    name: "referrer_policy",
    field: "referrer_policy_present",
    header: "referrer-policy",
    missing: REFERRER_POLICY_MISSING,
    // A <meta name="referrer"> sets the policy although the header is missing (the field stays).
    waived: (e) => metaReferrerPolicy(e) !== null,
    label: "Referrer-Policy",
  },
  findings: [
    REFERRER_POLICY_MISSING,
    REFERRER_POLICY_UNSAFE,
    REFERRER_POLICY_ORIGIN,
    REFERRER_POLICY_INVALID,
  ],
  judge: judgeReferrerPolicy,
  notes: (e) => {
    const meta = metaReferrerPolicy(e);
    return meta === null
      ? []
      : [`The page sets its referrer policy in a <meta name="referrer"> tag (${meta}).`];
  },
});
