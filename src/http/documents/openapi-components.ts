/**
 * The OpenAPI document's components: the schemas of the service's own answers beside the
 * report's (report-schemas.ts), all as JSON Schema, and the references operations make to them.
 */
import * as z from "zod";
import { NETWORK_IDS } from "../../config.js";
import { ANSWER_CATALOGUE, SnapshotRequestSchema, type AnswerCode } from "../../payment/index.js";
import {
  DemoSnapshotResultSchema,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "./report-schemas.js";
import { MAX_BODY_BYTES } from "../snapshot-input.js";

/** GET /health (docs/contract.md §2.6). */
export const HealthSchema = z
  .object({
    status: z.literal("ok").describe("ok when healthy."),
    version: z.string().describe("Service version."),
  })
  .strict();

/** GET /ready (docs/contract.md §2.7): ready, or what is down. */
export const ReadinessSchema = z.union([
  z.object({ status: z.literal("ready") }).strict(),
  z
    .object({
      status: z.literal("not_ready"),
      down: z
        .array(z.string())
        .min(1)
        .describe("What is down: `draining`, `facilitator`, or a store's name."),
      code: z.literal("not_ready"),
    })
    .strict(),
]);

/** The 429 of a client over its budget of free answers (docs/contract.md §2.7). */
const RateLimitedSchema = z
  .object({
    error: z.string().describe("Human-readable message."),
    code: z.literal("rate_limited"),
    error_type: z.literal("rate_limited").describe("Its name before `code`, kept."),
  })
  .strict()
  .describe("Too many free answers (402, 400, demo, OpenAPI) for this client address.");

/** Every code of the catalogue of answers (docs/contract.md §1.3, "Error answers"). */
const ANSWER_CODES = Object.keys(ANSWER_CATALOGUE) as [AnswerCode, ...AnswerCode[]];

/** Every error that is not about the submitted URL: 404, 405, 409, 429, 500 and 503. */
const ServiceErrorSchema = z
  .object({
    error: z.string().describe("Human-readable message; its words may change."),
    code: z
      .enum(ANSWER_CODES)
      .describe("What happened, stable: branch on it (docs/contract.md §1.3, “Error answers”)."),
  })
  .describe("Error that is not about the submitted URL.");

/** A 402 that refuses a proof without the x402 v1 body: the reason, in x402's own words. */
const PaymentRefusedSchema = z
  .object({ error: z.string().describe("Why the proof was refused.") })
  .describe("x402's answer to a refused proof; the challenge is in `PAYMENT-REQUIRED`.");

/** The x402 v1 names of the networks (`base`, `base-sepolia`). */
type V1Network = keyof typeof NETWORK_IDS;

/**
 * One offer of the x402 v1 challenge (the SDK's PaymentRequirementsV1Schema, described), on the
 * networks offered (in devnet mode its one chain: no document names another, §7.7).
 */
function paymentRequirementsV1Schema(networks: readonly V1Network[]) {
  return z.object({
    scheme: z.literal("exact"),
    network: z.enum(networks as [V1Network, ...V1Network[]]).describe("x402 v1 network name."),
    maxAmountRequired: z.string().describe("USDC units (6 decimals)."),
    resource: z.string().describe("Full URL of this endpoint."),
    description: z.string(),
    mimeType: z.string(),
    outputSchema: z
      .record(z.string(), z.unknown())
      .describe(
        "`input`: how to call this endpoint; `output`: the report (`format`: its schema in this document and the demo; `example`: a compact one).",
      ),
    payTo: z.string(),
    maxTimeoutSeconds: z.number().int(),
    asset: z.string().describe("USDC contract address."),
    extra: z
      .object({
        name: z.string(),
        version: z.string(),
        devnet: z
          .literal(true)
          .optional()
          .describe("Only on the service's local devnet (docs/contract.md §7.7)."),
      })
      .describe("EIP-712 domain of the token, which the payer signs over."),
  });
}

/** x402's offer-receipt extension in a 402: one signed offer per `accepts` entry. */
const offerReceiptOffersSchema = z.object({
  info: z.object({
    offers: z.array(
      z.object({
        format: z.literal("jws"),
        acceptIndex: z.number().int().describe("The `accepts` entry it is the offer of."),
        signature: z
          .string()
          .describe("JWS compact serialisation, EdDSA, `kid` did:web:<host>#<key thumbprint>."),
      }),
    ),
  }),
});

/** The 402 body: the x402 v1 challenge, with the same offers as the v2 PAYMENT-REQUIRED header. */
function paymentRequiredV1Schema(networks: readonly V1Network[]) {
  return z
    .object({
      x402Version: z.literal(1),
      error: z.string().describe("Why payment is required, or why the proof was refused."),
      accepts: z.array(paymentRequirementsV1Schema(networks)),
      extensions: z
        .object({ "offer-receipt": offerReceiptOffersSchema })
        .optional()
        .describe("The same signed offers as the v2 header (docs/contract.md §7.11)."),
    })
    .describe("x402 v1 PaymentRequired.");
}

/** The components, the v1 challenge's on the offered networks. */
function components(v1Networks: readonly V1Network[]) {
  return {
    SnapshotRequest: SnapshotRequestSchema.describe(
      `Other fields are ignored. The whole body may be at most ${MAX_BODY_BYTES / 1024} KiB.`,
    ),
    SnapshotResult: SnapshotResultSchema,
    DemoSnapshotResult: DemoSnapshotResultSchema,
    SnapshotError: SnapshotErrorBodySchema,
    Health: HealthSchema,
    Readiness: ReadinessSchema,
    RateLimited: RateLimitedSchema,
    ServiceError: ServiceErrorSchema,
    PaymentRefused: PaymentRefusedSchema,
    PaymentRequiredV1: paymentRequiredV1Schema(v1Networks),
  } as const;
}
export type ComponentName = keyof ReturnType<typeof components>;

/** The v1 names of CAIP-2 network ids; ids without one are left out. */
function v1Names(networks: readonly string[]): V1Network[] {
  return (Object.keys(NETWORK_IDS) as V1Network[]).filter((name) =>
    networks.includes(NETWORK_IDS[name]),
  );
}

/** One realistic value per component, shown as its `example` (a test validates each). */
export type ComponentExamples = Record<ComponentName, unknown>;

/**
 * The zod schemas as JSON Schema 2020-12 (OpenAPI 3.1's dialect), referencing each other by $ref,
 * each with its example.
 */
export function componentSchemas(
  examples: ComponentExamples,
  networks: readonly string[],
): Record<ComponentName, Record<string, unknown>> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(components(v1Names(networks)))) {
    registry.add(schema, { id });
  }
  // No `metadata: registry`: the descriptions live in zod's global registry (`.describe()`), and
  // reading metadata from this one instead would drop every one of them.
  const { schemas } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    uri: (id) => `#/components/schemas/${id}`,
  });
  const out: Record<string, Record<string, unknown>> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    // $schema and $id belong to standalone documents, not to OpenAPI components.
    const { $schema: _dialect, $id: _id, ...rest } = schema as Record<string, unknown>;
    out[id] = { ...rest, example: examples[id as ComponentName] };
  }
  return out as Record<ComponentName, Record<string, unknown>>;
}

const ref = (name: ComponentName) => ({ $ref: `#/components/schemas/${name}` });
/** A JSON body that is one component. */
export const json = (name: ComponentName) => ({ "application/json": { schema: ref(name) } });
/** A JSON body that is any one of several components. */
export const jsonAnyOf = (...names: ComponentName[]) => ({
  "application/json": { schema: { anyOf: names.map((name) => ref(name)) } },
});
