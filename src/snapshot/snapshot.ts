/**
 * One snapshot, end to end (docs/contract.md §4): validate, fetch the chain, run the checks,
 * build the report. Speed comes from speculation: the well-known probes of an https input origin
 * (and of the first https redirect targets) start together with the main request, are reused
 * when the final origin turns out the same, and whatever is left unused is cancelled when the
 * snapshot ends. An http:// hop gets no speculation: it usually redirects to https, and its
 * files and an HTTPS probe would repeat requests the chain then makes anyway (docs/snapshot-
 * engine.md "Requests per snapshot"). Each snapshot has its own dispatcher: its
 * requests share keep-alive connections, every connect knows the snapshot's deadline and
 * signal, and all its connections are closed when it ends. One deadline covers everything.
 */
import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { DEFAULT_SNAPSHOT_CAPS, defaultSnapshotConcurrency } from "../config.js";
import type { SnapshotConfig } from "../config.js";
import { CapReachedError, SnapshotBudget, budgetedDispatchers } from "./net/budget.js";
import { checkHttps } from "./rules/https.js";
import { ROBOTS_TXT_PATH, checkRobotsTxt } from "./rules/robots-txt.js";
import { SECURITY_TXT_PATHS, checkSecurityTxt, needsSecondLocation } from "./rules/security-txt.js";
import { SITEMAP_XML_PATH, checkSitemapXml } from "./rules/sitemap-xml.js";
import { createTargetDispatcher } from "./net/dialer.js";
import type { SessionWaitOptions } from "./net/tls-sessions.js";
import { TlsFactsStore, legacyHandshake, originKey } from "./net/tls-facts.js";
import type { LegacyVersion, TlsHandshakeFacts, TlsPeer } from "./net/tls-facts.js";
import { withoutBrackets } from "./net/address-policy.js";
import {
  fetchChain,
  httpSideOf,
  probeCors,
  probeFile,
  probeHttpSide,
  probeHttps,
} from "./net/fetch.js";
import type { FetchContext, FetchedChain } from "./net/fetch.js";
import type {
  CorsProbe,
  Evidence,
  FallbackCause,
  FileVerdicts,
  HttpSideProbe,
  HttpsVerdict,
  PageEvidence,
  TlsEvidence,
  X402Challenge,
  X402Discovery,
  X402Evidence,
} from "./rules/evidence.js";
import { checkHeaders, judge, reportSections, snapshotNotes } from "./rules/index.js";
import type { HeaderPresence } from "./rules/index.js";
import { isPotentiallyTrustworthy } from "./rules/evidence.js";
import { isHtmlType, parsePage } from "./page.js";
import { paymentRequiredHeader, readBodyChallenge, readHeaderChallenge } from "./x402-challenge.js";
import {
  OPENAPI_PATH,
  X402_WELL_KNOWN_PATH,
  isWellKnownX402,
  namesPaymentInfo,
} from "./rules/x402.js";
import { headerBaseUri } from "./rules/csp.js";
import { createRecordLookup, createResolver, shareAnswers } from "./net/resolver.js";
import type { RecordLookup, ResolveHost } from "./net/resolver.js";
import { domainEvidence, startDomainLookups } from "./net/domain.js";
import type { DomainLookups } from "./net/domain.js";
import { registrableDomain } from "./rules/dns.js";
import { SnapshotError, buildReport } from "./result.js";
import type { SnapshotResult } from "./result.js";
import { requestFailureOf } from "./types.js";
import type { Chain, FileProbe, Hop, HttpsProbe, RequestFailure } from "./types.js";
import {
  createUrlPolicy,
  effectivePort,
  httpFallbackOf,
  httpsProbeUrl,
  normalizeUrl,
  parseInputUrl,
} from "./net/url-rules.js";
import type { SnapshotTarget, UrlPolicy } from "./net/url-rules.js";

/** The caps default to docs/contract.md §4.1's when a caller (a test) leaves them out. */
export interface EngineOptions
  extends
    Omit<SnapshotConfig, "maxRequests" | "maxNames" | "allowLocal">,
    Partial<Pick<SnapshotConfig, "maxRequests" | "maxNames" | "allowLocal">> {
  /** Port of the HTTPS probe for http final URLs; 443 in production, overridable by tests. */
  httpsProbePort?: number;
  /** Port of the http-side probe `http://<input host>/`; 80 in production, overridable by tests. */
  httpProbePort?: number;
  /** When a TLS connection waits for another's session (dialer.ts); overridable by tests. */
  sessionWait?: SessionWaitOptions;
  /**
   * Snapshots in flight up to which a new one speculates (default: what this machine runs at
   * once by default, SNAPSHOT_MAX_CONCURRENCY's default). Beyond it a snapshot opens its
   * connections only as it needs them (docs/snapshot-engine.md "Speculation under a crowd").
   */
  speculationLimit?: number;
}

