import { z } from "zod";

/**
 * The report shapes of SERVICE.md §2, as zod schemas. They are the single source of truth:
 * the engine builds values of these types, the HTTP layer validates responses with them and the
 * OpenAPI document is generated from them, so the description cannot drift from the code.
 * Key order follows SERVICE.md §2.1 (SPEC §3 "Field presence").
 */

export const CHECK_NAMES = [
  "https",
  "hsts",
  "csp",
  "x_frame_options",
  "x_content_type_options",
  "referrer_policy",
  "permissions_policy",
  "security_txt",
  "robots_txt",
  "sitemap_xml",
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

export const ChecksSchema = z
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
  })
  .strict();
export type SnapshotResult = z.infer<typeof SnapshotResultSchema>;

/** `checks` from the fields (SERVICE.md §2.1 rule 2: each entry equals its field, in SPEC order). */
export function checksOf(fields: Omit<SnapshotResult, "checks">): SnapshotResult["checks"] {
  return {
    https: fields.https_ok,
    hsts: fields.hsts_present,
    csp: fields.csp_present,
    x_frame_options: fields.x_frame_options_present,
    x_content_type_options: fields.x_content_type_options_present,
    referrer_policy: fields.referrer_policy_present,
    permissions_policy: fields.permissions_policy_present,
    security_txt: fields.security_txt_present,
    robots_txt: fields.robots_txt_present,
    sitemap_xml: fields.sitemap_xml_present,
  };
}

export const DemoSnapshotResultSchema = SnapshotResultSchema.extend({
  _demo: z.literal(true),
  _note: z.string(),
}).strict();
export type DemoSnapshotResult = z.infer<typeof DemoSnapshotResultSchema>;

export const SNAPSHOT_ERROR_TYPES = ["ssrf", "timeout", "unreachable", "invalid_url"] as const;
export type SnapshotErrorType = (typeof SNAPSHOT_ERROR_TYPES)[number];

export const SnapshotErrorBodySchema = z
  .object({
    requested_url: z.string(),
    error: z.string(),
    error_type: z.enum(SNAPSHOT_ERROR_TYPES),
  })
  .strict();
export type SnapshotErrorBody = z.infer<typeof SnapshotErrorBodySchema>;

/** Thrown by the engine for every 400 outcome of SPEC §2–§4. */
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
