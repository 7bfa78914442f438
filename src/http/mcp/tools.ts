/**
 * The MCP tools every secsnap MCP server exposes — `secsnap mcp` (stdio) and the service's own
 * `POST /mcp` — with the same names, descriptions and schemas (docs/contract.md §7.10, §8.2).
 * The schemas are the report's zod schemas (src/http/documents/report-schemas.ts); the SDK's
 * McpServer lists them as JSON Schema.
 *
 * The `snapshot` tool's output schema is one object schema that admits every structured answer
 * the tool gives: the report, a SnapshotError and an x402 PaymentRequired. The SDK's client
 * checks `structuredContent` against the output schema even on `isError` results, so a schema
 * admitting the report alone would make `callTool` throw on an invalid URL (docs/mcp.md).
 */
import * as z from "zod";
import {
  DemoSnapshotResultSchema,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "../documents/report-schemas.js";
import { SnapshotRequestSchema } from "../../payment/index.js";
import { REPORT_COVERAGE } from "../../snapshot/index.js";

/**
 * The x402 challenge (PaymentRequired) as the unpaid `POST /mcp` call carries it: the fields a
 * client reads to pay; the rest is the x402 SDK's to check.
 */
const PaymentRequiredSchema = z
  .looseObject({
    x402Version: z.number().int(),
    error: z.string().optional(),
    accepts: z.array(
      z.looseObject({
        scheme: z.string(),
        network: z.string(),
        amount: z.string().optional(),
        asset: z.string(),
        payTo: z.string(),
      }),
    ),
  })
  .describe("x402 PaymentRequired: the payment the call needs.");

const STRUCTURED_ANSWERS = [SnapshotResultSchema, SnapshotErrorBodySchema, PaymentRequiredSchema];

/** A zod schema as a JSON Schema to embed (draft 2020-12, as the SDK v2 lists tool schemas). */
function embedded(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io: "output",
  });
  return json;
}

/**
 * `{"type": "object", "anyOf": [SnapshotResult, SnapshotError, PaymentRequired]}`: MCP wants an
 * object schema at the top; `anyOf` keeps each answer's own strict shape. Checked with zod on
 * the server (the SDK checks non-error results) by the same three schemas.
 */
const SnapshotToolOutputSchema = z
  .looseObject({})
  .refine((value) => STRUCTURED_ANSWERS.some((schema) => schema.safeParse(value).success), {
    message: "neither a SnapshotResult, a SnapshotError nor an x402 PaymentRequired",
  })
  .meta({
    description:
      "The SnapshotResult report; on an error result (isError) a SnapshotError (invalid or blocked URL) or an x402 PaymentRequired, or nothing.",
    anyOf: STRUCTURED_ANSWERS.map(embedded),
  });

/** The tools' names, as MCP clients call them. */
export const MCP_TOOL_NAMES = { snapshot: "snapshot", demoSnapshot: "demo_snapshot" } as const;

/** `snapshot`: the paid live report. Its handler is each server's own (how it is paid differs). */
export const SNAPSHOT_TOOL = {
  title: "Security-hygiene snapshot of a URL (paid, 0.05 USDC)",
  description:
    `Fetches one public http(s) URL and reports its security hygiene: ${REPORT_COVERAGE}; ` +
    "findings with fixes, a score and a grade. " +
    "Costs 0.05 USDC per call, paid with x402. An invalid or blocked URL is an error result with a " +
    "SnapshotError and is never charged.",
  inputSchema: {
    // The request body's own field: one description in the OpenAPI, the Bazaar and MCP.
    url: SnapshotRequestSchema.shape.url,
  },
  outputSchema: SnapshotToolOutputSchema,
  annotations: { readOnlyHint: true, openWorldHint: true, idempotentHint: false },
};

/** `demo_snapshot`: the free, fixed demo report (docs/contract.md §2.4). */
export const DEMO_SNAPSHOT_TOOL = {
  title: "Demo security-hygiene report (free)",
  description:
    "Returns a fixed example report of a sample site (no site is fetched, nothing is paid): " +
    "the shape of what `snapshot` returns.",
  inputSchema: {},
  outputSchema: DemoSnapshotResultSchema,
  annotations: { readOnlyHint: true, openWorldHint: false, idempotentHint: true },
};

/**
 * `get_snapshot`: a paid report again, free, for its payer (docs/contract.md §10.4). Only
 * `secsnap mcp` lists it: it signs in with the wallet its `snapshot` pays with, and the service's
 * own `POST /mcp` holds no wallet to sign in with.
 */
export const GET_SNAPSHOT_TOOL = {
  title: "A paid report again (free, for the wallet that paid)",
  description:
    "Returns a report this wallet paid for before, by the `proof.snapshot_id` of its report: the same " +
    "report, signed as it was, free, while the service keeps it (30 days by default). Signs in with " +
    "the paying wallet (x402 sign-in-with-x); another wallet's report or an unknown id is an error " +
    "result saying so.",
  inputSchema: {
    snapshot_id: z
      .string()
      .min(1)
      .describe("The report's `proof.snapshot_id`, as the paid `snapshot` result carries it."),
  },
  outputSchema: SnapshotResultSchema,
  annotations: { readOnlyHint: true, openWorldHint: true, idempotentHint: true },
};