export interface SnapshotEngine {
  /**
   * Runs one snapshot of a target parsed where the request arrived (parseSnapshotTarget), or of
   * a string it validates first (docs/contract.md §3); rejects only with SnapshotError.
   */
  snapshot(target: SnapshotTarget | string, options?: SnapshotOptions): Promise<SnapshotResult>;
  close(): Promise<void>;
}

export interface SnapshotOptions {
  /** Ends the snapshot early when whoever asked for it has gone (a client that hung up). */
  signal?: AbortSignal;
}

/** Redirect targets whose origin gets speculative well-known probes (input = hop 0). */
const EARLY_PROBE_HOPS = 2;

/**
 * How long the page, CORS and http-side evidence may still take once the checks are done: a
 * trickling body or a black-holed port 80 costs at most this, never the whole deadline.
 */
const EXTRA_GRACE_MS = 500;

/** The three well-known files of `origin`, probed and judged. */
async function probeWellKnown(origin: URL, ctx: FetchContext): Promise<FileVerdicts> {
  // probeFile never throws by contract; anything unexpected still ends as that file's null.
  const probe = (path: string, opts?: { gunzipByMagic: boolean }): Promise<FileProbe> =>
    probeFile(origin, path, ctx, opts).catch(() => ({
      kind: "failed",
      url: path,
      reason: "protocol",
    }));
  const [first, second] = SECURITY_TXT_PATHS;
  // docs/contract.md §4.5: the second security.txt location is asked only when the first
  // answers 4xx; it then goes over the keep-alive connection the first one freed.
  const security = probe(first).then(async (sec1) => ({
    sec1,
    sec2: needsSecondLocation(sec1) ? await probe(second) : null,
  }));
  const [{ sec1, sec2 }, robots, sitemap] = await Promise.all([
    security,
    probe(ROBOTS_TXT_PATH),
    probe(SITEMAP_XML_PATH, { gunzipByMagic: true }),
  ]);
  return {
    security_txt: checkSecurityTxt(sec1, sec2),
    robots_txt: checkRobotsTxt(robots),
    sitemap_xml: checkSitemapXml(sitemap),
  };
}

/**
 * docs/contract.md §4.2: a first request that got no answer is a SnapshotError when it was
 * refused, reset, unresolvable, unroutable or too slow; TLS or HTTP trouble is not (something
 * was learned: a report with reachable false).
 */
function firstRequestError(failure: RequestFailure, url: URL): SnapshotError | null {
  switch (failure.kind) {
    case "dns":
      return new SnapshotError("unreachable", `The host name ${url.hostname} does not resolve.`);
    case "refused":
      return new SnapshotError("unreachable", `The connection to ${url.host} was refused.`);
    case "reset":
      return new SnapshotError(
        "unreachable",
        `The connection to ${url.host} was closed before any response.`,
      );
    case "network":
      return new SnapshotError("unreachable", `${url.host} cannot be reached from the network.`);
    case "timeout":
      return new SnapshotError("timeout", `No response from ${url.href} before the deadline.`);
    default:
      return null;
  }
}

/** Throws the SnapshotError of a chain whose very first request got no answer, if it is one. */
function refuseUnansweredFirstRequest(chain: Chain): void {
  const failure = requestFailureOf(chain);
  if (chain.hops.length > 0 || !failure) return;
  const error = firstRequestError(failure, chain.finalUrl);
  if (error) throw error;
}

/**
 * A TLS handshake answered by bytes that are no TLS record: a server speaking plain HTTP on the
 * port (OpenSSL reads "HTTP/1.1 400" as a record of an unknown version or an absurd length).
 */
const NOT_TLS_CODES = new Set(["ERR_SSL_WRONG_VERSION_NUMBER", "ERR_SSL_PACKET_LENGTH_TOO_LONG"]);

function speaksNoTls(failure: RequestFailure): boolean {
  return failure.kind === "tls" && failure.code !== undefined && NOT_TLS_CODES.has(failure.code);
}

