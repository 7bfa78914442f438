import { PaymentPayloadV1Schema, PaymentPayloadV2Schema } from "@x402/core/schemas";

/**
 * Largest proof header read, and deepest JSON nesting: both well above what the official
 * client sends for our challenge (docs/payment.md), far below what makes recursive code overflow.
 */
const MAX_PROOF_HEADER_BYTES = 8 * 1024;
const MAX_PROOF_DEPTH = 32;

/** The SDK's own test for the header (standard base64, at most two `=`). */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The part of the SDK's payload schemas (its own zod) used here. */
interface PayloadSchema {
  safeParse(
    value: unknown,
  ):
    | { success: true; data: { payload: unknown; extensions?: unknown } }
    | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/** A readable proof: its generation, its payer and the decoded payload (what the ledger keys). */
export type ProofReading =
  { ok: true; version: 1 | 2; payer: `0x${string}`; payload: unknown } | { ok: false; why: string };

/** One x402 protocol generation as the HTTP route meets it: the header its proof comes in. */
interface ProofGeneration {
  /** Lower-case request header name. */
  readonly header: string;
  readonly version: 1 | 2;
  /** Bounded reading of the header. */
  readonly read: (header: string) => ProofReading;
}

/**
 * Every generation the route knows, newest first: a request carrying any of these headers is a
 * payment attempt, never the plain challenge; when it carries both, the newest is read.
 */
export const PROOF_GENERATIONS: readonly ProofGeneration[] = [
  {
    header: "payment-signature",
    version: 2,
    read: (value) => readProof(value, "PAYMENT-SIGNATURE", PaymentPayloadV2Schema, 2),
  },
  {
    header: "x-payment",
    version: 1,
    read: (value) => readProof(value, "X-PAYMENT", PaymentPayloadV1Schema, 1),
  },
];

/** The first (non-empty) proof header the request carries, read by its generation's reader. */
export function readRequestProof(
  header: (name: string) => string | undefined,
): { version: 1 | 2; reading: ProofReading } | undefined {
  for (const generation of PROOF_GENERATIONS) {
    const value = header(generation.header);
    if (value) return { version: generation.version, reading: generation.read(value) };
  }
  return undefined;
}

/**
 * Reads a proof header (`name`) with bounded work, before the SDK or anything recursive sees
 * it: size, base64, UTF-8, nesting depth (scanned without recursion), JSON, then its
 * generation's PaymentPayload shape (the SDK's schema) with an EIP-3009 authorization (what our
 * challenge asks for), whose `from` is the payer. A failure says why in words a client can act on.
 */
function readProof(
  header: string,
  name: string,
  schema: PayloadSchema,
  version: 1 | 2,
): ProofReading {
  const generation = `x402 v${version}`;
  if (header.length > MAX_PROOF_HEADER_BYTES) {
    return refuse(`${name} is ${header.length} bytes; at most ${MAX_PROOF_HEADER_BYTES} are read`);
  }
  if (!BASE64.test(header)) return refuse(`${name} is not base64`);
  let text: string;
  try {
    text = utf8.decode(Buffer.from(header, "base64"));
  } catch {
    return refuse(`${name} does not decode to UTF-8 text`);
  }
  const depth = nestingDepth(text);
  if (depth > MAX_PROOF_DEPTH) {
    return refuse(`${name} nests deeper than ${MAX_PROOF_DEPTH} levels`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return refuse(`${name} does not decode to JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.map(String).join(".") : "the payload";
    return refuse(`${name} is not an ${generation} PaymentPayload (${where}: ${issue?.message})`);
  }
  const payer = authorizationFrom(parsed.data.payload);
  if (!payer) {
    return refuse(`${name} carries no EIP-3009 authorization (payload.authorization.from)`);
  }
  // The v1 schema drops `extensions`; kept, so a v1 proof can carry a payment id too.
  const extensions = (json as { extensions?: unknown }).extensions;
  const payload =
    typeof extensions === "object" && extensions !== null
      ? { ...parsed.data, extensions }
      : parsed.data;
  return { ok: true, version, payer, payload };
}

function refuse(why: string): ProofReading {
  return { ok: false, why };
}

function authorizationFrom(payload: unknown): `0x${string}` | undefined {
  const authorization = (payload as { authorization?: unknown } | null)?.authorization;
  if (typeof authorization !== "object" || authorization === null) return undefined;
  const from = (authorization as { from?: unknown }).from;
  return typeof from === "string" && EVM_ADDRESS.test(from) ? (from as `0x${string}`) : undefined;
}

/** Deepest `{`/`[` nesting of JSON text, counted in one pass outside strings. */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > deepest) deepest = depth;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return deepest;
}

/** True when the request carries a proof of any generation. */
export function carriesProof(header: (name: string) => string | undefined): boolean {
  return PROOF_GENERATIONS.some((generation) => Boolean(header(generation.header)));
}

/**
 * A proof that came another way than an HTTP header (the MCP `_meta`), base64 JSON as the header
 * carries it, read with the same bounds and schema as its generation's header.
 */
export function readEncodedProof(value: string, name: string, version: 1 | 2): ProofReading {
  return version === 2
    ? readProof(value, name, PaymentPayloadV2Schema, 2)
    : readProof(value, name, PaymentPayloadV1Schema, 1);
}
