import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import { z } from "zod";
import { SnapshotResultSchema } from "../snapshot/result.js";
import type { SnapshotResult } from "../snapshot/result.js";

/** The request body of POST /v1/snapshot as the Bazaar describes it (SPEC §2: `{url}`). */
const SnapshotRequestSchema = z.object({
  url: z.string().max(2048).describe("Public http(s) URL to inspect; https:// is assumed."),
});

/**
 * JSON Schema from the zod schema, embedded inside another schema (so no `$schema`). It travels
 * base64-encoded in every 402 challenge header, where size is cost, so it keeps the shape (names,
 * types, required, nullability) and leaves out prose: `description`s (they are in
 * /openapi.json) and a `pattern` beside a `format` (zod spells date-time as a 500-character regex).
 */
function embeddedJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return JSON.parse(
    JSON.stringify(rest, function (this: Record<string, unknown>, key, value: unknown) {
      if (key === "description") return undefined;
      return key === "pattern" && typeof this.format === "string" ? undefined : value;
    }),
  ) as Record<string, unknown>;
}

// Parsed through the schema so the advertised example cannot drift from the real shape.
const EXAMPLE_RESULT: SnapshotResult = SnapshotResultSchema.parse({
  requested_url: "example.com",
  normalized_url: "https://example.com/",
  final_url: "https://example.com/",
  fetched_at: "2026-01-01T00:00:00.000Z",
  reachable: true,
  final_status_code: 200,
  redirect_count: 0,
  https_ok: true,
  hsts_present: true,
  csp_present: false,
  x_frame_options_present: true,
  x_content_type_options_present: true,
  referrer_policy_present: true,
  permissions_policy_present: false,
  security_txt_present: true,
  robots_txt_present: true,
  sitemap_xml_present: null,
  notes: [
    "Content-Security-Policy (CSP) header is missing.",
    "Permissions-Policy header is missing.",
  ],
  checks: {
    https: true,
    hsts: true,
    csp: false,
    x_frame_options: true,
    x_content_type_options: true,
    referrer_policy: true,
    permissions_policy: false,
    security_txt: true,
    robots_txt: true,
    sitemap_xml: null,
  },
});

/** The `extensions` entry of the route: Bazaar discovery of the JSON input and the report. */
export function snapshotDiscoveryExtension(): Record<string, unknown> {
  return declareDiscoveryExtension({
    bodyType: "json",
    input: { url: "https://example.com" },
    inputSchema: embeddedJsonSchema(SnapshotRequestSchema),
    output: { example: EXAMPLE_RESULT, schema: embeddedJsonSchema(SnapshotResultSchema) },
  });
}
