import * as z from "zod";

import { CHECKS } from "./checks/registry.js";
import type { CheckField, CheckName } from "./checks/registry.js";
import { SEVERITIES } from "./findings/finding.js";
import type { Finding } from "./findings/finding.js";
import { ALL_FINDINGS } from "./findings/index.js";
import { GRADES, gradeOf, scoreOf } from "./findings/score.js";

/**
 * The report shapes of docs/contract.md §2, as zod schemas. They are the single source of truth:
 * the engine builds values of these types, the HTTP layer validates responses with them and the
 * OpenAPI document is generated from them, so the description cannot drift from the code.
 * Key order is that of docs/contract.md §2.1; the check fields and `checks` follow the checks
 * registry (checks/registry.ts), which a test holds them to.
 */

const ChecksSchema = z
  .object({
    https: z.boolean(),
    hsts: z.boolean(),
    csp: z.boolean(),
    x_frame_options: z.boolean(),
    x_content_type_options: z.boolean(),
    referrer_policy: z.boolean(),
    permissions_policy: z.boolean(),
    security_txt: z.boolean().nullable(),
    robots_txt: z.boolean().nullable(),
    sitemap_xml: z.boolean().nullable(),
  })
  .strict()
  .describe("Map of check name to result; each value equals the field of the same base name.");

const FindingSchema = z
  .object({
    id: z
      .enum(ALL_FINDINGS.map((d) => d.id) as [string, ...string[]])
      .describe("Stable id of the finding; docs/findings.md says what each one means."),
    check: z.string().describe("The check or topic it is about."),
    severity: z.enum(SEVERITIES),
    message: z.string().describe("What was found; also one of the notes."),
    recommendation: z.string().describe("How to fix it."),
  })
  .strict();

export const SnapshotResultSchema = z
  .object({
    requested_url: z.string().describe("The URL as submitted."),
    normalized_url: z.string().describe("The submitted URL in normalized (WHATWG) form."),
    final_url: z.string().describe("The last URL requested while following redirects."),
    fetched_at: z.iso.datetime().describe("When the fetch started (ISO 8601, ms, UTC)."),
    reachable: z.boolean().describe("Whether the redirect chain ended in a final response."),
    final_status_code: z
      .number()
      .int()
      .nullable()
      .describe("Status of the final response; null exactly when reachable is false."),
    redirect_count: z.number().int().min(0).describe("Redirects actually followed."),
    https_ok: z
      .boolean()
      .describe("An HTTPS request to the host completed with a valid certificate."),
    hsts_present: z.boolean(),
    csp_present: z.boolean(),
    x_frame_options_present: z.boolean(),
    x_content_type_options_present: z.boolean(),
    referrer_policy_present: z.boolean(),
    permissions_policy_present: z.boolean(),
    security_txt_present: z.boolean().nullable().describe("null: could not be determined."),
    robots_txt_present: z.boolean().nullable().describe("null: could not be determined."),
    sitemap_xml_present: z.boolean().nullable().describe("null: could not be determined."),
    notes: z
      .array(z.string())
      .describe("Human-readable findings; nothing is said of what is fine."),
    checks: ChecksSchema,
    findings: z
      .array(FindingSchema)
      .describe("Judgements of what was seen, most severe first (docs/findings.md)."),
    score: z.number().int().min(0).max(100).describe("100 less a penalty per finding."),
    grade: z.enum(GRADES as [string, ...string[]]).describe("The score on a fixed scale."),
  })
  .strict();
export type SnapshotResult = z.infer<typeof SnapshotResultSchema>;

/** Each check's value by check name: the `checks` object of a report. */
export type CheckValues = SnapshotResult["checks"];

/** What a report says besides its checks and notes. */
export type ReportFacts = Omit<
  SnapshotResult,
  CheckField | "notes" | "checks" | "findings" | "score" | "grade"
>;

/**
 * A report in the key order of docs/contract.md §2.1: the facts, each check's field, the notes,
 * then `checks`, whose every entry equals its field (§2.3).
 */
export function buildReport(
  facts: ReportFacts,
  values: CheckValues,
  notes: string[],
  findings: Finding[] = [],
): SnapshotResult {
  const score = scoreOf(findings);
  const fields: Partial<Record<CheckField, boolean | null>> = {};
  const checks: Partial<Record<CheckName, boolean | null>> = {};
  for (const { name, field } of CHECKS) {
    fields[field] = values[name];
    checks[name] = values[name];
  }
  return {
    requested_url: facts.requested_url,
    normalized_url: facts.normalized_url,
    final_url: facts.final_url,
    fetched_at: facts.fetched_at,
    reachable: facts.reachable,
    final_status_code: facts.final_status_code,
    redirect_count: facts.redirect_count,
    ...(fields as Pick<SnapshotResult, CheckField>),
    notes,
    checks: checks as CheckValues,
    findings,
    score,
    grade: gradeOf(score),
  };
}

export const DemoSnapshotResultSchema = SnapshotResultSchema.extend({
  _demo: z.literal(true),
  _note: z.string(),
}).strict();
export type DemoSnapshotResult = z.infer<typeof DemoSnapshotResultSchema>;

const SNAPSHOT_ERROR_TYPES = ["ssrf", "timeout", "unreachable", "invalid_url"] as const;
export type SnapshotErrorType = (typeof SNAPSHOT_ERROR_TYPES)[number];

export const SnapshotErrorBodySchema = z
  .object({
    requested_url: z.string(),
    error: z.string(),
    error_type: z.enum(SNAPSHOT_ERROR_TYPES),
  })
  .strict();
export type SnapshotErrorBody = z.infer<typeof SnapshotErrorBodySchema>;

/** Thrown by the engine for every 400 outcome (docs/contract.md §3 and §4.2). */
export class SnapshotError extends Error {
  constructor(
    readonly errorType: SnapshotErrorType,
    message: string,
    readonly requestedUrl = "",
  ) {
    super(message);
    this.name = "SnapshotError";
  }

  toBody(): SnapshotErrorBody {
    return { requested_url: this.requestedUrl, error: this.message, error_type: this.errorType };
  }
}