/** An https hop on `hostname`:`port` that answered already proves HTTPS; no probe needed. */
function httpsProvenByChain(chain: Chain, hostname: string, port: number): boolean {
  return chain.hops.some((h) => {
    const u = new URL(h.url);
    return u.protocol === "https:" && u.hostname === hostname && effectivePort(u) === port;
  });
}

/** Whether TLS 1.0 and 1.1 are accepted (docs/snapshot-engine.md "TLS facts"). */
type LegacyVerdicts = Pick<TlsEvidence, "tls1_0" | "tls1_1" | "legacyStopped">;

const LEGACY_UNKNOWN: LegacyVerdicts = { tls1_0: null, tls1_1: null };
/** Not told within the time the report waits for its extra probes. */
const LEGACY_LATE: LegacyVerdicts = { ...LEGACY_UNKNOWN, legacyStopped: { kind: "timeout" } };

/** The origin whose TLS a final URL's report describes: its own, or the HTTPS probe's. */
interface TlsOrigin {
  host: string;
  port: number;
}

function tlsOriginOf(url: URL, probePort: number): TlsOrigin {
  // As the dialer names it: the SNI name (no trailing dot) or the IP literal.
  const host = withoutBrackets(url.hostname).replace(/\.$/, "");
  return url.protocol === "https:" ? { host, port: effectivePort(url) } : { host, port: probePort };
}

/** One running snapshot: its deadline, its connections and its probes, shared by its steps. */
interface Session {
  ctx: FetchContext;
  probePort: number;
  /** The well-known files of an origin, probed at most once per snapshot. */
  filesFor(url: URL): Promise<FileVerdicts>;
  /** The HTTPS probe of a host, sent at most once per snapshot. */
  httpsFor(hostname: string): Promise<HttpsProbe>;
  /** The HTTPS probe's answer, already known from the chain (no request sent for it). */
  httpsKnown(hostname: string, probe: HttpsProbe): void;
  /** Port of the http-side probe. */
  httpPort: number;
  /** `GET http://<host>:<httpPort>/` (no redirect followed), sent at most once per snapshot. */
  httpSideFor(hostname: string): Promise<HttpSideProbe>;
  /** A URL asked again with a made-up `Origin`, at most once per URL. */
  corsOf(url: URL): Promise<CorsProbe>;
  /** The domain lookups of a host's registrable domain, started at most once per domain;
   * null when the host has none (an IP address, a name under no public suffix). */
  domainFor(hostname: string): DomainLookups | null;
  /** The first verified handshake of each https origin the snapshot connected to. */
  tlsFacts: TlsFactsStore;
  /**
   * TLS 1.0 and 1.1 handshakes to an origin, at most once per snapshot, to the checked address
   * its first TCP connection reached.
   */
  legacyFor(origin: TlsOrigin): Promise<LegacyVerdicts>;
  /**
   * The chain ended on `finalUrl`: the speculative file probes of other origins are cancelled,
   * and what the caps held back for the chain goes to the requests waiting for it.
   */
  chainEnded(finalUrl: URL): void;
  /** The HTTPS probe is sent or not needed: the rest may use what is left of the caps. */
  httpsDecided(): void;
  /** Cancels what is still running and closes the snapshot's connections. */
  end(): void;
}

interface SessionOptions {
  rawUrl: string;
  caller: AbortSignal | undefined;
  policy: UrlPolicy;
  resolve: ResolveHost;
  records: RecordLookup;
  options: EngineOptions;
}

