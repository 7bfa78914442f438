/**
 * All network I/O of a snapshot, in one place: the main redirect chain, the well-known file
 * probes and the HTTPS probe. Every request goes through undici `request()` on the pinned target
 * dispatcher (dialer.ts: resolves, refuses blocked addresses/ports, dials the checked address),
 * never through global fetch, which would follow redirects, decompress without a bound and
 * honour proxy settings.
 */
import { Readable, pipeline } from "node:stream";
import type { Transform } from "node:stream";
import zlib from "node:zlib";
import { request } from "undici";
import type { Dispatcher } from "undici";
import { USER_AGENT } from "../version.js";
import { SnapshotError } from "./result.js";
import type {
  Chain,
  FileProbe,
  HeaderMap,
  Hop,
  HttpsProbe,
  RequestFailure,
  TlsReason,
} from "./types.js";
import { findBytesRead, findConnectPhase, findErrorCodes } from "./dialer.js";
import { resolveRedirect } from "./url-rules.js";
import type { UrlPolicy } from "./url-rules.js";

/** SPEC §3: bodies are never read beyond what a check needs. */
export const BODY_LIMIT = 64 * 1024;
/** Compressed bytes read before giving up on reaching BODY_LIMIT decoded bytes. */
const RAW_BODY_LIMIT = 4 * BODY_LIMIT;
/** Well-known probes follow at most this many redirects (SPEC §3). */
export const FILE_PROBE_MAX_REDIRECTS = 3;

const REQUEST_HEADERS = {
  "user-agent": USER_AGENT,
  accept: "*/*",
  "accept-encoding": "gzip, deflate, br",
};

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface FetchContext {
  dispatcher: Dispatcher;
  policy: UrlPolicy;
  /** Aborts on the snapshot deadline or when the snapshot no longer needs the request. */
  signal: AbortSignal;
  /** True once the snapshot deadline has passed (to tell a timeout from a cancellation). */
  deadlinePassed(): boolean;
  /** The user's input, for SnapshotErrors raised while following redirects. */
  requestedUrl: string;
  /** Upper bound for undici's own header/body timers; the signal is what really ends requests. */
  timeoutMs: number;
}

function toHeaderMap(raw: Record<string, string | string[] | undefined>): HeaderMap {
  const out: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value : [value];
  }
  return out;
}

function lastHeader(headers: HeaderMap, name: string): string | undefined {
  const values = headers[name];
  return values?.[values.length - 1];
}

async function get(url: URL, ctx: FetchContext): Promise<Dispatcher.ResponseData> {
  return request(url, {
    dispatcher: ctx.dispatcher,
    method: "GET",
    headers: REQUEST_HEADERS,
    signal: ctx.signal,
    headersTimeout: ctx.timeoutMs + 1000,
    bodyTimeout: ctx.timeoutMs + 1000,
  });
}

/**
 * Lets go of a body we do not need. Small bodies are drained so the keep-alive connection can
 * serve the next request; anything larger than the limit (or still running when the snapshot
 * ends) is cut off and its connection closed. Not awaited: nobody waits for a body nobody reads.
 */
function discard(res: Dispatcher.ResponseData, ctx: FetchContext): void {
  res.body.dump({ limit: BODY_LIMIT, signal: ctx.signal }).catch(() => undefined);
}

function errorNames(err: unknown): string[] {
  const names: string[] = [];
  for (let e = err, depth = 0; typeof e === "object" && e !== null && depth < 10; depth++) {
    names.push(String((e as { name?: unknown }).name));
    e = (e as { cause?: unknown }).cause;
  }
  return names;
}

