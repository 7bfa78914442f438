import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import * as z from "zod";
import { MAX_URL_LENGTH } from "../snapshot/index.js";

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
 * How every challenge names the report (Bazaar `info.output.format`, v1 `outputSchema.output`):
 * by reference to its published schema and the free demo, not by an embedded example, which
 * would be a third of the PAYMENT-REQUIRED header sent with every unpaid request
 * (docs/payment.md "The report by reference").
 */
const REPORT_FORMAT =
  "SnapshotResult: schema GET /openapi.json (components.schemas.SnapshotResult), example GET /demo/snapshot";

/** The Bazaar's `info.output` (type + format, as its spec shapes it) and the schema part for it. */
const DISCOVERED_OUTPUT = { type: "json", format: REPORT_FORMAT };
const DISCOVERED_OUTPUT_SCHEMA = {
  type: "object",
  properties: { type: { type: "string" }, format: { type: "string" } },
  required: ["type"],
};

/**
 * The `extensions` entry of the route: Bazaar discovery of the JSON input (example + schema) and
 * of the report by reference (REPORT_FORMAT); the SDK's declaration covers the input only, so
 * the output and its part of the schema are added here.
 */
export function snapshotDiscoveryExtension(): Record<string, unknown> {
  const declared = declareDiscoveryExtension({
    bodyType: "json",
    input: { url: "https://example.com" },
    inputSchema: embeddedJsonSchema(DiscoveredRequestSchema),
  }) as unknown as {
    bazaar: { info: Record<string, unknown>; schema: Record<string, unknown> };
  };
  // The schema's `$schema` (draft 2020-12, the extension's own) is left out: every byte
  // travels in each challenge, and validators read the schema the same without it.
  const { $schema: _draft, properties, ...schema } = declared.bazaar.schema;
  return {
    bazaar: {
      info: { ...declared.bazaar.info, output: DISCOVERED_OUTPUT },
      schema: {
        ...schema,
        properties: { ...(properties as object), output: DISCOVERED_OUTPUT_SCHEMA },
      },
    },
  };
}

/**
 * x402 v1's `outputSchema` of the route, as v1 discovery reads it: how to call it (`input`) and
 * what it returns (`output`, by reference as in the v2 header).
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
    output: DISCOVERED_OUTPUT,
  };
}
