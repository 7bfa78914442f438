import { declareDiscoveryExtension } from "@x402/extensions/bazaar";
import * as z from "zod";
import { PATHS } from "../../routes.js";
import { MAX_URL_LENGTH, demoSnapshot, type SnapshotResult } from "../../snapshot/index.js";

/**
 * The request body of POST /v1/snapshot (docs/contract.md §3.1: `{url}`), as /openapi.json
 * publishes it. Lives here, below the HTTP layer, because the Bazaar discovery describes it too.
 */
export const SnapshotRequestSchema = z.object({
  url: z
    .string()
    .describe(
      `The public http(s) URL to check, e.g. https://example.com, at most ${MAX_URL_LENGTH} characters; without a scheme (a bare host name), https:// is assumed.`,
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
 * How every challenge names the report in full (Bazaar `info.output.format`, v1
 * `outputSchema.output.format`): its published schema and the free demo. The example beside it
 * (COMPACT_EXAMPLE) shows the shape; the reference has every field's type and meaning.
 */
const REPORT_FORMAT = `SnapshotResult: schema GET ${PATHS.openApi} (components.schemas.SnapshotResult), example GET ${PATHS.demo}`;

/**
 * The demo report (docs/contract.md §2.4) as the challenge's output example: every field of a
 * SnapshotResult, without the demo's `_demo`/`_note` markers, its findings cut to the most
 * severe and its notes to that one's, and the sections of §9 as null (each may be: the full
 * example is GET /demo/snapshot). Compact because it travels, base64-encoded, in the
 * PAYMENT-REQUIRED header of every unpaid request, which stays under 4 KiB (docs/payment.md
 * "The output example").
 */
function compactExample(): SnapshotResult {
  const { _demo: _marker, _note: _why, ...report } = demoSnapshot();
  const findings = report.findings.slice(0, 1);
  const messages = new Set(findings.map((f) => f.message));
  const notes = report.notes.filter((n) => messages.has(n));
  return { ...report, notes, findings, tls: null, dns: null };
}

/** The Bazaar's `info.output` (type, format and example, as its spec shapes it), made once. */
const DISCOVERED_OUTPUT = { type: "json", format: REPORT_FORMAT, example: compactExample() };

/**
 * The `extensions` entry of the route: Bazaar discovery of the JSON input (example + schema)
 * and of the output (a compact example, and REPORT_FORMAT naming the full schema). The SDK's
 * declaration builds both; `format` is added to the output and its part of the schema.
 */
export function snapshotDiscoveryExtension(): Record<string, unknown> {
  return withReportOutput(
    declareDiscoveryExtension({
      bodyType: "json",
      input: { url: "https://example.com" },
      inputSchema: embeddedJsonSchema(DiscoveredRequestSchema),
      output: { example: DISCOVERED_OUTPUT.example },
    }),
  );
}

/**
 * The `extensions` entry of the MCP tool's PaymentRequired (docs/mcp.md): Bazaar discovery of
 * an MCP tool, `info.input` `{type: "mcp", toolName, transport, inputSchema}` with the tool's
 * arguments (the same `{url}`), and the same output as the HTTP route's.
 */
export function mcpSnapshotDiscoveryExtension(): Record<string, unknown> {
  return withReportOutput(
    declareDiscoveryExtension({
      // The tool MCP_SNAPSHOT_RESOURCE names (mcp://tool/snapshot), served over POST /mcp.
      toolName: "snapshot",
      transport: "streamable-http",
      inputSchema: embeddedJsonSchema(DiscoveredRequestSchema),
      example: { url: "https://example.com" },
      output: { example: DISCOVERED_OUTPUT.example },
    }),
  );
}

/** A declared Bazaar extension with DISCOVERED_OUTPUT as its output, `format` in its schema. */
function withReportOutput(extension: Record<string, unknown>): Record<string, unknown> {
  const declared = extension as unknown as {
    bazaar: { info: Record<string, unknown>; schema: Record<string, unknown> };
  };
  // The schema's `$schema` (draft 2020-12, the extension's own) is left out: every byte
  // travels in each challenge, and validators read the schema the same without it.
  const { $schema: _draft, properties, ...schema } = declared.bazaar.schema;
  const { output, ...declaredProperties } = properties as {
    output: { properties: Record<string, unknown> };
  };
  return {
    bazaar: {
      info: { ...declared.bazaar.info, output: DISCOVERED_OUTPUT },
      schema: {
        ...schema,
        properties: {
          ...declaredProperties,
          output: {
            ...output,
            properties: { ...output.properties, format: { type: "string" } },
          },
        },
      },
    },
  };
}

/**
 * x402 v1's `outputSchema` of the route, as v1 discovery reads it: how to call it (`input`) and
 * what it returns (`output`: the same type, format and compact example as the v2 header's).
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