const TLS_REASONS: Record<string, TlsReason> = {
  CERT_HAS_EXPIRED: "expired",
  CERT_NOT_YET_VALID: "not_yet_valid",
  ERR_TLS_CERT_ALTNAME_INVALID: "wrong_name",
  DEPTH_ZERO_SELF_SIGNED_CERT: "self_signed",
  SELF_SIGNED_CERT_IN_CHAIN: "untrusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "untrusted",
  UNABLE_TO_GET_ISSUER_CERT: "untrusted",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "untrusted",
  CERT_UNTRUSTED: "untrusted",
  CERT_SIGNATURE_FAILURE: "untrusted",
  CERT_REJECTED: "untrusted",
  INVALID_CA: "untrusted",
};

/**
 * SPEC §3: only a connection "refused or reset before any TLS or HTTP exchange" makes the first
 * request unreachable. A connection that failed before TCP was up had no exchange; one that
 * failed during the TLS handshake had one if the server had sent any handshake byte; one that
 * failed later had a completed handshake (https) or, on http, an exchange if the server had sent
 * any byte of an answer.
 */
function exchangeBegan(err: unknown, url: URL): boolean {
  const phase = findConnectPhase(err);
  if (phase === "tcp") return false;
  // Reset during the handshake: an exchange only if the server had answered our ClientHello.
  if (phase === "tls") return (findBytesRead(err) ?? 0) > 0;
  if (url.protocol === "https:") return true;
  return (findBytesRead(err) ?? 0) > 0;
}

