/**
 * What the rules look at: everything the engine gathered from one snapshot (the chain, the page,
 * the probes, the HTTPS and file verdicts), and the helpers that read its final headers. Pure data.
 */
import type {
  Capped,
  Chain,
  HeaderMap,
  RequestFailure,
  TlsHandshake,
  Undecodable,
} from "../types.js";

/**
 * The Fetch request destinations (Fetch §2.2.5) of the subresources page.ts collects: "" is a
 * prefetch's, or a preload's `as=fetch`; the script-like ones besides "script" come from
 * `<link rel=modulepreload as=…>`.
 */
export type Destination =
  | ""
  | "audio"
  | "audioworklet"
  | "embed"
  | "font"
  | "frame"
  | "iframe"
  | "image"
  | "object"
  | "paintworklet"
  | "script"
  | "serviceworker"
  | "sharedworker"
  | "style"
  | "track"
  | "video"
  | "worker";

/** The link types (HTML "Link types") whose `<link href>` page.ts collects. */
export type LinkFetch = "stylesheet" | "icon" | "preload" | "modulepreload" | "prefetch";

/** What the first 64 KiB of the final response's HTML says. */
export interface PageEvidence {
  /**
   * Content of every `<meta http-equiv="Content-Security-Policy" content="…">` a browser applies
   * (a child of the head; page.ts), in order; each is one policy.
   */
  metaCsp: string[];
  /** Every `<script src>`, its URL resolved against the page, and its integrity attribute. */
  scripts: { src: string; integrity: string | null }[];
  /**
   * Every `http:` URL a non-script element makes the browser fetch (img, link stylesheet, …),
   * with its request's destination, what mixed-content blocking goes by (Mixed Content §4.1);
   * for a `<link>`, the link type that fetches it; `imageset` for a `srcset` candidate, fetched
   * with the initiator "imageset", which browsers never upgrade.
   */
  insecure: {
    element: string;
    url: string;
    destination: Destination;
    rel?: LinkFetch;
    imageset?: true;
  }[];
  /** Content of every `<meta name="referrer">` in the document (not in template/noscript). */
  metaReferrer: string[];
}

/** The final URL asked again with a made-up `Origin`: its answer's headers, or nothing. */
export type CorsProbe =
  { kind: "response"; origin: string; status: number; headers: HeaderMap } | { kind: "failed" };

/** `GET http://<input host>/` under the same rules as the main chain. */
export type HttpSideProbe =
  | { kind: "redirect"; url: string; status: number; location: string }
  | { kind: "response"; url: string; status: number }
  | { kind: "failed"; failure: RequestFailure };

/** Why a scheme-less input was reported as its http:// (docs/contract.md §3.2 rule 2). */
export type FallbackCause = "refused" | "not_tls";

/**
 * The https check (rules/https.ts), with its reason when it failed; `secure_context`: not judged,
 * a loopback site in local mode is a secure context for browsers without HTTPS.
 */
export type HttpsVerdict =
  | { ok: true }
  | {
      ok: false;
      failure: RequestFailure | { kind: "no_response" } | { kind: "secure_context" };
      url: string;
    };

/** Why a well-known file is true, false or null (docs/contract.md §4.5's table). */
export type FileWhy =
  | "ok"
  | "missing" // 404/410/other 4xx (false)
  | "soft_404" // 200 that fails the content test (false)
  | "denied" // 401/403/429 (null)
  | "server_error" // 5xx (null)
  | "unexpected_status" // 1xx/3xx without a usable Location (null)
  | "body_unreadable" // 200 whose body broke off (null)
  | "body_undecodable" // 200 whose content coding could not be decoded (null)
  | "blocked"
  | "too_many_redirects"
  | "timeout"
  | "capped" // not asked: the snapshot reached one of our caps (null, never the site's fault)
  | "network"; // DNS, refused, reset, TLS, bad HTTP (null)

export interface FileVerdict {
  value: boolean | null;
  why: FileWhy;
  /** The final status, when there was a response. */
  status?: number;
  /** Why the body could not be decoded, for "body_undecodable". */
  undecodable?: Undecodable;
  /** Which of our caps stopped it, for "capped". */
  capped?: Capped;
  /** The fields of a security.txt that passed (rules/security-txt.ts), read when it arrived. */
  securityTxt?: SecurityTxtFields;
}

/** What a security.txt says (RFC 9116 §2.5): only what the judge needs, whatever its size. */
export interface SecurityTxtFields {
  /** How many `Contact` fields it has. */
  contacts: number;
  /** Each `Expires` value as written (at most a few: RFC 9116 wants exactly one). */
  expires: string[];
  /** When it was read (ISO 8601): what `Expires` is compared with. */
  readAt: string;
}

/**
 * The verdict on each well-known file of one origin. The three names are the contract's (the
 * registry holds its file checks to them at compile time).
 */
export type FileVerdicts = Record<"security_txt" | "robots_txt" | "sitemap_xml", FileVerdict>;

/** The verified TLS handshake of the final origin (or of the HTTPS probe for an http final URL),
 * and whether the server still accepts TLS 1.0 and 1.1. */
export interface TlsEvidence extends TlsHandshake {
  /** Whether a handshake limited to TLS 1.0 (1.1) completed; null when it could not be told. */
  tls1_0: boolean | null;
  tls1_1: boolean | null;
  /** Why a limit of ours left a legacy verdict null: our request cap, or our time. */
  legacyStopped?: ({ kind: "capped" } & Capped) | { kind: "timeout" };
}

