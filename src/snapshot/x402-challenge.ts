/**
 * Reads the x402 challenge of a final 402 answer into the evidence rules/x402.ts judges: the v2
 * `PAYMENT-REQUIRED` header (base64 JSON, decoded by `@x402/core/http`) and a JSON body with
 * `x402Version` and `accepts` (v1), each checked by the official schema of its version
 * (`@x402/core/schemas`), and payTo's EIP-55 form by viem. These libraries are loaded only when a
 * final answer is a 402: a snapshot of any other site loads none of them (docs/benchmarks.md
 * "Start-up").
 */
import type * as X402Schemas from "@x402/core/schemas";
import type { X402Challenge, X402Offer } from "./rules/evidence.js";
import type { Hop } from "./types.js";

interface Libraries {
  schemas: typeof X402Schemas;
  decodeHeader: (value: string) => unknown;
  getAddress: (address: string) => string;
}

let libraries: Promise<Libraries> | undefined;

function load(): Promise<Libraries> {
  libraries ??= Promise.all([
    import("@x402/core/schemas"),
    import("@x402/core/http"),
    import("viem/utils"),
  ]).then(([schemas, http, utils]) => ({
    schemas,
    decodeHeader: http.decodePaymentRequiredHeader,
    getAddress: utils.getAddress,
  }));
  return libraries;
}

/** Whether `payTo` is written as its EIP-55 checksum; null for an address that is not EVM. */
function checksummed(payTo: string, network: string, lib: Libraries): boolean | null {
  if (!/^0x[0-9a-f]{40}$/i.test(payTo)) return network.startsWith("eip155:") ? false : null;
  return lib.getAddress(payTo) === payTo;
}

interface Entry {
  scheme: string;
  network: string;
  asset: string;
  payTo: string;
  amount?: string;
  maxAmountRequired?: string;
  resource?: string;
  outputSchema?: Record<string, unknown> | null;
}

function offerOf(entry: Entry, lib: Libraries): X402Offer {
  return {
    scheme: entry.scheme,
    network: entry.network,
    asset: entry.asset,
    amount: entry.amount ?? entry.maxAmountRequired ?? "",
    payTo: entry.payTo,
    payToChecksummed: checksummed(entry.payTo, entry.network, lib),
  };
}

/** The first reason a zod schema gave, with the path it is about. */
function reasonOf(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  const first = issues[0];
  if (!first) return "refused";
  const path = first.path.map(String).join(".");
  return path === "" ? first.message : `${path}: ${first.message}`;
}

function versionOf(doc: unknown): number | null {
  const v = (doc as { x402Version?: unknown } | null)?.x402Version;
  return typeof v === "number" ? v : null;
}

/** One challenge, checked by the schema of the version it claims (v2 unless it says 1). */
function challengeOf(doc: unknown, from: X402Challenge["from"], lib: Libraries): X402Challenge {
  const version = versionOf(doc);
  const refusedAs = (refused: string): X402Challenge => ({
    from,
    version,
    refused,
    resources: [],
    offers: [],
    bazaar: false,
  });
  if (version === 1) {
    const parsed = lib.schemas.PaymentRequiredV1Schema.safeParse(doc);
    if (!parsed.success) return refusedAs(reasonOf(parsed.error.issues));
    const { accepts } = parsed.data;
    return {
      from,
      version,
      refused: null,
      resources: [...new Set(accepts.map((a) => a.resource))],
      offers: accepts.map((a) => offerOf(a, lib)),
      bazaar: accepts.some((a) => a.outputSchema != null),
    };
  }
  const parsed = lib.schemas.PaymentRequiredV2Schema.safeParse(doc);
  if (!parsed.success) return refusedAs(reasonOf(parsed.error.issues));
  const { accepts, resource, extensions } = parsed.data;
  return {
    from,
    version,
    refused: null,
    resources: [resource.url],
    offers: accepts.map((a) => offerOf(a, lib)),
    bazaar: extensions?.["bazaar"] != null,
  };
}

/** The last non-empty `PAYMENT-REQUIRED` value of an answer, if any. */
export function paymentRequiredHeader(hop: Hop): string | undefined {
  return (hop.headers["payment-required"] ?? []).filter((v) => v.trim() !== "").at(-1);
}

function headerChallenge(value: string, lib: Libraries): X402Challenge {
  let doc: unknown;
  try {
    doc = lib.decodeHeader(value.trim());
  } catch {
    return {
      from: "header",
      version: null,
      refused: "not base64-encoded JSON",
      resources: [],
      offers: [],
      bazaar: false,
    };
  }
  return challengeOf(doc, "header", lib);
}

/** A JSON body that says it is an x402 challenge (`x402Version` and `accepts`); else undefined. */
function bodyDocument(body: Buffer | null): unknown {
  if (body === null) return undefined;
  try {
    const doc: unknown = JSON.parse(body.toString("utf8"));
    const isChallenge =
      typeof doc === "object" && doc !== null && "x402Version" in doc && "accepts" in doc;
    return isChallenge ? doc : undefined;
  } catch {
    return undefined;
  }
}

/** The challenge of a final 402's `PAYMENT-REQUIRED` header; null when there is none. */
export async function readHeaderChallenge(final: Hop): Promise<X402Challenge | null> {
  const header = final.status === 402 ? paymentRequiredHeader(final) : undefined;
  return header === undefined ? null : headerChallenge(header, await load());
}

/** The challenge of a final 402's JSON body (its first 64 KiB, as read); null when none. */
export async function readBodyChallenge(
  final: Hop,
  body: Buffer | null,
): Promise<X402Challenge | null> {
  const doc = final.status === 402 ? bodyDocument(body) : undefined;
  return doc === undefined ? null : challengeOf(doc, "body", await load());
}
