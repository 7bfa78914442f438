/** Permissions-Policy values (docs/findings.md): a structured-field dictionary (RFC 8941). */
import { Token, parseDictionary } from "structured-headers";
import { found } from "./finding.js";
import type { Evidence, Finding, FindingDef } from "./finding.js";
import { finalHeader } from "./values.js";

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

export const PERMISSIONS_POLICY_FINDINGS: readonly FindingDef[] = [
  PERMISSIONS_POLICY_INVALID,
  PERMISSIONS_POLICY_LEGACY,
];

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
