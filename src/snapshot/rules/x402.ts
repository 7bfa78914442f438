/**
 * The target's own x402 (docs/findings.md "x402"): when the final answer is a 402 carrying an x402
 * challenge, the report gains an `x402` section and the challenge is judged as a paying client
 * meets it. The challenge is read into evidence by x402-challenge.ts (the official x402 schemas
 * of both generations); everything here is a pure function of that evidence. Nothing is ever
 * paid to the target.
 */
import { NETWORKS, USDC_DECIMALS, networkById } from "../../networks.js";
import { finalHeader } from "./evidence.js";
import type {
  Evidence,
  X402Challenge,
  X402Discovery,
  X402Evidence,
  X402Offer,
} from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

/** The discovery documents of the final origin, asked only when it answered with a challenge. */
export const X402_WELL_KNOWN_PATH = "/.well-known/x402";
export const OPENAPI_PATH = "/openapi.json";

/** Proxies and CDNs commonly refuse response headers beyond 8 KiB. */
export const MAX_HEADER_BYTES = 8 * 1024;
/** More than this in one payment is a price no pay-per-call client expects (100 USDC). */
const MAX_USDC_UNITS = 100n * 10n ** BigInt(USDC_DECIMALS);
const ZERO_ADDRESS = /^0x0{40}$/i;
/** What a browser client reads of a v2 answer: the challenge, then the settlement. */
const PAYMENT_HEADERS = ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE"] as const;

const check = "x402";

export const X402_CHALLENGE_INVALID: FindingDef = {
  id: "x402-challenge-invalid",
  check,
  severity: "medium",
  message: "The x402 challenge is refused by the official x402 schema: clients cannot pay.",
  recommendation:
    "Build the 402 with an x402 SDK (`@x402/core`'s resource server, or the framework middleware), or check it against the official schema of its version.",
};

export const X402_PAY_TO_ZERO: FindingDef = {
  id: "x402-pay-to-zero",
  check,
  severity: "high",
  message: "The x402 challenge asks to pay the zero address: every payment is burnt.",
  recommendation: "Set `payTo` to the address that receives your payments.",
};

export const X402_RESOURCE_MISMATCH: FindingDef = {
  id: "x402-resource-mismatch",
  check,
  severity: "medium",
  message: "The x402 challenge names a resource that is not the https URL scanned.",
  recommendation:
    "Name in `resource` the https URL the client asked for (behind a proxy, the public URL, not the internal one).",
};

export const X402_ASSET_NOT_USDC: FindingDef = {
  id: "x402-asset-not-usdc",
  check,
  severity: "medium",
  message: "The x402 challenge asks for an asset that is not the network's USDC.",
  recommendation:
    "Set `asset` to the USDC contract of the network (the address the x402 SDKs use by default).",
};

export const X402_AMOUNT_ZERO: FindingDef = {
  id: "x402-amount-zero",
  check,
  severity: "medium",
  message: "The x402 challenge asks for an amount of 0: nothing is charged.",
  recommendation:
    "Set the price in the asset's smallest unit (0.01 USDC is `10000`), or serve the resource without a 402.",
};

export const X402_AMOUNT_HIGH: FindingDef = {
  id: "x402-amount-over-100-usdc",
  check,
  severity: "medium",
  message: "The x402 challenge asks for more than 100 USDC.",
  recommendation:
    "Check the amount's unit: it is in the asset's smallest unit (USDC has 6 decimals, 1 USDC is `1000000`).",
};

export const X402_HEADERS_NOT_EXPOSED: FindingDef = {
  id: "x402-headers-not-exposed",
  check,
  severity: "medium",
  message:
    "PAYMENT-REQUIRED or PAYMENT-RESPONSE is missing from Access-Control-Expose-Headers: browser clients cannot pay.",
  recommendation:
    "Send `Access-Control-Expose-Headers: PAYMENT-REQUIRED, PAYMENT-RESPONSE` with the 402 and the paid answer.",
};

export const X402_HEADER_TOO_LARGE: FindingDef = {
  id: "x402-header-too-large",
  check,
  severity: "medium",
  message: "The PAYMENT-REQUIRED header is over 8 KiB: proxies and CDNs may refuse the answer.",
  recommendation:
    "Shorten the challenge: fewer `accepts` entries, a compact Bazaar schema and example, no long descriptions.",
};

export const X402_PAY_TO_NOT_CHECKSUMMED: FindingDef = {
  id: "x402-pay-to-not-checksummed",
  check,
  severity: "low",
  message:
    "The x402 challenge's payTo is not written in its EIP-55 checksum form: a typo in it would go unnoticed.",
  recommendation: "Write `payTo` in its EIP-55 checksum form (viem's `getAddress`).",
};

export const X402_NO_BAZAAR: FindingDef = {
  id: "x402-no-bazaar",
  check,
  severity: "info",
  message:
    "The x402 challenge has no Bazaar description: agents that discover services cannot tell what it takes and returns.",
  recommendation:
    "Declare the Bazaar discovery extension (`@x402/extensions/bazaar`) with the input and output of the resource.",
};