function openSession({
  rawUrl,
  caller,
  policy,
  resolve,
  records,
  options,
}: SessionOptions): Session {
  const deadline = new AbortController();
  const done = new AbortController();
  const deadlineAt = Date.now() + options.timeoutMs;
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
  const signal = AbortSignal.any([deadline.signal, done.signal, ...(caller ? [caller] : [])]);
  // Every request and connect of the snapshot listens on this one signal; a redirect chain
  // with its speculative probes can have more than Node's default 10 in flight (not a leak).
  setMaxListeners(256, signal);
  // Every request of the snapshot is admitted by its caps (docs/contract.md §4.1) on its way
  // to the one dispatcher; the chain can make at most maxRedirects + 1 requests.
  const budget = new SnapshotBudget(
    {
      maxRequests: options.maxRequests ?? DEFAULT_SNAPSHOT_CAPS.maxRequests,
      maxNames: options.maxNames ?? DEFAULT_SNAPSHOT_CAPS.maxNames,
    },
    options.maxRedirects + 1,
    signal,
  );
  const tlsFacts = new TlsFactsStore();
  // Each connect gets the time left and the signal; destroying the dispatcher at the end
  // closes all the snapshot's connections (no idle socket outlives it).
  const dispatcher = createTargetDispatcher({
    tlsFacts,
    resolve,
    isBlockedAddress: policy.isBlockedAddress,
    // The policy's: local mode opens every port (url-rules.ts).
    allowedPorts: policy.allowedPorts,
    connectTimeoutMs: options.timeoutMs,
    deadline: deadlineAt,
    signal,
    budget,
    ...(options.sessionWait ? { sessionWait: options.sessionWait } : {}),
  });
  // The raw dispatcher stays here: the fetch layer only gets the views that count.
  const views = budgetedDispatchers(dispatcher, budget);
  const ctx: FetchContext = {
    dispatcher: views.other,
    ranked: { chain: views.chain, https: views.https, files: views.files },
    policy,
    signal,
    deadlinePassed: () => deadline.signal.aborted,
    requestedUrl: rawUrl,
    timeoutMs: options.timeoutMs,
  };
  const probePort = options.httpsProbePort ?? 443;
  const httpPort = options.httpProbePort ?? 80;
  const filesByOrigin = new Map<string, Promise<FileVerdicts>>();
  // Each origin's file probes can be cancelled alone: those of an origin the chain only passed
  // through are not needed once it has ended, and must not use the caps the final one needs.
  const filesCancel = new Map<string, AbortController>();
  const httpsByHost = new Map<string, Promise<HttpsProbe>>();
  const httpSideByHost = new Map<string, Promise<HttpSideProbe>>();
  // One made-up origin per snapshot (docs/snapshot-engine.md "CORS probe").
  const corsOrigin = `https://${randomBytes(6).toString("hex")}.invalid`;
  const corsByUrl = new Map<string, Promise<CorsProbe>>();
  const domains = new Map<string, DomainLookups>();
  const legacyByOrigin = new Map<string, Promise<LegacyVerdicts>>();
  // Those of an origin that turns out not to be the final one are cancelled with the chain.
  const legacyCancel = new Map<string, AbortController>();
  const legacyOne = async (
    peer: TlsPeer,
    host: string,
    version: LegacyVersion,
    own: AbortSignal,
    ready: Promise<TlsPeer | null>,
  ): Promise<boolean | CapReachedError | null> => {
    try {
      // Each handshake counts as a request of the lowest class (docs/snapshot-engine.md).
      await budget.admitExtra(host, own);
    } catch (err) {
      return err instanceof CapReachedError ? err : null;
    }
    return legacyHandshake(peer, version, deadlineAt - Date.now(), own, ready);
  };
  return {
    ctx,
    tlsFacts,
    legacyFor({ host, port }) {
      const key = originKey(host, port);
      let p = legacyByOrigin.get(key);
      if (!p) {
        const cancel = new AbortController();
        legacyCancel.set(key, cancel);
        const own = AbortSignal.any([signal, cancel.signal]);
        // Connected as soon as a checked address of the origin is reached; the ClientHellos wait
        // until its own handshake has completed verified and no handshake of the snapshot is
        // under way (docs/snapshot-engine.md "TLS facts").
        p = tlsFacts.whenReached(host, port, own).then(async (peer) => {
          if (!peer) return LEGACY_UNKNOWN;
          const ready = tlsFacts
            .whenVerified(host, port, own)
            .then(async (verified) =>
              verified !== null && (await tlsFacts.whenIdle(own)) !== null ? verified : null,
            );
          const verdicts = await Promise.all([
            legacyOne(peer, host, "TLSv1", own, ready),
            legacyOne(peer, host, "TLSv1.1", own, ready),
          ]);
          const [tls1_0, tls1_1] = verdicts.map((v) => (v instanceof CapReachedError ? null : v));
          const cap = verdicts.find((v) => v instanceof CapReachedError);
          return {
            tls1_0: tls1_0 ?? null,
            tls1_1: tls1_1 ?? null,
            ...(cap ? { legacyStopped: { kind: "capped", limit: cap.limit, max: cap.max } } : {}),
          };
        });
        legacyByOrigin.set(key, p);
      }
      return p;
    },
    probePort,
    httpPort,
    httpSideFor(hostname) {
      let p = httpSideByHost.get(hostname);
      if (!p) httpSideByHost.set(hostname, (p = probeHttpSide(hostname, httpPort, ctx)));
      return p;
    },
    corsOf(url) {
      let p = corsByUrl.get(url.href);
      if (!p) corsByUrl.set(url.href, (p = probeCors(url, corsOrigin, ctx)));
      return p;
    },
    domainFor(hostname) {
      const domain = registrableDomain(hostname);
      if (domain === null) return null;
      let lookups = domains.get(domain);
      if (!lookups)
        domains.set(domain, (lookups = startDomainLookups(domain, records, probePort, ctx)));
      return lookups;
    },
    filesFor(url) {
      let p = filesByOrigin.get(url.origin);
      if (!p) {
        const cancel = new AbortController();
        filesCancel.set(url.origin, cancel);
        const own = { ...ctx, signal: AbortSignal.any([signal, cancel.signal]) };
        filesByOrigin.set(url.origin, (p = probeWellKnown(new URL(url.origin), own)));
      }
      return p;
    },
    httpsFor(hostname) {
      let p = httpsByHost.get(hostname);
      if (!p) httpsByHost.set(hostname, (p = probeHttps(hostname, probePort, ctx)));
      return p;
    },
    httpsKnown(hostname, probe) {
      httpsByHost.set(hostname, Promise.resolve(probe));
    },
    chainEnded(finalUrl) {
      for (const [origin, cancel] of filesCancel) {
        if (origin !== finalUrl.origin) cancel.abort();
      }
      const tlsOrigin = tlsOriginOf(finalUrl, probePort);
      const tlsKey = originKey(tlsOrigin.host, tlsOrigin.port);
      for (const [key, cancel] of legacyCancel) {
        if (key !== tlsKey) cancel.abort();
      }
      budget.chainEnded();
    },
    httpsDecided() {
      budget.httpsDecided();
    },
    end() {
      clearTimeout(timer);
      // Cancels every speculative request the result did not need, and cuts unread bodies.
      done.abort();
      // Closes the snapshot's connections right after its answer is on its way, not before.
      setImmediate(() => void dispatcher.destroy().catch(() => undefined));
    },
  };
}

