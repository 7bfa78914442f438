/**
 * X-Content-Type-Options (docs/findings.md): the check of `x_content_type_options_present`, its
 * missing-header finding, and its values: exactly `nosniff`.
 */
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const X_CONTENT_TYPE_OPTIONS_MISSING: FindingDef = {
  id: "x-content-type-options-missing",
  check: "x_content_type_options",
  severity: "low",
  message: "X-Content-Type-Options header is missing.",
  recommendation: "Set `X-Content-Type-Options: nosniff`.",
};
export const X_CONTENT_TYPE_OPTIONS_INVALID: FindingDef = {
  id: "x-content-type-options-invalid",
  check: "x_content_type_options",
  severity: "low",
  message: "X-Content-Type-Options is not `nosniff`, so browsers may still guess content types.",
  recommendation: "Set `X-Content-Type-Options: nosniff`.",
};

export function judgeXContentTypeOptions(e: Evidence): Finding[] {
  const values = finalHeader(e, "x-content-type-options");
  if (values.length === 0) return [];
  const tokens = values.flatMap((v) => v.split(",")).map((v) => v.trim().toLowerCase());
  return tokens.every((t) => t === "nosniff") ? [] : [found(X_CONTENT_TYPE_OPTIONS_INVALID)];
}

export const xContentTypeOptionsRule = defineRule({
  topic: "x_content_type_options",
  check: {
    kind: "header",
    name: "x_content_type_options",
    field: "x_content_type_options_present",
    header: "x-content-type-options",
    missing: X_CONTENT_TYPE_OPTIONS_MISSING,
    label: "X-Content-Type-Options",
  },
  findings: [X_CONTENT_TYPE_OPTIONS_MISSING, X_CONTENT_TYPE_OPTIONS_INVALID],
  judge: judgeXContentTypeOptions,
});
