/**
 * The data that flows from the network layer (net/fetch.ts) into the pure rules (rules/*.ts) and
 * the notes. Nothing here does I/O.
 */

/** Response header values by lower-case name; a repeated header keeps every instance. */
export type HeaderMap = Readonly<Record<string, readonly string[]>>;

/** One response of a redirect chain. */
export interface Hop {
  url: string;
  status: number;
  headers: HeaderMap;
  /** When its headers arrived (ISO 8601): what a cookie's Expires is compared with. */
  readAt?: string;
}

/** Why a TLS handshake failed, as far as a person needs to know. */
export type TlsReason =
  "expired" | "not_yet_valid" | "wrong_name" | "untrusted" | "self_signed" | "handshake";

/** The per-snapshot cap that stopped a request (budget.ts): our limit, not the site's fault. */
export interface Capped {
  limit: "requests" | "names";
  max: number;
}

/** Why a request produced no HTTP response (the classification of an undici/dialer error). */
export type RequestFailure =
  /** Not sent: the snapshot reached SNAPSHOT_MAX_REQUESTS or SNAPSHOT_MAX_NAMES. */
  | ({ kind: "capped" } & Capped)
  | { kind: "blocked"; message: string }
  | { kind: "dns" }
  | { kind: "refused" }
  | { kind: "reset" }
  /** Closed or reset after an exchange began (TLS handshake done, or part of an answer read). */
  | { kind: "closed" }
  | { kind: "network"; code: string | undefined }
  | { kind: "timeout" }
  | { kind: "tls"; reason: TlsReason; code: string | undefined }
  | { kind: "protocol"; code: string | undefined };

/** The main redirect chain as it went. */
export interface Chain {
  /** Responses received, in order (redirects first, the final response last if there was one). */
  hops: Hop[];
  /** The last URL requested. */
  finalUrl: URL;
  redirectCount: number;
  /** The final (non-redirect) response; null when the chain did not end in one. */
  final: Hop | null;
  /** Why there is no final response: the last request failed, or the redirect cap was hit. */
  failure: RequestFailure | { kind: "redirect_cap"; max: number } | null;
}

/** Why the last request of a chain produced no response; null when it did or the cap was hit. */
export function requestFailureOf(chain: Chain): RequestFailure | null {
  return chain.failure && chain.failure.kind !== "redirect_cap" ? chain.failure : null;
}

/** Why the content coding of a body could not be decoded (the body is then not judged). */
export type Undecodable =
  /** A coding we do not decode (zstd, compress, anything unknown). */
  | { why: "unsupported_coding"; coding: string }
  /** More codings than fetch.ts MAX_CODINGS; refused before decoding anything. */
  | { why: "too_many_codings"; count: number; max: number }
  /** The bytes are not in the coding the response says they are (or not valid in it). */
  | { why: "corrupt"; coding: string };

/** The outcome of one well-known file probe (after following its own ≤ 3 redirects). */
export type FileProbe =
  | {
      kind: "response";
      url: string;
      status: number;
      /** Last Content-Type value, if any. */
      contentType: string | undefined;
      /** Decoded body (≤ 64 KiB), read only for status 200; null otherwise or on a read error. */
      body: Buffer | null;
      /** A 200 whose body arrived but whose content coding could not be decoded. */
      undecodable?: Undecodable;
    }
  | {
      kind: "failed";
      url: string;
      reason: "blocked" | "too_many_redirects" | RequestFailure["kind"];
      /** Which cap, when reason is "capped". */
      capped?: Capped;
    };

/** The outcome of `GET https://<host>:<probe port>/`: any HTTP response proves HTTPS works. */
export type HttpsProbe = { ok: true } | { ok: false; failure: RequestFailure };

/** The certificate and cipher of one verified TLS handshake, as the client saw it. */
export interface TlsHandshake {
  protocol: string;
  cipher: string;
  subject: string;
  issuer: string;
  /** ISO 8601. */
  notAfter: string;
  /** Whole days until notAfter, counted when the handshake was seen. */
  daysLeft: number;
  /** node:crypto's key type ("rsa", "ec", "ed25519", …); null when unknown. */
  keyType: string | null;
  /** RSA modulus or EC curve size in bits; null when unknown. */
  keyBits: number | null;
}
