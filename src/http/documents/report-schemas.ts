import * as z from "zod";
import { PATHS } from "../../routes.js";
import {
  ALL_FINDINGS,
  GRADES,
  SEVERITIES,
  SNAPSHOT_ERROR_TYPES,
  type DemoSnapshotResult,
  type SnapshotErrorBody,
  type SnapshotResult,
} from "../../snapshot/index.js";

/**
 * The report shapes of docs/contract.md §2 as zod schemas: answers are checked against them and
 * the OpenAPI document is generated from them. They live here, not in the engine, so `scan`
 * loads no zod (docs/benchmarks.md "Start-up"); the engine's types (src/snapshot/result.ts) are
 * held to them below, both ways, so the description cannot drift from the code. Key order is
 * that of docs/contract.md §2.1; the check fields and `checks` follow the rules registry, which
 * a test holds them to.
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
    // Every id of every rule module (the registry): a new topic's ids appear here by themselves.
    id: z
      .enum(ALL_FINDINGS.map((d) => d.id) as [string, ...string[]])
      .describe("Stable id of the finding; docs/findings.md says what each one means."),
    check: z.string().describe("The check or topic it is about."),
    severity: z.enum(SEVERITIES),
    message: z.string().describe("What was found; also one of the notes."),
    recommendation: z.string().describe("How to fix it."),
  })
  .strict();

const CrossOriginSchema = z
  .object({
    coop: z
      .enum(["same-origin", "same-origin-allow-popups", "noopener-allow-popups", "unsafe-none"])
      .describe(
        "Cross-Origin-Opener-Policy as browsers apply it; `unsafe-none` when absent, not understood, or on a page that is no secure context (plain HTTP).",
      ),
    coep: z
      .enum(["require-corp", "credentialless", "unsafe-none"])
      .describe(
        "Cross-Origin-Embedder-Policy as browsers apply it; `unsafe-none` when absent, not understood, or on a page that is no secure context (plain HTTP).",
      ),
    corp: z
      .enum(["same-origin", "same-site", "cross-origin"])
      .nullable()
      .describe("Cross-Origin-Resource-Policy; null when absent or ignored by browsers."),
    cross_origin_isolated: z
      .boolean()
      .describe("COOP `same-origin` and COEP `require-corp` or `credentialless`."),
  })
  .strict();

const DnsSectionSchema = z
  .object({
    domain: z
      .string()
      .describe("The registrable domain of the final host (public suffix list, ICANN section)."),
    caa: z
      .object({
        present: z.boolean().describe("The domain has a CAA record set (RFC 8659)."),
        issuers: z
          .array(z.string())
          .describe("Authorities its `issue`/`issuewild` records name; [] when none may issue."),
      })
      .strict()
      .nullable()
      .describe("null: the DNS servers gave no usable answer in time."),
    spf: z
      .object({
        present: z.boolean().describe("A TXT record starting `v=spf1` is published."),
        record: z.string().nullable().describe("The SPF record (the first, if several)."),
        all: z
          .enum(["+all", "?all", "~all", "-all"])
          .nullable()
          .describe("Its `all` term; `+all` and `?all` are weak; null: none, or several records."),
      })
      .strict()
      .nullable()
      .describe("null: the DNS servers gave no usable answer in time."),
    dmarc: z
      .object({
        present: z.boolean().describe("A TXT record starting `v=DMARC1` is at `_dmarc.<domain>`."),
        record: z.string().nullable().describe("The DMARC record (the first, if several)."),
        policy: z
          .enum(["none", "quarantine", "reject"])
          .nullable()
          .describe("Its `p=`; `none` is weak; null: invalid, or several records."),
      })
      .strict()
      .nullable()
      .describe("null: the DNS servers gave no usable answer in time."),
    mta_sts: z
      .object({
        present: z.boolean().describe("A TXT record starting `v=STSv1` is at `_mta-sts.<domain>`."),
        mode: z
          .enum(["enforce", "testing", "none"])
          .nullable()
          .describe("The policy file's mode; null: no record, or the file could not be used."),
        max_age: z
          .number()
          .int()
          .nullable()
          .describe("The policy's max_age in seconds; null as for mode."),
      })
      .strict()
      .nullable()
      .describe("null: the DNS servers gave no usable answer in time."),
    mx: z
      .object({
        present: z.boolean().describe("The domain has MX records."),
        null_mx: z
          .boolean()
          .describe("Its only MX is `0 .`: it declares it receives no mail (RFC 7505)."),
        hosts: z
          .array(z.string())
          .describe("The mail exchangers, most preferred first; [] with none or a null MX."),
      })
      .strict()
      .nullable()
      .describe("null: the DNS servers gave no usable answer in time."),
  })
  .strict()
  .describe("The domain's mail and certificate records (docs/contract.md §9.2).");
const TlsSchema = z
  .object({
    protocol: z.string().describe('The negotiated protocol, e.g. "TLSv1.3".'),
    cipher: z
      .string()
      .describe('The negotiated cipher suite (IANA name), e.g. "TLS_AES_128_GCM_SHA256".'),
    certificate: z
      .object({
        subject: z.string().describe('The leaf certificate\'s subject, e.g. "CN=example.com".'),
        issuer: z.string(),
        not_after: z.iso.datetime().describe("When the certificate expires."),
        days_left: z.number().int().describe("Whole days until not_after."),
        key_type: z.string().nullable().describe('"rsa", "ec", "ed25519", …; null when unknown.'),
        key_bits: z.number().int().nullable().describe("RSA modulus or EC curve size."),
      })
      .strict(),
    tls1_0_accepted: z
      .boolean()
      .nullable()
      .describe("A handshake limited to TLS 1.0 completed; null: could not be determined."),
    tls1_1_accepted: z
      .boolean()
      .nullable()
      .describe("A handshake limited to TLS 1.1 completed; null: could not be determined."),
  })
  .strict()
  .nullable()
  .describe("The verified TLS handshake to the final host; null when there was none.");

const X402Schema = z
  .object({
    versions: z.array(z.number().int()).describe("Each `x402Version` read, newest first."),
    valid: z.boolean().describe("Every challenge passed the official x402 schema of its version."),
    networks: z
      .array(z.string())
      .describe("CAIP-2 ids of the networks offered (`eip155:<chain id>`)."),
    assets: z.array(z.string()).describe("The token contracts asked for."),
    amounts: z.array(z.string()).describe("The amounts asked, in the asset's smallest unit."),
    pay_to: z.array(z.string()).describe("The addresses payments go to."),
    resources: z.array(z.string()).describe("The resource URLs the challenges name."),
    header_bytes: z
      .number()
      .int()
      .nullable()
      .describe("Size of the PAYMENT-REQUIRED header's value; null when it was not sent."),
    bazaar: z.boolean().describe("A challenge carries a Bazaar description of the resource."),
    discovery: z
      .boolean()
      .nullable()
      .describe(
        "/.well-known/x402 or x-payment-info in /openapi.json was found; null: could not be told.",
      ),
  })
  .strict();

/** A paid report's signature over what was paid for (docs/contract.md §10.1, docs/proof.md). */
const ProofSchema = z
  .object({
    snapshot_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{22,}$/)
      .describe("Opaque and URL-safe, at least 128 random bits."),
    issued_at: z.iso.datetime().describe("When the report was made (its fetched_at)."),
    network: z.string().describe("The CAIP-2 id of the network paid on."),
    payer: z.string().describe("The address that paid."),
    transaction: z.string().describe("The settlement transaction's hash."),
    report_sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .describe("Hex SHA-256 of the report without `proof`, serialised by RFC 8785 (JCS)."),
    kid: z
      .string()
      .describe(`RFC 7638 thumbprint of the signing key, listed in GET ${PATHS.jwks}.`),
    jws: z
      .string()
      .describe(
        "JWS compact serialisation with a detached payload (RFC 7515 appendix F), alg EdDSA, over the JCS form of this object without `jws`.",
      ),
  })
  .strict()
  .describe("In every paid report: who paid, by which transaction, and the service's signature.");

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
    grade: z
      .enum(GRADES as [string, ...string[]])
      .describe(
        "The score on a fixed scale, capped: F without working HTTPS, D at best with no security header.",
      ),
    tls: TlsSchema,
    dns: DnsSectionSchema.nullable().describe(
      "CAA, SPF, DMARC, MTA-STS and MX of the final host's registrable domain; null when the host is an IP address or not under a public suffix.",
    ),
    cross_origin: CrossOriginSchema.nullable().describe(
      "The final response's cross-origin policies and whether the page is cross-origin isolated; null without a final response.",
    ),
    x402: X402Schema.optional().describe(
      'The final answer\'s x402 challenge (docs/findings.md "x402"); only when it is a 402 carrying one.',
    ),
    proof: ProofSchema.optional(),
  })
  .strict();

export const DemoSnapshotResultSchema = SnapshotResultSchema.extend({
  _demo: z.literal(true),
  _note: z.string(),
}).strict();

export const SnapshotErrorBodySchema = z
  .object({
    requested_url: z.string(),
    error: z.string(),
    error_type: z.enum(SNAPSHOT_ERROR_TYPES),
  })
  .strict();

/** True when A and B are the same type (not merely assignable one way). */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// Compile-time only: a schema and the engine's type that differ in any key or type fail `tsc`.
const _schemasAreTheEngineTypes: [
  Same<z.infer<typeof SnapshotResultSchema>, SnapshotResult>,
  Same<z.infer<typeof DemoSnapshotResultSchema>, DemoSnapshotResult>,
  Same<z.infer<typeof SnapshotErrorBodySchema>, SnapshotErrorBody>,
] = [true, true, true];
