/** X-Content-Type-Options values (docs/findings.md): exactly `nosniff`. */
import { found } from "./finding.js";
import type { Evidence, Finding, FindingDef } from "./finding.js";
import { finalHeader } from "./values.js";

export const X_CONTENT_TYPE_OPTIONS_INVALID: FindingDef = {
  id: "x-content-type-options-invalid",
  check: "x_content_type_options",
  severity: "low",
  message: "X-Content-Type-Options is not `nosniff`, so browsers may still guess content types.",
  recommendation: "Set `X-Content-Type-Options: nosniff`.",
};

export const X_CONTENT_TYPE_OPTIONS_FINDINGS: readonly FindingDef[] = [
  X_CONTENT_TYPE_OPTIONS_INVALID,
];

export function judgeXContentTypeOptions(e: Evidence): Finding[] {
  const values = finalHeader(e, "x-content-type-options");
  if (values.length === 0) return [];
  const tokens = values.flatMap((v) => v.split(",")).map((v) => v.trim().toLowerCase());
  return tokens.every((t) => t === "nosniff") ? [] : [found(X_CONTENT_TYPE_OPTIONS_INVALID)];
}