/** Turns whatever undici or the dialer threw for a request to `url` into what the snapshot needs to know. */
export function classifyError(err: unknown, ctx: FetchContext, url: URL): RequestFailure {
  const codes = findErrorCodes(err);
  const has = (...wanted: string[]) => codes.some((c) => wanted.includes(c));
  if (has("SECSNAP_BLOCKED", "SECSNAP_BLOCKED_PORT")) {
    return { kind: "blocked", message: err instanceof Error ? err.message : String(err) };
  }
  // The dialer bounds each connect with AbortSignal.timeout, whose reason is a TimeoutError.
  if (ctx.deadlinePassed() || errorNames(err).includes("TimeoutError")) return { kind: "timeout" };
  for (const code of codes) {
    const reason = TLS_REASONS[code];
    if (reason) return { kind: "tls", reason, code };
  }
  if (has("ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "ENODATA", "ESERVFAIL", "ENOTIMP", "EREFUSED")) {
    return { kind: "dns" };
  }
  if (has("ECONNREFUSED")) return { kind: "refused" };
  // Reset, or closed without a byte of answer — also when it happens while our ClientHello is
  // unanswered: the server went away without any TLS or HTTP exchange. (A server that does
  // speak TLS and rejects us sends an alert, which is an ERR_SSL_* code below.) Closed after
  // the TLS handshake or in the middle of an answer: an exchange happened.
  if (has("ECONNRESET", "EPIPE", "UND_ERR_SOCKET")) {
    if (!exchangeBegan(err, url)) return { kind: "reset" };
    // Cut off during a handshake the server had started answering: a failed TLS handshake.
    if (findConnectPhase(err) === "tls")
      return { kind: "tls", reason: "handshake", code: codes[0] };
    return { kind: "closed" };
  }
  if (
    has("UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ETIMEDOUT")
  ) {
    return { kind: "timeout" };
  }
  const tlsCode = codes.find((c) => /^(ERR_SSL_|ERR_TLS_|EPROTO$)/.test(c));
  if (tlsCode) return { kind: "tls", reason: "handshake", code: tlsCode };
  if (has("EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "EHOSTDOWN", "ENETDOWN")) {
    return { kind: "network", code: codes[0] };
  }
  return { kind: "protocol", code: codes[0] };
}

/** A fragment is never sent, so it is no part of a URL requested (final_url, hop URLs). */
function withoutFragment(url: URL): URL {
  if (!url.href.includes("#")) return url; // (an empty fragment, "…/#", has hash "")
  const copy = new URL(url.href);
  copy.hash = "";
  return copy;
}

function isBlockedRedirect(err: unknown): err is SnapshotError {
  return err instanceof SnapshotError && err.errorType === "ssrf";
}

/**
 * The main chain: GET, follow at most `maxRedirects` redirects by hand, each Location resolved
 * and re-validated like the input. A blocked hop (by URL rules or by the dialer) throws
 * SnapshotError("ssrf"); every other problem is recorded in the returned chain. `onUrl` is told
 * of every URL before it is requested, so the caller can start work on that origin early.
 */
export async function fetchChain(
  input: URL,
  maxRedirects: number,
  ctx: FetchContext,
  onUrl: (url: URL, index: number) => void = () => undefined,
): Promise<Chain> {
  const hops: Hop[] = [];
  let url = withoutFragment(input);
  for (let index = 0; ; index++) {
    onUrl(url, index);
    let res: Dispatcher.ResponseData;
    try {
      res = await get(url, ctx);
    } catch (err) {
      const failure = classifyError(err, ctx, url);
      if (failure.kind === "blocked")
        throw new SnapshotError("ssrf", failure.message, ctx.requestedUrl);
      return { hops, finalUrl: url, redirectCount: index, final: null, failure };
    }
    const hop: Hop = { url: url.href, status: res.statusCode, headers: toHeaderMap(res.headers) };
    hops.push(hop);
    discard(res, ctx);
    const location = lastHeader(hop.headers, "location");
    if (!REDIRECT_STATUSES.has(hop.status) || location === undefined) {
      return { hops, finalUrl: url, redirectCount: index, final: hop, failure: null };
    }
    if (index >= maxRedirects) {
      return {
        hops,
        finalUrl: url,
        redirectCount: index,
        final: null,
        failure: { kind: "redirect_cap", max: maxRedirects },
      };
    }
    // Throws SnapshotError("ssrf") for a Location we must not follow (file:, blocked, …).
    url = withoutFragment(resolveRedirect(location, url, ctx.policy, ctx.requestedUrl));
  }
}

/** Destroys a stream we are done with; undici bodies emit an AbortError nobody needs to hear. */
function drop(stream: Readable | Transform): void {
  stream.on("error", () => undefined);
  stream.destroy();
}

/** One zlib decoder per Content-Encoding token; undefined for an encoding we cannot decode. */
function decoderFor(encoding: string): Transform | null | undefined {
  // Lenient flushing: a body cut off at our byte limit is still decoded as far as it goes.
  const lenient = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  switch (encoding) {
    case "":
    case "identity":
      return null;
    case "gzip":
    case "x-gzip":
      return zlib.createGunzip(lenient);
    case "deflate":
      // Servers send both zlib-wrapped and raw deflate under this name; unzip accepts gzip and
      // zlib, which covers what is seen in practice.
      return zlib.createUnzip(lenient);
    case "br":
      return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    default:
      return undefined;
  }
}

/**
 * Reads at most `limit` DECODED bytes of a body, decoding `encodings` (outermost last, as in
 * Content-Encoding) with node:zlib streams, and destroys everything as soon as the limit is
 * reached — so a gzip bomb, a 50 MB or an endless body costs at most `limit` bytes of memory.
 * Returns null for an encoding we cannot decode.
 */
export async function readBounded(
  source: Readable,
  encodings: readonly string[],
  limit = BODY_LIMIT,
): Promise<Buffer | null> {
  const decoders: Transform[] = [];
  for (const enc of [...encodings].reverse()) {
    const d = decoderFor(enc);
    if (d === undefined) {
      drop(source);
      for (const made of decoders) drop(made);
      return null;
    }
    if (d) decoders.push(d);
  }
  let rawBytes = 0;
  let rawCapped = false;
  if (decoders.length > 0) {
    // Undecoded input costs nothing to hold, but a stream that decodes to almost nothing must
    // not be read forever either. (Only here: a 'data' listener would steal plain chunks.)
    source.on("data", (chunk: Buffer) => {
      rawBytes += chunk.length;
      if (rawBytes > RAW_BODY_LIMIT) {
        rawCapped = true;
        drop(source);
      }
    });
  }
  const out: Readable =
    decoders.length === 0
      ? source
      : (pipeline([source, ...decoders], () => undefined) as unknown as Readable);

  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of out as AsyncIterable<Buffer>) {
      const take = Math.min(chunk.length, limit - total);
      chunks.push(take === chunk.length ? chunk : chunk.subarray(0, take));
      total += take;
      if (total >= limit) break; // leaving the loop destroys the stream chain
    }
  } catch (err) {
    // Our own raw cap, or a decoder choking on a truncated stream: keep what was decoded.
    if (!rawCapped && decoders.length === 0) throw err;
    if (!rawCapped && !(err as { code?: string }).code?.startsWith("Z_")) throw err;
  } finally {
    drop(source);
    for (const d of decoders) drop(d);
  }
  return Buffer.concat(chunks, total);
}