export const X402_NO_DISCOVERY: FindingDef = {
  id: "x402-no-discovery",
  check,
  severity: "info",
  message:
    "No x402 discovery document: neither /.well-known/x402 nor x-payment-info in /openapi.json.",
  recommendation:
    "Publish `/.well-known/x402` listing your paid resources, or mark the paid operations of `/openapi.json` with `x-payment-info`.",
};

/** The `x402` section of a report. */
export interface X402Section {
  /** Each `x402Version` read, newest first. */
  versions: number[];
  /** Every challenge passed the official schema of its version. */
  valid: boolean;
  /** CAIP-2 ids (a v1 name the service knows is given as its id). */
  networks: string[];
  assets: string[];
  /** In the asset's smallest unit. */
  amounts: string[];
  pay_to: string[];
  resources: string[];
  /** The PAYMENT-REQUIRED header's value in bytes; null when the header was not sent. */
  header_bytes: number | null;
  bazaar: boolean;
  /** A discovery document was found; null when it could not be told. */
  discovery: boolean | null;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** The network's facts when the service knows it, by CAIP-2 id or v1 name. */
function knownNetwork(network: string) {
  return networkById(network) ?? Object.values(NETWORKS).find((n) => n.name === network);
}

function caip2(network: string): string {
  return knownNetwork(network)?.id ?? network;
}

function offersOf(x: X402Evidence): X402Offer[] {
  return x.challenges.flatMap((c) => c.offers);
}

/** Whether a discovery document was found: yes if either is, unknown if either is unknown. */
function discoveryFound(d: X402Discovery | null): boolean | null {
  if (d === null) return null;
  if (d.wellKnown === true || d.openApi === true) return true;
  return d.wellKnown === null || d.openApi === null ? null : false;
}

export function x402Section(e: Evidence): X402Section | undefined {
  const x = e.x402;
  if (!x) return undefined;
  const offers = offersOf(x);
  const versions = x.challenges.flatMap((c) => (c.version === null ? [] : [c.version]));
  return {
    versions: unique(versions).sort((a, b) => b - a),
    valid: x.challenges.every((c) => c.refused === null),
    networks: unique(offers.map((o) => caip2(o.network))),
    assets: unique(offers.map((o) => o.asset)),
    amounts: unique(offers.map((o) => o.amount)),
    pay_to: unique(offers.map((o) => o.payTo)),
    resources: unique(x.challenges.flatMap((c) => c.resources)),
    header_bytes: x.headerBytes,
    bazaar: x.challenges.some((c) => c.bazaar),
    discovery: discoveryFound(x.discovery),
  };
}

function where(c: X402Challenge): string {
  return c.from === "header" ? "PAYMENT-REQUIRED header" : "402 body";
}

/** Each challenge the official schema refused, with its first reason. */
function refusedChallenges(x: X402Evidence): Finding[] {
  return x.challenges
    .filter((c) => c.refused !== null)
    .map((c) =>
      found(
        X402_CHALLENGE_INVALID,
        `The x402 challenge in the ${where(c)} is refused by the official x402 schema (${c.refused}): clients cannot pay.`,
      ),
    );
}

function parsedUrl(text: string): URL | null {
  try {
    return new URL(text);
  } catch {
    return null;
  }
}

/** The first resource that is not the final URL, or one of http: when the final URL is so. */
function resourceMismatch(x: X402Evidence, finalUrl: URL): Finding[] {
  const wrong = x.challenges
    .flatMap((c) => c.resources)
    .find((r) => {
      const url = parsedUrl(r);
      return url === null || url.protocol !== "https:" || url.href !== finalUrl.href;
    });
  if (wrong === undefined) return [];
  const why =
    finalUrl.protocol === "https:" ? `the URL scanned is ${finalUrl.href}` : "it is not https";
  return [
    found(
      X402_RESOURCE_MISMATCH,
      `The x402 challenge names the resource ${JSON.stringify(wrong)}: ${why}.`,
    ),
  ];
}

function payToFindings(offers: readonly X402Offer[]): Finding[] {
  const zero = offers.find((o) => ZERO_ADDRESS.test(o.payTo));
  if (zero) return [found(X402_PAY_TO_ZERO)];
  const unchecked = offers.find((o) => o.payToChecksummed === false);
  if (!unchecked) return [];
  return [
    found(
      X402_PAY_TO_NOT_CHECKSUMMED,
      `The x402 challenge's payTo ${unchecked.payTo} is not written in its EIP-55 checksum form: a typo in it would go unnoticed.`,
    ),
  ];
}

/** The USDC address of the offer's network, when the service knows the network. */
function usdcOf(offer: X402Offer): string | undefined {
  return knownNetwork(offer.network)?.usdc.address;
}

function isUsdc(offer: X402Offer): boolean {
  return usdcOf(offer)?.toLowerCase() === offer.asset.toLowerCase();
}

function assetFindings(offers: readonly X402Offer[]): Finding[] {
  const other = offers.find((o) => usdcOf(o) !== undefined && !isUsdc(o));
  if (!other) return [];
  return [
    found(
      X402_ASSET_NOT_USDC,
      `The x402 challenge asks for the asset ${other.asset} on ${caip2(other.network)}, which is not its USDC (${usdcOf(other)}).`,
    ),
  ];
}

/** The amount as an integer, or null when it is not one (the schema only wants a string). */
function units(amount: string): bigint | null {
  return /^\d+$/.test(amount) ? BigInt(amount) : null;
}

function amountFindings(offers: readonly X402Offer[]): Finding[] {
  const out: Finding[] = [];
  if (offers.some((o) => units(o.amount) === 0n)) out.push(found(X402_AMOUNT_ZERO));
  const high = offers.find((o) => isUsdc(o) && (units(o.amount) ?? 0n) > MAX_USDC_UNITS);
  if (high) {
    const usdc = Number(units(high.amount)) / 10 ** USDC_DECIMALS;
    out.push(
      found(X402_AMOUNT_HIGH, `The x402 challenge asks for ${usdc} USDC (more than 100 USDC).`),
    );
  }
  return out;
}

/**
 * The exposed header names a browser client gets: from the CORS probe's answer (a request with
 * an Origin, as a browser sends), else from the final answer itself.
 */
function exposedHeaders(e: Evidence): Set<string> {
  const values =
    e.cors?.kind === "response"
      ? (e.cors.headers["access-control-expose-headers"] ?? [])
      : finalHeader(e, "access-control-expose-headers");
  return new Set(values.flatMap((v) => v.split(",")).map((name) => name.trim().toLowerCase()));
}

/** Only a v2 challenge travels in headers; `*` exposes every header to requests without credentials. */
function exposeFindings(e: Evidence, x: X402Evidence): Finding[] {
  if (x.headerBytes === null) return [];
  const exposed = exposedHeaders(e);
  if (exposed.has("*")) return [];
  const missing = PAYMENT_HEADERS.filter((h) => !exposed.has(h.toLowerCase()));
  if (missing.length === 0) return [];
  return [
    found(
      X402_HEADERS_NOT_EXPOSED,
      `${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} missing from Access-Control-Expose-Headers: browser clients cannot pay.`,
    ),
  ];
}

function sizeFindings(x: X402Evidence): Finding[] {
  if (x.headerBytes === null || x.headerBytes <= MAX_HEADER_BYTES) return [];
  return [
    found(
      X402_HEADER_TOO_LARGE,
      `The PAYMENT-REQUIRED header is ${x.headerBytes} bytes (over 8 KiB): proxies and CDNs may refuse the answer.`,
    ),
  ];
}

/** Discoverability: judged on challenges that parsed, and on discovery known to be absent. */
function discoveryFindings(x: X402Evidence): Finding[] {
  const read = x.challenges.filter((c) => c.refused === null);
  return [
    ...(read.length > 0 && !read.some((c) => c.bazaar) ? [found(X402_NO_BAZAAR)] : []),
    ...(discoveryFound(x.discovery) === false ? [found(X402_NO_DISCOVERY)] : []),
  ];
}

export function judgeX402(e: Evidence): Finding[] {
  const x = e.x402;
  if (!x) return [];
  const offers = offersOf(x);
  return [
    ...refusedChallenges(x),
    ...payToFindings(offers),
    ...resourceMismatch(x, e.chain.finalUrl),
    ...assetFindings(offers),
    ...amountFindings(offers),
    ...exposeFindings(e, x),
    ...sizeFindings(x),
    ...discoveryFindings(x),
  ];
}

/** `/.well-known/x402`: a JSON object listing its paid resources. */
export function isWellKnownX402(body: Buffer): boolean {
  try {
    const doc: unknown = JSON.parse(body.toString("utf8"));
    return (
      typeof doc === "object" &&
      doc !== null &&
      Array.isArray((doc as { resources?: unknown }).resources)
    );
  } catch {
    return false;
  }
}

/**
 * `/openapi.json` naming `x-payment-info`: looked for in the text, since a document larger
 * than the bytes read (64 KiB) cannot be parsed whole.
 */
export function namesPaymentInfo(body: Buffer): boolean {
  return body.toString("utf8").includes('"x-payment-info"');
}

export const x402Rule = defineRule({
  topic: "x402",
  findings: [
    X402_CHALLENGE_INVALID,
    X402_PAY_TO_ZERO,
    X402_PAY_TO_NOT_CHECKSUMMED,
    X402_RESOURCE_MISMATCH,
    X402_ASSET_NOT_USDC,
    X402_AMOUNT_ZERO,
    X402_AMOUNT_HIGH,
    X402_HEADERS_NOT_EXPOSED,
    X402_HEADER_TOO_LARGE,
    X402_NO_BAZAAR,
    X402_NO_DISCOVERY,
  ],
  judge: judgeX402,
  section: { key: "x402", of: x402Section },
});
