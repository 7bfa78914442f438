/**
 * All network I/O of a snapshot, in one place: the main redirect chain, the well-known file
 * probes and the HTTPS probe. Every request goes through undici `request()` on the pinned target
 * dispatcher (dialer.ts: resolves, refuses blocked addresses/ports, dials the checked address),
 * never through global fetch, which would follow redirects, decompress without a bound and
 * honour proxy settings.
 */
import { Readable } from "node:stream";
import type { Transform } from "node:stream";
import zlib from "node:zlib";
import { request } from "./undici.js";
import type { Dispatcher } from "undici";
import { USER_AGENT } from "../../version.js";
import type { CorsProbe, HttpSideProbe, PolicyFetch } from "../rules/evidence.js";
import { SnapshotError } from "../result.js";
import type {
  Chain,
  FileProbe,
  HeaderMap,
  Hop,
  HttpsProbe,
  RequestFailure,
  TlsReason,
  Undecodable,
} from "../types.js";
import { CapReachedError } from "./budget.js";
import { BlockedAddressError, findBytesRead, findConnectPhase } from "./dial-errors.js";
import { errorChain, errorCodes } from "./error-chain.js";
import {
  httpProbeUrl,
  httpsProbeUrl,
  localModeHint,
  resolveRedirect,
  withoutFragment,
} from "./url-rules.js";
import type { UrlPolicy } from "./url-rules.js";

/** docs/contract.md §4.1: bodies are never read beyond what a check needs. */
export const BODY_LIMIT = 64 * 1024;
/** Encoded bytes one decoding stage takes in before giving up on reaching BODY_LIMIT. */
const STAGE_INPUT_LIMIT = 4 * BODY_LIMIT;
/** Well-known probes follow at most this many redirects (docs/contract.md §4.5). */
const FILE_PROBE_MAX_REDIRECTS = 3;

