/**
 * What agents and crawlers read to find and use the service (docs/contract.md §7.9), beside
 * /openapi.json: GET /.well-known/x402 (the resource list x402 crawlers read) and GET /llms.txt
 * (plain text for language models). Both name the service by the base URL the 402 and the
 * OpenAPI document use: PUBLIC_URL, else the request's own.
 */
import { DEFAULT_PRICE_USDC, NETWORK_IDS } from "../../config.js";
import { PATHS } from "../../routes.js";
import { MAX_URL_LENGTH, REPORT_COVERAGE } from "../../snapshot/index.js";
import { SnapshotResultSchema } from "./report-schemas.js";
import { guidance, networksInWords, type ServiceFacts } from "./openapi.js";
import { MAX_BODY_BYTES } from "../snapshot-input.js";

/** The one paid resource, as the crawlers' list names it. */
const PAID = `POST ${PATHS.snapshot}`;

/** GET /.well-known/x402: the x402 resource list, version 1 (the format crawlers read today). */
export function wellKnownX402(baseUrl: string, facts: ServiceFacts): Record<string, unknown> {
  const price = `${facts.priceUsdc ?? DEFAULT_PRICE_USDC} USDC`;
  return {
    version: 1,
    resources: [`POST ${baseUrl}${PATHS.snapshot}`],
    instructions:
      `A JSON security-hygiene report of one public URL (${REPORT_COVERAGE}; findings with ` +
      "fixes, a score and a grade), paid per call with x402 " +
      `(scheme exact, USDC on ${networksInWords(offered(facts), facts.devnet ?? false)}). ` +
      `${guidance(price)} Schema: ${baseUrl}${PATHS.openApi}; guide for agents: ${baseUrl}${PATHS.llmsTxt}.`,
  };
}

function offered(facts: ServiceFacts): readonly string[] {
  return facts.networks ?? Object.values(NETWORK_IDS);
}

/** What the six header fields, which carry no description of their own, say. */
const HEADER_FIELD = "whether the final response carries that security header (non-empty).";

/** Each report field with its description, one line each, in the report's order. */
function outputFields(): string {
  const { properties } = SnapshotResultSchema.toJSONSchema() as {
    properties: Record<string, { description?: string }>;
  };
  return Object.entries(properties)
    .map(([name, field]) => `- \`${name}\`: ${field.description ?? HEADER_FIELD}`)
    .join("\n");
}

/** GET /llms.txt, in the llms.txt convention: a title, a summary line, then sections. */
export function llmsTxt(baseUrl: string, facts: ServiceFacts): string {
  const priceUsdc = facts.priceUsdc ?? DEFAULT_PRICE_USDC;
  const devnet = facts.devnet ?? false;
  const networks = networksInWords(offered(facts), devnet);
  return `# secsnap

> One public URL in, one JSON report out: the site's security hygiene (${REPORT_COVERAGE}),
> with findings that say what to fix, a score and a grade. ${priceUsdc} USDC per call, paid with x402.

## Price and networks

- ${priceUsdc} USDC per live report (\`${PAID}\`), scheme \`exact\`, on ${networks}.${
    devnet ? "\n- This instance runs its local devnet: test USDC only, no real money moves." : ""
  }
- An invalid or blocked URL is refused with a 400 before payment is asked for: never charged.
- Free: \`GET ${PATHS.demo}\`, \`GET ${PATHS.health}\`, \`GET ${PATHS.openApi}\`, this file.

## How to pay over HTTP (x402)

1. \`POST ${baseUrl}${PATHS.snapshot}\` with \`{"url": "https://example.com"}\` (Content-Type
   \`application/json\`).
2. The answer is 402. The x402 v2 challenge is the \`PAYMENT-REQUIRED\` header (base64 JSON); the
   x402 v1 challenge is the JSON body (\`accepts\`). Each offer names the network, the amount in
   USDC units (6 decimals), the asset and the payee.
3. Sign an EIP-3009 USDC authorization for one offer (any x402 client does: \`@x402/fetch\`,
   \`x402-fetch\`, \`secsnap pay\`) and send the same request again with \`PAYMENT-SIGNATURE\` (v2)
   or \`X-PAYMENT\` (v1).
4. The 200 is the report; \`PAYMENT-RESPONSE\` (v1: \`X-PAYMENT-RESPONSE\`) carries the
   settlement transaction. A 503 with \`Retry-After\` means nothing was charged, or the report is
   kept: send the same proof again. Send a \`payment-identifier\` to make retries safe.

## How to pay over MCP

- \`POST ${baseUrl}${PATHS.mcp}\`: the service as a Model Context Protocol server (Streamable HTTP,
  stateless). Tools: \`snapshot\` ({url}, output SnapshotResult; paid with x402 over MCP: an
  unpaid call returns \`isError: true\` with the PaymentRequired as \`structuredContent\` and as
  JSON text, the retry carries the PaymentPayload in \`params._meta["x402/payment"]\`, and the
  settlement comes back in \`result._meta["x402/payment-response"]\`; an invalid or blocked URL
  is an error result with the SnapshotError, never charged) and \`demo_snapshot\` (free).
- \`secsnap mcp\`: a stdio MCP server for MCP hosts (Claude Desktop, Cursor, VS Code) that pays
  this API with the wallet in \`SECSNAP_PRIVATE_KEY\`, within per-call and per-session caps.
  Tools: \`snapshot\`, \`demo_snapshot\`, \`wallet\`, \`get_snapshot\` (a paid report again, free,
  by its \`proof.snapshot_id\`, signed in with the same wallet).

## Input

A JSON object with a string \`url\` (other fields ignored), at most ${MAX_BODY_BYTES / 1024} KiB: a
public http(s) URL of at most ${MAX_URL_LENGTH} characters; without a scheme, https:// is assumed. The
body is read as JSON with Content-Type \`application/json\`, \`text/plain\` or none. Private,
loopback and other non-public addresses, \`localhost\`, credentials in the URL and ports outside
the allowed set (by default 80, 443, 8080, 8443) are refused (400 \`invalid_url\` or \`ssrf\`).

## Output (SnapshotResult)

Every field is always present; \`null\` in a \`*_present\` field of a file means it could not be
determined.

${outputFields()}

Errors are 400 SnapshotError: \`{"requested_url", "error", "error_type"}\`, \`error_type\` one
of \`invalid_url\`, \`ssrf\`, \`unreachable\`, \`timeout\`. Never charged.

## Links

- [Demo report](${baseUrl}${PATHS.demo}): a fixed example, free, no site fetched.
- [OpenAPI 3.1 document](${baseUrl}${PATHS.openApi}): every operation, schema and example.
- [Interactive API reference](${baseUrl}${PATHS.reference})
- [x402 resource list](${baseUrl}${PATHS.wellKnownX402})
`;
}