/** Everything the rules look at, gathered by the engine from one snapshot. */
export interface Evidence {
  /** The input URL (normalized); the http:// one when a scheme-less input fell back to it. */
  input: URL;
  /** The https:// URL that refused the connection, when a scheme-less input fell back. */
  fallbackFrom?: string;
  /** Why it fell back: the https:// connection was refused, or its server speaks no TLS. */
  fallbackBecause?: FallbackCause;
  chain: Chain;
  /** null when the final response is not HTML or its body was not read. */
  page: PageEvidence | null;
  /** null when the probe was not sent (no final response). */
  cors: CorsProbe | null;
  /** null when the probe was not sent. */
  httpSide: HttpSideProbe | null;
  /** The https check with its reason when it failed. */
  https: HttpsVerdict;
  /** The well-known files of the final origin; null when the site was not reachable. */
  files: FileVerdicts | null;
  /** null when no TLS handshake to the final host completed verified. */
  tls: TlsEvidence | null;
  /** The final host's domain records (rules/dns.ts); absent or null when it is not a name. */
  dns?: DomainEvidence | null;
  /** The x402 challenge of a final 402 answer (rules/x402.ts); absent or null when none. */
  x402?: X402Evidence | null;
}

/** One payment option (`accepts` entry) of an x402 challenge, as written. */
export interface X402Offer {
  scheme: string;
  /** As written: CAIP-2 in v2 (`eip155:8453`), a name in v1 (`base`). */
  network: string;
  asset: string;
  /** In the asset's smallest unit: v2 `amount`, v1 `maxAmountRequired`. */
  amount: string;
  payTo: string;
  /** Whether payTo is written in its EIP-55 checksum form; null on a network that is not EVM. */
  payToChecksummed: boolean | null;
}

/** One x402 challenge of the final 402 answer: the v2 `PAYMENT-REQUIRED` header or a v1 body. */
export interface X402Challenge {
  from: "header" | "body";
  /** Its `x402Version`; null when it could not be read. */
  version: number | null;
  /** Why the official x402 schema of its generation refused it; null when it passed. */
  refused: string | null;
  /** The resource URLs it names (v2 `resource.url`, v1 each entry's `resource`). */
  resources: string[];
  offers: X402Offer[];
  /** It describes itself for Bazaar: v2 `extensions.bazaar`, v1 an entry's `outputSchema`. */
  bazaar: boolean;
}

/** Whether the final origin publishes an x402 discovery document. */
export interface X402Discovery {
  /** `/.well-known/x402` answered 200 with a JSON object listing `resources`; null: unknown. */
  wellKnown: boolean | null;
  /** `/openapi.json` answered 200 naming `x-payment-info`; null: unknown. */
  openApi: boolean | null;
}

/** The x402 challenge of a final 402 answer (rules/x402.ts). */
export interface X402Evidence {
  challenges: X402Challenge[];
  /** The `PAYMENT-REQUIRED` header's size in bytes (name, value); null when not sent. */
  headerBytes: number | null;
  /** null when the discovery documents were not asked. */
  discovery: X402Discovery | null;
}

/** What a CAA, TXT or MX question got: its records, none (NXDOMAIN/NODATA), or no usable answer. */
export type DnsAnswer<T> =
  { kind: "records"; records: T[] } | { kind: "none" } | { kind: "failed"; code: string };

/** One MX record: the exchanger and its preference (lower first). */
export interface MxRecord {
  priority: number;
  exchange: string;
}

/** `GET https://mta-sts.<domain>/.well-known/mta-sts.txt` (RFC 8461 §3.3), redirects not followed. */
export type PolicyFetch =
  | {
      kind: "response";
      url: string;
      status: number;
      contentType: string | undefined;
      /** Decoded body (≤ 64 KiB) of a 200; null otherwise or when it could not be decoded. */
      body: Buffer | null;
      /** Why the 200's content coding could not be decoded. */
      undecodable?: Undecodable;
    }
  | { kind: "failed"; failure: RequestFailure };

/**
 * The domain records of the final host's registrable domain (docs/contract.md §9.2), each null
 * when its answer did not arrive before the report was built.
 */
export interface DomainEvidence {
  /** The registrable domain (public suffix list). */
  domain: string;
  /** CAA records at the domain: the issuer of each `issue`/`issuewild` (may be ""), by tag. */
  caa: DnsAnswer<{ tag: string; value: string }> | null;
  /** TXT records at the domain. */
  txt: DnsAnswer<string> | null;
  /** TXT records at `_dmarc.<domain>`. */
  dmarc: DnsAnswer<string> | null;
  /** TXT records at `_mta-sts.<domain>`. */
  mtaStsTxt: DnsAnswer<string> | null;
  /** MX records at the domain (whether it receives mail). */
  mx: DnsAnswer<MxRecord> | null;
  /** The policy file; null when not fetched (no MTA-STS record) or late. */
  mtaStsPolicy: PolicyFetch | null;
}

/** Every non-blank instance of a header on the final response, trimmed; [] when there is none. */
export function finalHeader(e: Evidence, name: string): string[] {
  return (e.chain.final?.headers[name] ?? []).map((v) => v.trim()).filter((v) => v !== "");
}

/**
 * Whether a URL is potentially trustworthy (Secure Contexts §3.1): `https:`, or a loopback host
 * (`localhost`, `*.localhost`, 127.0.0.0/8, `[::1]`) whatever its scheme.
 */
export function isPotentiallyTrustworthy(url: URL): boolean {
  const host = url.hostname;
  const loopback = host === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(host);
  return (
    url.protocol === "https:" || loopback || host === "localhost" || host.endsWith(".localhost")
  );
}

/** Whether the final response was received over https. */
export function finalIsHttps(e: Evidence): boolean {
  return e.chain.final !== null && e.chain.finalUrl.protocol === "https:";
}