const REQUEST_HEADERS = {
  "user-agent": USER_AGENT,
  accept: "*/*",
  "accept-encoding": "gzip, deflate, br",
};

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface FetchContext {
  /** Every request not named below: counted by the snapshot's caps after all of those
   * (budget.ts), so a new kind of request is capped without asking. */
  dispatcher: Dispatcher;
  /** The same dispatcher for the requests that come first under the caps, in this order. */
  ranked: { chain: Dispatcher; https: Dispatcher; files: Dispatcher };
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

async function get(
  url: URL,
  ctx: FetchContext,
  headers: Record<string, string> = REQUEST_HEADERS,
  dispatcher: Dispatcher = ctx.dispatcher,
): Promise<Dispatcher.ResponseData> {
  return request(url, {
    dispatcher,
    method: "GET",
    headers,
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

/** undici's SocketErrors for an answer it refused, as opposed to a connection that failed. */
const REFUSED_ANSWER_MESSAGES = new Set(["bad response", "bad upgrade"]);

function refusedAnswer(err: unknown): boolean {
  return errorChain(err).some((e) => {
    const { code, message } = e as { code?: unknown; message?: unknown };
    return code === "UND_ERR_SOCKET" && REFUSED_ANSWER_MESSAGES.has(String(message));
  });
}

/** The dialer bounds each connect with a timer whose abort reason is a TimeoutError. */
function isTimeoutError(err: unknown): boolean {
  return errorChain(err).some((e) => (e as { name?: unknown }).name === "TimeoutError");
}

/**
 * docs/contract.md §4.2: only a connection "refused or reset before any TLS or HTTP exchange"
 * makes the first request unreachable. A connection that failed before TCP was up had no
 * exchange; one that failed during the TLS handshake had one if the server had sent any
 * handshake byte; one that failed later had a completed handshake (https) or, on http, an
 * exchange if the server had sent any byte of an answer.
 */
function exchangeBegan(err: unknown, url: URL): boolean {
  const phase = findConnectPhase(err);
  if (phase === "tcp") return false;
  // Reset during the handshake: an exchange only if the server had answered our ClientHello.
  if (phase === "tls") return (findBytesRead(err) ?? 0) > 0;
  if (url.protocol === "https:") return true;
  return (findBytesRead(err) ?? 0) > 0;
}

/**
 * Turns whatever undici or the dialer threw for a request to `url` into what the snapshot needs to
 * know.
 */
function classifyError(err: unknown, ctx: FetchContext, url: URL): RequestFailure {
  const cap = errorChain(err).find((e) => e instanceof CapReachedError);
  if (cap) return { kind: "capped", limit: cap.limit, max: cap.max };
  const codes = errorCodes(err);
  const has = (...wanted: string[]) => codes.some((c) => wanted.includes(c));
  if (has("SECSNAP_BLOCKED", "SECSNAP_BLOCKED_PORT")) {
    const message = err instanceof Error ? err.message : String(err);
    // A name that resolves to this machine or its network: say how to check such a site.
    const address = errorChain(err).find((e) => e instanceof BlockedAddressError)?.address;
    const hint = address === undefined ? "" : localModeHint(ctx.policy, address);
    return { kind: "blocked", message: hint ? `${message.replace(/\.$/, "")}${hint}.` : message };
  }
  if (ctx.deadlinePassed() || isTimeoutError(err)) return { kind: "timeout" };
  for (const code of codes) {
    const reason = TLS_REASONS[code];
    if (reason) return { kind: "tls", reason, code };
  }
  if (has("ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "ENODATA", "ESERVFAIL", "ENOTIMP", "EREFUSED")) {
    return { kind: "dns" };
  }
  if (has("ECONNREFUSED")) return { kind: "refused" };
  // undici closes the connection itself on an answer it will not take (a protocol switch we
  // did not ask for, bytes when no request is waiting), or fails an internal assertion on
  // one (a status code below 100): an invalid HTTP answer, not a connection that broke.
  if (has("ERR_ASSERTION") || refusedAnswer(err)) return { kind: "protocol", code: undefined };
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

function isBlockedRedirect(err: unknown): err is SnapshotError {
  return err instanceof SnapshotError && err.errorType === "ssrf";
}

/** A chain whose final answer's body may have been kept for reading. */
export interface FetchedChain extends Chain {
  /** The final answer's decoded body (≤ 64 KiB) when `wantBody` asked for it; null if not
   * kept, or when it could not be read or decoded. Settles by the snapshot's signal at latest. */
  finalBody: Promise<Buffer | null> | null;
}

/**
 * The main chain: GET, follow at most `maxRedirects` redirects by hand, each Location resolved
 * and re-validated like the input. A blocked hop (by URL rules or by the dialer) throws
 * SnapshotError("ssrf"); every other problem is recorded in the returned chain. `onUrl` is told
 * of every URL as soon as it is requested, so the caller can start work on that origin early.
 * The final answer's body is read (bounded, decoded) when `wantBody(hop)` says so, else drained.
 */
export async function fetchChain(
  input: URL,
  maxRedirects: number,
  ctx: FetchContext,
  onUrl: (url: URL, index: number) => void = () => undefined,
  wantBody: (hop: Hop) => boolean = () => false,
): Promise<FetchedChain> {
  const hops: Hop[] = [];
  let url = withoutFragment(input);
  for (let index = 0; ; index++) {
    const answer = get(url, ctx, REQUEST_HEADERS, ctx.ranked.chain);
    // Told after the request is on its way, so the chain's connection to a new origin is dialled
    // first: the full TLS handshake that the probes started now may resume (dialer.ts).
    onUrl(url, index);
    let res: Dispatcher.ResponseData;
    try {
      res = await answer;
    } catch (err) {
      const failure = classifyError(err, ctx, url);
      if (failure.kind === "blocked")
        throw new SnapshotError("ssrf", failure.message, ctx.requestedUrl);
      const previous = hops[hops.length - 1];
      if (failure.kind === "capped" && previous) {
        // Our cap stopped the next hop: like the redirect cap, the chain ends at the last URL
        // requested, whose redirect was not followed (docs/snapshot-engine.md "Per-snapshot caps").
        const last = new URL(previous.url);
        return {
          hops,
          finalUrl: last,
          redirectCount: index - 1,
          final: null,
          failure,
          finalBody: null,
        };
      }
      return { hops, finalUrl: url, redirectCount: index, final: null, failure, finalBody: null };
    }
    const hop: Hop = {
      url: url.href,
      status: res.statusCode,
      headers: toHeaderMap(res.headers),
      readAt: new Date().toISOString(),
    };
    hops.push(hop);
    const location = lastHeader(hop.headers, "location");
    if (!REDIRECT_STATUSES.has(hop.status) || location === undefined) {
      const finalBody = wantBody(hop) ? readWholeBody(res, hop.headers) : null;
      if (!finalBody) discard(res, ctx);
      return { hops, finalUrl: url, redirectCount: index, final: hop, failure: null, finalBody };
    }
    discard(res, ctx);
    if (index >= maxRedirects) {
      return {
        hops,
        finalUrl: url,
        redirectCount: index,
        final: null,
        failure: { kind: "redirect_cap", max: maxRedirects },
        finalBody: null,
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

/**
 * Content codings decoded in one body. Real servers send one (two when a proxy compresses
 * again); every coding costs a decoder, so a longer chain is refused before any is built.
 */
const MAX_CODINGS = 2;

const DECODABLE = new Set(["gzip", "x-gzip", "deflate", "br"]);

/** One zlib decoder per Content-Encoding token (a token in DECODABLE). */
function decoderFor(coding: string): Transform {
  // Lenient flushing: a stream that ends early is decoded as far as it goes (see readBody).
  const lenient = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
  if (coding === "br") {
    return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
  }
  // "deflate" is the zlib format (RFC 9110 §8.4.1.2); unzip also takes gzip, raw deflate is
  // refused.
  return coding === "deflate" ? zlib.createUnzip(lenient) : zlib.createGunzip(lenient);
}

/** A body as far as it was read, or why its content coding could not be decoded. */
type BodyRead = { ok: true; body: Buffer } | { ok: false; undecodable: Undecodable };

/**
 * Reads at most `limit` DECODED bytes of a body, decoding `encodings` (outermost last, as in
 * Content-Encoding) with node:zlib streams, and destroys everything as soon as the limit is
 * reached — so a gzip bomb, a 50 MB or an endless body costs at most `limit` bytes of memory.
 *
 * Every decoding stage takes in at most STAGE_INPUT_LIMIT bytes, the body itself as well as
 * what an inner stage gets from an outer one, so no stage of a chain expands without bound.
 * A body cut off at one of our limits, or one whose coding simply ends early (the message was
 * complete, the compressed stream was not), is decoded as far as it goes. A coding we do not
 * know, a chain longer than MAX_CODINGS, or bytes a decoder rejects are `undecodable`. A body
 * that breaks off in transit (reset, deadline) rejects, as the source does.
 */
export async function readBody(
  source: Readable,
  encodings: readonly string[],
  limit = BODY_LIMIT,
  /** How many codings the header listed, when `encodings` holds only the first few. */
  listed = encodings.length,
): Promise<BodyRead> {
  const codings = encodings.filter((e) => e !== "" && e !== "identity");
  const refuse = (undecodable: Undecodable): BodyRead => {
    drop(source);
    return { ok: false, undecodable };
  };
  if (codings.length > MAX_CODINGS) {
    return refuse({
      why: "too_many_codings",
      count: Math.max(codings.length, listed),
      max: MAX_CODINGS,
    });
  }
  const unknown = codings.find((c) => !DECODABLE.has(c));
  if (unknown !== undefined) return refuse({ why: "unsupported_coding", coding: unknown });

  const order = [...codings].reverse();
  const stages: Readable[] = [source, ...order.map(decoderFor)];
  const out = stages[stages.length - 1] as Readable;
  // The stage that failed first says what went wrong (the network or a coding); its error
  // also ends the read, whichever stage it came from.
  let firstFailure: number | "source" | undefined;
  const onError = stages.map((_, i) => (err: Error) => {
    firstFailure ??= i === 0 ? "source" : i - 1;
    if (i < stages.length - 1) out.destroy(err);
  });
  stages.forEach((stage, i) => stage.on("error", onError[i] as (err: Error) => void));
  /** Lets go of a stage without hearing its error (undici bodies say AbortError). */
  const release = (i: number) => {
    const stage = stages[i] as Readable;
    stage.off("error", onError[i] as (err: Error) => void);
    drop(stage);
  };
  for (let i = 0; i + 1 < stages.length; i++) {
    const input = stages[i] as Readable;
    const next = stages[i + 1] as Transform;
    input.pipe(next);
    // Each stage takes in at most STAGE_INPUT_LIMIT bytes; then its input is ended as if the
    // body had ended there, so the stages after it still hand over what they decoded.
    // (Added after pipe(): the chunk that crosses the limit is written before the end.)
    let taken = 0;
    input.on("data", (chunk: Buffer) => {
      taken += chunk.length;
      if (taken <= STAGE_INPUT_LIMIT) return;
      input.unpipe(next);
      next.end();
      for (let j = 0; j <= i; j++) release(j);
    });
  }

  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of out as AsyncIterable<Buffer>) {
      const take = Math.min(chunk.length, limit - total);
      chunks.push(take === chunk.length ? chunk : chunk.subarray(0, take));
      total += take;
      if (total >= limit) break; // leaving the loop destroys the last stage
    }
  } catch (err) {
    if (typeof firstFailure !== "number") throw err;
    return { ok: false, undecodable: { why: "corrupt", coding: order[firstFailure] ?? "" } };
  } finally {
    stages.forEach((_, i) => release(i));
  }
  return { ok: true, body: Buffer.concat(chunks, total) };
}

/**
 * The body's content codings, outermost last, and how many the header lists. Only the first
 * MAX_CODINGS + 1 are copied out: a hostile header lists thousands, and the rest are only counted.
 */
function contentEncodings(headers: HeaderMap): { codings: string[]; listed: number } {
  const codings: string[] = [];
  let listed = 0;
  for (const value of headers["content-encoding"] ?? []) {
    for (let start = 0; start <= value.length;) {
      const comma = value.indexOf(",", start);
      const end = comma < 0 ? value.length : comma;
      if (codings.length <= MAX_CODINGS) {
        const token = value.slice(start, end).trim().toLowerCase();
        if (token !== "" && token !== "identity") codings.push(token);
      } else if (!isBlank(value, start, end)) {
        listed++;
      }
      start = end + 1;
    }
  }
  return { codings, listed: listed + codings.length };
}

function isBlank(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09) return false;
  }
  return true;
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
      res = await get(url, ctx, REQUEST_HEADERS, ctx.ranked.files);
    } catch (err) {
      const failure = classifyError(err, ctx, url);
      if (failure.kind === "capped") {
        const { limit, max } = failure;
        return { kind: "failed", url: url.href, reason: "capped", capped: { limit, max } };
      }
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
    const answer = {
      kind: "response",
      url: url.href,
      status: res.statusCode,
      contentType,
    } as const;
    if (res.statusCode !== 200) {
      discard(res, ctx);
      return { ...answer, body: null };
    }
    try {
      const { codings, listed } = contentEncodings(headers);
      let read = await readBody(res.body, codings, BODY_LIMIT, listed);
      // A sitemap.xml.gz-style file served without Content-Encoding: recognise gzip by its magic.
      if (opts.gunzipByMagic && read.ok && read.body[0] === 0x1f && read.body[1] === 0x8b) {
        read = await readBody(Readable.from([read.body]), ["gzip"]);
      }
      return read.ok
        ? { ...answer, body: read.body }
        : { ...answer, body: null, undecodable: read.undecodable };
    } catch {
      // The body broke off in transit (reset, deadline): it could not be read.
      return { ...answer, body: null };
    }
  }
}

/** The body of `res`, decoded and bounded as readBody does; null if it cannot be read. */
function readWholeBody(res: Dispatcher.ResponseData, headers: HeaderMap): Promise<Buffer | null> {
  const { codings, listed } = contentEncodings(headers);
  return readBody(res.body, codings, BODY_LIMIT, listed).then(
    (read) => (read.ok ? read.body : null),
    () => null,
  );
}

/**
 * The CORS probe: `url` asked once more with a made-up `Origin`, on the snapshot's dispatcher
 * (same SSRF rules, same deadline). Never throws; the body is discarded.
 */
export async function probeCors(url: URL, origin: string, ctx: FetchContext): Promise<CorsProbe> {
  try {
    const res = await get(url, ctx, { ...REQUEST_HEADERS, origin });
    discard(res, ctx);
    return { kind: "response", origin, status: res.statusCode, headers: toHeaderMap(res.headers) };
  } catch {
    return { kind: "failed" };
  }
}

/** The answer of a first request to an http URL, in the terms of the http-side judge. */
export function httpSideOf(hop: Hop): HttpSideProbe {
  const location = lastHeader(hop.headers, "location");
  return REDIRECT_STATUSES.has(hop.status) && location !== undefined
    ? { kind: "redirect", url: hop.url, status: hop.status, location }
    : { kind: "response", url: hop.url, status: hop.status };
}

/**
 * `GET http://<host>:<port>/`, one request, redirects not followed, on the snapshot's dispatcher
 * (a blocked address or port is a "blocked" failure: not probed). Never throws.
 */
export async function probeHttpSide(
  hostname: string,
  port: number,
  ctx: FetchContext,
): Promise<HttpSideProbe> {
  const url = httpProbeUrl(hostname, port);
  if (!ctx.policy.allowedPorts.has(port)) {
    return { kind: "failed", failure: { kind: "blocked", message: `port ${port} is not allowed` } };
  }
  try {
    const res = await get(url, ctx);
    discard(res, ctx);
    return httpSideOf({ url: url.href, status: res.statusCode, headers: toHeaderMap(res.headers) });
  } catch (err) {
    return { kind: "failed", failure: classifyError(err, ctx, url) };
  }
}

/** `GET https://<host>:<port>/`: any HTTP response after a valid handshake proves HTTPS. */
export async function probeHttps(
  hostname: string,
  port: number,
  ctx: FetchContext,
): Promise<HttpsProbe> {
  const url = httpsProbeUrl(hostname, port);
  if (!ctx.policy.allowedPorts.has(port)) {
    return { ok: false, failure: { kind: "blocked", message: `port ${port} is not allowed` } };
  }
  try {
    const res = await get(url, ctx, REQUEST_HEADERS, ctx.ranked.https);
    discard(res, ctx);
    return { ok: true };
  } catch (err) {
    return { ok: false, failure: classifyError(err, ctx, url) };
  }
}

/**
 * The MTA-STS policy of `domain` (RFC 8461 §3.3): `GET https://mta-sts.<domain>/.well-known/
 * mta-sts.txt` on `port` (443 in production), one request, redirects not followed, on the
 * snapshot's dispatcher (SSRF rules, caps, deadline); the body read (bounded) for a 200 only.
 * Never throws.
 */
export async function fetchMtaStsPolicy(
  domain: string,
  port: number,
  ctx: FetchContext,
): Promise<PolicyFetch> {
  const url = new URL(`https://mta-sts.${domain}:${port}/.well-known/mta-sts.txt`);
  if (!ctx.policy.allowedPorts.has(port)) {
    return { kind: "failed", failure: { kind: "blocked", message: `port ${port} is not allowed` } };
  }
  try {
    const res = await get(url, ctx);
    const headers = toHeaderMap(res.headers);
    const answer = { url: url.href, status: res.statusCode };
    const contentType = lastHeader(headers, "content-type");
    if (res.statusCode !== 200) {
      discard(res, ctx);
      return { kind: "response", ...answer, contentType, body: null };
    }
    // A body that breaks off (reset, deadline) fails like the request: the failure says whose.
    const { codings, listed } = contentEncodings(headers);
    const read = await readBody(res.body, codings, BODY_LIMIT, listed);
    return read.ok
      ? { kind: "response", ...answer, contentType, body: read.body }
      : { kind: "response", ...answer, contentType, body: null, undecodable: read.undecodable };
  } catch (err) {
    return { kind: "failed", failure: classifyError(err, ctx, url) };
  }
}