function contentEncodings(headers: HeaderMap): string[] {
  return (headers["content-encoding"] ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim().toLowerCase())
    .filter((v) => v !== "" && v !== "identity");
}

/**
 * GET `origin` + `path` for a well-known file, following at most 3 redirects (each validated
 * like a main-chain hop). Never throws: a blocked hop, a 4th redirect or a network problem is an
 * outcome the check turns into null. The body is read (bounded) only for a 200.
 */
export async function probeFile(
  origin: URL,
  path: string,
  ctx: FetchContext,
  opts: { gunzipByMagic?: boolean } = {},
): Promise<FileProbe> {
  let url = new URL(path, origin);
  for (let redirects = 0; ; redirects++) {
    let res: Dispatcher.ResponseData;
    try {
      res = await get(url, ctx);
    } catch (err) {
      const failure = classifyError(err, ctx, url);
      return { kind: "failed", url: url.href, reason: failure.kind };
    }
    const headers = toHeaderMap(res.headers);
    const location = lastHeader(headers, "location");
    if (REDIRECT_STATUSES.has(res.statusCode) && location !== undefined) {
      discard(res, ctx);
      if (redirects >= FILE_PROBE_MAX_REDIRECTS) {
        return { kind: "failed", url: url.href, reason: "too_many_redirects" };
      }
      try {
        url = resolveRedirect(location, url, ctx.policy, ctx.requestedUrl);
      } catch (err) {
        if (isBlockedRedirect(err)) return { kind: "failed", url: url.href, reason: "blocked" };
        throw err;
      }
      continue;
    }
    const contentType = lastHeader(headers, "content-type");
    if (res.statusCode !== 200) {
      discard(res, ctx);
      return { kind: "response", url: url.href, status: res.statusCode, contentType, body: null };
    }
    try {
      let body = await readBounded(res.body, contentEncodings(headers));
      // A sitemap.xml.gz-style file served without Content-Encoding: recognise gzip by its magic.
      if (opts.gunzipByMagic && body && body[0] === 0x1f && body[1] === 0x8b) {
        body = await readBounded(Readable.from([body]), ["gzip"]);
      }
      return { kind: "response", url: url.href, status: 200, contentType, body };
    } catch {
      return {
        kind: "response",
        url: url.href,
        status: 200,
        contentType,
        body: null,
        bodyFailed: true,
      };
    }
  }
}

/** `GET https://<host>:<port>/`: any HTTP response after a valid handshake proves HTTPS. */
export async function probeHttps(
  hostname: string,
  port: number,
  ctx: FetchContext,
): Promise<HttpsProbe> {
  const url = new URL("https://probe.invalid/");
  url.hostname = hostname;
  url.port = String(port);
  if (!ctx.policy.allowedPorts.has(port)) {
    return { ok: false, failure: { kind: "blocked", message: `port ${port} is not allowed` } };
  }
  try {
    const res = await get(url, ctx);
    discard(res, ctx);
    return { ok: true };
  } catch (err) {
    return { ok: false, failure: classifyError(err, ctx, url) };
  }
}
