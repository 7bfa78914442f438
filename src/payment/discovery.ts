import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import * as z from "zod";
import { MAX_URL_LENGTH, sampleReport } from "../snapshot/index.js";
import type { SnapshotResult } from "../snapshot/index.js";

/**
 * The request body of POST /v1/snapshot (docs/contract.md §3.1: `{url}`), as /openapi.json
 * publishes it. Lives here, below the HTTP layer, because the Bazaar discovery describes it too.
 */
export const SnapshotRequestSchema = z.object({
  url: z
    .string()
    .describe(
      `A public http(s) URL, at most ${MAX_URL_LENGTH} characters; without a scheme, https:// is assumed.`,
    ),
});

/** The same body as the Bazaar sees it: with the URL's length bound, without prose. */
const DiscoveredRequestSchema = SnapshotRequestSchema.extend({
  url: z.string().max(MAX_URL_LENGTH),
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

/**
 * The report's example: a sample site with every header, so no note and no finding. Smaller than
 * the demo on purpose: it travels in every challenge, whose size sets its speed
 * (docs/benchmarks.md); the demo and /openapi.json show notes and findings.
 */
function exampleResult(): SnapshotResult {
  return sampleReport({
    hsts: true,
    csp: true,
    x_frame_options: true,
    x_content_type_options: true,
    referrer_policy: true,
    permissions_policy: true,
  });
}

/**
 * The `extensions` entry of the route: Bazaar discovery of the JSON input (example + schema) and
 * of the report by its example, as the Bazaar spec shapes `info.output`. The report's full schema
 * is left to /openapi.json on purpose: embedded here it more than doubled the PAYMENT-REQUIRED
 * header sent with every unpaid request (docs/payment.md).
 */
export function snapshotDiscoveryExtension(): Record<string, unknown> {
  const declared = declareDiscoveryExtension({
    bodyType: "json",
    input: { url: "https://example.com" },
    inputSchema: embeddedJsonSchema(DiscoveredRequestSchema),
    output: { example: exampleResult() },
  }) as unknown as { bazaar: { info: unknown; schema: Record<string, unknown> } };
  // The schema's `$schema` (draft 2020-12, the extension's own) is left out: every byte
  // travels in each challenge, and validators read the schema the same without it.
  const { $schema: _draft, ...schema } = declared.bazaar.schema;
  return { bazaar: { info: declared.bazaar.info, schema } };
}

/**
 * x402 v1's `outputSchema` of the route, as v1 discovery reads it: how to call it (`input`) and
 * what it returns (`output`). The output is named, not embedded: this travels in the body of every
 * 402 beside the v2 header, and its size sets the challenge's speed (docs/benchmarks.md); the
 * example is in the header's Bazaar extension, the schema in /openapi.json.
 */
export function snapshotOutputSchemaV1(): Record<string, unknown> {
  const input = embeddedJsonSchema(DiscoveredRequestSchema);
  return {
    input: {
      type: "http",
      method: "POST",
      bodyType: "json",
      bodyFields: input.properties,
      discoverable: true,
    },
    output: {
      type: "json",
      schema: "SnapshotResult (GET /openapi.json, components.schemas.SnapshotResult)",
    },
  };
}
