/**
 * Permissions-Policy (docs/findings.md): the check of `permissions_policy_present`, its
 * missing-header finding, and its values: a structured-field dictionary (RFC 8941).
 */
import { Token, parseDictionary } from "structured-headers";
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const PERMISSIONS_POLICY_MISSING: FindingDef = {
  id: "permissions-policy-missing",
  check: "permissions_policy",
  severity: "info",
  message: "Permissions-Policy header is missing.",
  recommendation:
    "Set a `Permissions-Policy` turning off what the site does not use, e.g. `camera=(), microphone=(), geolocation=()`.",
};
export const PERMISSIONS_POLICY_INVALID: FindingDef = {
  id: "permissions-policy-invalid",
  check: "permissions_policy",
  severity: "low",
  message:
    "Permissions-Policy is not a valid structured-field dictionary (RFC 8941), so browsers ignore it.",
  recommendation:
    "Use the dictionary syntax, e.g. `Permissions-Policy: camera=(), microphone=(), geolocation=(self)`.",
};
export const PERMISSIONS_POLICY_LEGACY: FindingDef = {
  id: "permissions-policy-legacy",
  check: "permissions_policy",
  severity: "info",
  message:
    "Only the legacy Feature-Policy header is set; current browsers read Permissions-Policy.",
  recommendation:
    "Send the same rules as `Permissions-Policy`, e.g. `Permissions-Policy: camera=(), microphone=()`.",
};

/** A member's allowlist: an inner list of origins, or the tokens `*` and `self`. */
function validMember(value: unknown): boolean {
  if (Array.isArray(value)) return true;
  return value instanceof Token && (value.toString() === "*" || value.toString() === "self");
}

export function validPermissionsPolicy(values: readonly string[]): boolean {
  try {
    const dict = parseDictionary(values.join(", "));
    return [...dict.values()].every(([value]) => validMember(value));
  } catch {
    return false;
  }
}

export function judgePermissionsPolicy(e: Evidence): Finding[] {
  const values = finalHeader(e, "permissions-policy");
  if (values.length > 0)
    return validPermissionsPolicy(values) ? [] : [found(PERMISSIONS_POLICY_INVALID)];
  return finalHeader(e, "feature-policy").length > 0 ? [found(PERMISSIONS_POLICY_LEGACY)] : [];
}

export const permissionsPolicyRule = defineRule({
  topic: "permissions_policy",
  check: {
    kind: "header",
    name: "permissions_policy",
    field: "permissions_policy_present",
    header: "permissions-policy",
    missing: PERMISSIONS_POLICY_MISSING,
    label: "Permissions-Policy",
  },
  findings: [PERMISSIONS_POLICY_MISSING, PERMISSIONS_POLICY_INVALID, PERMISSIONS_POLICY_LEGACY],
  judge: judgePermissionsPolicy,
});