/** True when the main chain's first request is the http-side probe itself (sent once). */
function firstHopIsHttpSide(input: URL, httpPort: number): boolean {
  return (
    input.protocol === "http:" &&
    effectivePort(input) === httpPort &&
    input.pathname === "/" &&
    input.search === ""
  );
}

/** An HTML page whose body is worth reading (docs/snapshot-engine.md "Page evidence"). */
function isPage(hop: Hop): boolean {
  const type = hop.headers["content-type"];
  return hop.status === 200 && isHtmlType(type?.[type.length - 1]);
}

/** The final bodies read: a page's, and a 402's (it may be an x402 v1 challenge). */
function wantsBody(hop: Hop): boolean {
  return isPage(hop) || hop.status === 402;
}

/**
 * The main chain; when `speculate`, starting the file probes of its first https origins as soon
 * as they are known and the http-side probe with the first request (otherwise runChecks starts
 * what it needs). The HTTPS probe is never speculative: it is sent only for an http final URL
 * the chain did not prove, so a site that redirects to https gets no request twice.
 */
function followChain(
  input: URL,
  maxRedirects: number,
  session: Session,
  speculate: boolean,
): Promise<FetchedChain> {
  const onUrl = (url: URL, index: number) => {
    if (!speculate) return;
    // Files of an http origin are asked only when it is final (after the chain): asked early,
    // each would be a redirect to https followed by the request the https origin makes anyway.
    if (index <= EARLY_PROBE_HOPS && url.protocol === "https:") void session.filesFor(url);
    if (index === 0) void session.legacyFor(tlsOriginOf(url, session.probePort));
    // The CORS probe of an https URL among the first ones (usually the final URL) goes with its
    // request rather than one round trip after the final answer, like the well-known files.
    if (index <= EARLY_PROBE_HOPS && url.protocol === "https:") void session.corsOf(url);
    if (index === 0 && !firstHopIsHttpSide(url, session.httpPort)) {
      void session.httpSideFor(url.hostname);
    }
  };
  return fetchChain(input, maxRedirects, session.ctx, onUrl, wantsBody);
}

interface Verdicts {
  headers: HeaderPresence;
  https: HttpsVerdict;
  /** null when the site was not reachable. */
  files: FileVerdicts | null;
  /** What the findings are judged on. */
  evidence: Evidence;
}

/** The page evidence of the final body, or null when it was not read (or not readable). */
async function pageOf(chain: FetchedChain): Promise<PageEvidence | null> {
  if (chain.final === null || !isPage(chain.final)) return null;
  const body = await chain.finalBody;
  if (!body) return null;
  // The header's base-uri decides whether the page's <base> counts.
  const csp = headerBaseUri(chain.final?.headers["content-security-policy"] ?? []);
  return parsePage(new TextDecoder().decode(body), chain.finalUrl, csp);
}

/** The http-side answer: the chain's own first hop when it was that request, else the probe. */
function httpSideFrom(chain: Chain, input: URL, session: Session): Promise<HttpSideProbe> | null {
  if (!firstHopIsHttpSide(input, session.httpPort)) return session.httpSideFor(input.hostname);
  const first = chain.hops[0];
  return first ? Promise.resolve(httpSideOf(first)) : null;
}

/** A discovery document of `origin`: true when `judge` accepts its 200 body, null when unknown. */
async function discoveryFile(
  origin: URL,
  path: string,
  judge: (body: Buffer) => boolean,
  ctx: FetchContext,
): Promise<boolean | null> {
  // Ranked with every other request (docs/snapshot-engine.md "Per-snapshot caps"), not the files.
  const probe = await probeFile(origin, path, {
    ...ctx,
    ranked: { ...ctx.ranked, files: ctx.dispatcher },
  });
  if (probe.kind === "failed") return null;
  if (probe.status !== 200) return probe.status >= 500 ? null : false;
  return probe.body === null ? null : judge(probe.body);
}

/** The final origin's x402 discovery documents (docs/snapshot-engine.md "Requests per snapshot"). */
async function x402Discovery(finalUrl: URL, ctx: FetchContext): Promise<X402Discovery> {
  const origin = new URL(finalUrl.origin);
  const [wellKnown, openApi] = await Promise.all([
    discoveryFile(origin, X402_WELL_KNOWN_PATH, isWellKnownX402, ctx),
    discoveryFile(origin, OPENAPI_PATH, namesPaymentInfo, ctx),
  ]);
  return { wellKnown, openApi };
}

/** Not told within the time the report waits for its extra probes. */
const DISCOVERY_LATE: X402Discovery = { wellKnown: null, openApi: null };

/** The x402 challenges of a final 402 answer, and its origin's discovery documents. */
interface X402Reads {
  header: Promise<X402Challenge | null>;
  /** Waits for the body, which may trickle: the header's challenge does not. */
  body: Promise<X402Challenge | null>;
  discovery: Promise<X402Discovery | null>;
}

/**
 * The discovery documents are asked only once a challenge is read (the header's first): a site
 * that does not answer with one gets no request more.
 */
function x402Of(chain: FetchedChain, ctx: FetchContext): X402Reads | null {
  const { final } = chain;
  if (final?.status !== 402) return null;
  // Reading never fails a snapshot: what cannot be read is no challenge.
  const header = readHeaderChallenge(final).catch(() => null);
  const body = (chain.finalBody ?? Promise.resolve(null))
    .then((b) => readBodyChallenge(final, b))
    .catch(() => null);
  const discover = () => x402Discovery(chain.finalUrl, ctx);
  const discovery = header.then((h) =>
    h !== null ? discover() : body.then((b) => (b !== null ? discover() : null)),
  );
  return { header, body, discovery };
}

function x402EvidenceOf(
  final: Hop | null,
  challenges: (X402Challenge | null)[],
  discovery: X402Discovery | null,
): X402Evidence | null {
  const read = challenges.filter((c): c is X402Challenge => c !== null);
  if (final === null || read.length === 0) return null;
  const header = paymentRequiredHeader(final);
  return {
    challenges: read,
    headerBytes: header === undefined ? null : Buffer.byteLength(header),
    discovery,
  };
}

/** Each of `extras` as settled within `ms` from now, else its `late` value. */
async function settleWithin<T extends unknown[]>(
  ms: number,
  extras: { [K in keyof T]: [Promise<T[K]> | null, T[K]] },
): Promise<{ [K in keyof T]: T[K] | null }> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((r) => (timer = setTimeout(r, ms)));
  try {
    return (await Promise.all(
      extras.map(([p, late]) => (p ? Promise.race([p, grace.then(() => late)]) : null)),
    )) as { [K in keyof T]: T[K] | null };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The checks of a finished chain: headers of its final answer, HTTPS, the final origin's files;
 * then the evidence of the extra probes, which started earlier and get EXTRA_GRACE_MS at most.
 */
async function runChecks(
  chain: FetchedChain,
  input: URL,
  session: Session,
  fallback: { from: URL; because: FallbackCause } | null,
): Promise<Verdicts> {
  const { finalUrl } = chain;
  const isHttpFinal = finalUrl.protocol === "http:";
  // Local mode: a loopback site over http is a secure context for browsers; its HTTPS is not
  // judged, and port 443 (another server, if any) is not asked (docs/snapshot-engine.md).
  const secureContext =
    isHttpFinal && session.ctx.policy.allowLocal === true && isPotentiallyTrustworthy(finalUrl);
  const needProbe =
    isHttpFinal &&
    !secureContext &&
    !httpsProvenByChain(chain, finalUrl.hostname, session.probePort);
  // Under the caps the HTTPS probe comes before the files, and both before CORS and the http://
  // side (docs/snapshot-engine.md "Per-snapshot caps"); released in steps. The final origin's
  // files are asked before the chain's hold is released, so they queue ahead of an http-side
  // probe already waiting (an http origin's files were not speculated).
  const filesAsked = chain.final !== null ? session.filesFor(finalUrl) : null;
  session.chainEnded(finalUrl);
  const probeAsked = needProbe ? session.httpsFor(finalUrl.hostname) : null;
  session.httpsDecided();
  const page = pageOf(chain);
  // Every final answer is asked with a made-up Origin: a site may answer CORS only to a request
  // that carries one (docs/snapshot-engine.md "CORS probe").
  const cors = chain.final !== null ? session.corsOf(finalUrl) : null;
  const httpSide = httpSideFrom(chain, input, session);
  // The report is of the final host's domain (docs/snapshot-engine.md "The domain").
  const domain = session.domainFor(finalUrl.hostname);
  const x402 = x402Of(chain, session.ctx);
  const [files, probe] = await Promise.all([filesAsked, probeAsked]);
  const https = checkHttps({
    finalUrl,
    // The last URL requested answered when the chain ended on a redirect it did not follow.
    finalAnswered:
      chain.final !== null ||
      chain.failure?.kind === "redirect_cap" ||
      (chain.failure?.kind === "capped" && chain.hops.length > 0),
    finalFailure: requestFailureOf(chain),
    probe: isHttpFinal && !needProbe && !secureContext ? { ok: true } : probe,
    secureContext,
    probeUrl: httpsProbeUrl(finalUrl.hostname, session.probePort).href,
  });
  // The TLS the report describes: the final origin's, or the HTTPS probe's of an http one.
  const tlsOrigin = tlsOriginOf(finalUrl, session.probePort);
  const handshake = https.ok ? session.tlsFacts.of(tlsOrigin.host, tlsOrigin.port) : null;
  const legacy = handshake ? session.legacyFor(tlsOrigin) : null;
  const [
    [pageEvidence, corsProbe, httpSideProbe, legacyVerdicts, x402Header, x402Body, x402Documents],
    dns,
  ] = await Promise.all([
    settleWithin<
      [
        PageEvidence | null,
        CorsProbe,
        HttpSideProbe,
        LegacyVerdicts,
        X402Challenge | null,
        X402Challenge | null,
        X402Discovery | null,
      ]
    >(EXTRA_GRACE_MS, [
      [page, null],
      [cors, { kind: "failed" }],
      [httpSide, { kind: "failed", failure: { kind: "timeout" } }],
      [legacy, LEGACY_LATE],
      [x402?.header ?? null, null],
      [x402?.body ?? null, null],
      [x402?.discovery ?? null, DISCOVERY_LATE],
    ]),
    domain ? domainEvidence(domain, EXTRA_GRACE_MS) : null,
  ]);
  const evidence: Evidence = {
    input,
    chain,
    page: pageEvidence,
    cors: corsProbe,
    httpSide: httpSideProbe,
    https,
    files,
    tls: handshake ? tlsEvidenceOf(handshake, legacyVerdicts ?? LEGACY_UNKNOWN) : null,
    dns,
    x402: x402EvidenceOf(chain.final, [x402Header, x402Body], x402Documents),
    ...(fallback ? { fallbackFrom: fallback.from.href, fallbackBecause: fallback.because } : {}),
  };
  return { headers: checkHeaders(chain.final?.headers ?? null), https, files, evidence };
}

function tlsEvidenceOf(h: TlsHandshakeFacts, legacy: LegacyVerdicts): TlsEvidence {
  return {
    protocol: h.protocol,
    cipher: h.cipher,
    subject: h.subject,
    issuer: h.issuer,
    notAfter: h.notAfter,
    daysLeft: h.daysLeft,
    keyType: h.keyType,
    keyBits: h.keyBits,
    ...legacy,
  };
}

export function createSnapshotEngine(options: EngineOptions): SnapshotEngine {
  const policy = createUrlPolicy(options);
  const resolve = shareAnswers(
    createResolver(options.dnsServers, { timeoutMs: options.timeoutMs }),
  );

  // CAA and TXT questions go to the same servers, under the same bound (docs/contract.md §9.2).
  const records = createRecordLookup(options.dnsServers, { timeoutMs: options.timeoutMs });

  const speculationLimit = options.speculationLimit ?? defaultSnapshotConcurrency();

  /** `othersInFlight`: the engine's snapshots already running when this one starts. */
  async function run(
    target: SnapshotTarget | string,
    caller: AbortSignal | undefined,
    othersInFlight: number,
  ): Promise<SnapshotResult> {
    const rawUrl = typeof target === "string" ? target : target.raw;
    const input = typeof target === "string" ? parseInputUrl(target, policy) : target.url;
    const session = openSession({ rawUrl, caller, policy, resolve, records, options });
    const fetchedAt = new Date().toISOString();
    try {
      // The domain's records are asked as soon as the host is known, beside the chain.
      session.domainFor(input.hostname);
      const speculate = othersInFlight < speculationLimit;
      let chain = await followChain(input, options.maxRedirects, session, speculate);
      // docs/contract.md §3.2 rule 2: a scheme-less input whose https:// connection is refused,
      // or meets a server that speaks no TLS (a local dev server), is the site's http:// (the
      // report says so), not a 400 or a report of nothing.
      const failure = requestFailureOf(chain);
      const plainHttp = failure !== null && speaksNoTls(failure);
      const fallback =
        chain.hops.length === 0 && (failure?.kind === "refused" || plainHttp)
          ? httpFallbackOf(rawUrl, input, policy, {
              httpPort: session.httpPort,
              plainHttpPort: plainHttp,
            })
          : null;
      if (fallback && failure) {
        // That failure is the HTTPS probe's answer on its port: not asked twice.
        if (effectivePort(input) === session.probePort) {
          session.httpsKnown(input.hostname, { ok: false, failure });
        }
        chain = await followChain(fallback, options.maxRedirects, session, speculate);
      }
      refuseUnansweredFirstRequest(chain);
      const target = fallback ?? input;
      const { headers, https, files, evidence } = await runChecks(
        chain,
        target,
        session,
        fallback ? { from: input, because: plainHttp ? "not_tls" : "refused" } : null,
      );
      const findings = judge(evidence);
      return buildReport(
        {
          requested_url: rawUrl,
          normalized_url: normalizeUrl(input),
          final_url: chain.finalUrl.href,
          fetched_at: fetchedAt,
          reachable: chain.final !== null,
          final_status_code: chain.final ? chain.final.status : null,
          redirect_count: chain.redirectCount,
        },
        {
          https: https.ok,
          ...headers,
          security_txt: files ? files.security_txt.value : null,
          robots_txt: files ? files.robots_txt.value : null,
          sitemap_xml: files ? files.sitemap_xml.value : null,
        },
        snapshotNotes(evidence, findings),
        findings,
        reportSections(evidence),
      );
    } finally {
      session.end();
    }
  }

  let closed = false;
  const running = new Set<Promise<unknown>>();
  return {
    async snapshot(
      target: SnapshotTarget | string,
      snapshotOptions: SnapshotOptions = {},
    ): Promise<SnapshotResult> {
      const rawUrl = typeof target === "string" ? target : target.raw;
      if (closed)
        throw new SnapshotError("unreachable", "The snapshot engine is shut down.", rawUrl);
      const work = run(target, snapshotOptions.signal, running.size);
      running.add(work);
      try {
        return await work;
      } catch (err) {
        // Every SnapshotError names the input it is about, whichever step raised it.
        if (err instanceof SnapshotError) {
          if (err.requestedUrl === rawUrl) throw err;
          throw new SnapshotError(err.errorType, err.message, rawUrl);
        }
        // Not expected; the contract is SnapshotError or a result, so say what happened.
        const why = err instanceof Error ? err.message : String(err);
        throw new SnapshotError("unreachable", `The snapshot failed unexpectedly: ${why}`, rawUrl);
      } finally {
        running.delete(work);
      }
    },
    /** Refuses new snapshots and waits for the running ones, which end by their deadlines. */
    async close(): Promise<void> {
      closed = true;
      await Promise.allSettled([...running]);
    },
  };
}
