/**
 * One snapshot, end to end (docs/contract.md §4): validate, fetch the chain, run the checks,
 * build the report. Speed comes from speculation: the well-known probes of the input origin
 * (and of the first redirect targets) and the HTTPS probe of an http input start together with
 * the main request, are reused when the final origin/host turns out the same, and whatever is
 * left unused is cancelled when the snapshot ends. Each snapshot has its own dispatcher: its
 * requests share keep-alive connections, every connect knows the snapshot's deadline and
 * signal, and all its connections are closed when it ends. One deadline covers everything.
 */
import { setMaxListeners } from "node:events";
import type { SnapshotConfig } from "../config.js";
import { checkHeaders } from "./checks/headers.js";
import type { HeaderPresence } from "./checks/headers.js";
import { checkHttps } from "./checks/https.js";
import type { HttpsVerdict } from "./checks/https.js";
import { ROBOTS_TXT_PATH, checkRobotsTxt } from "./checks/robots-txt.js";
import {
  SECURITY_TXT_PATHS,
  checkSecurityTxt,
  needsSecondLocation,
} from "./checks/security-txt.js";
import { SITEMAP_XML_PATH, checkSitemapXml } from "./checks/sitemap-xml.js";
import type { FileVerdicts } from "./checks/well-known.js";
import { createTargetDispatcher } from "./dialer.js";
import { fetchChain, probeFile, probeHttps } from "./fetch.js";
import type { FetchContext } from "./fetch.js";
import { judge } from "./findings/index.js";
import { snapshotNotes } from "./notes.js";
import { createResolver, shareAnswers } from "./resolver.js";
import type { ResolveHost } from "./resolver.js";
import { SnapshotError, buildReport } from "./result.js";
import type { SnapshotResult } from "./result.js";
import { requestFailureOf } from "./types.js";
import type { Chain, FileProbe, HttpsProbe, RequestFailure } from "./types.js";
import {
  createUrlPolicy,
  effectivePort,
  httpsProbeUrl,
  normalizeUrl,
  parseInputUrl,
} from "./url-rules.js";
import type { UrlPolicy } from "./url-rules.js";

export interface EngineOptions extends SnapshotConfig {
  /** Port of the HTTPS probe for http final URLs; 443 in production, overridable by tests. */
  httpsProbePort?: number;
}

export interface SnapshotEngine {
  /** Validates (docs/contract.md §3, throws SnapshotError) and runs one snapshot; rejects only
   * with SnapshotError. */
  snapshot(rawUrl: string, options?: SnapshotOptions): Promise<SnapshotResult>;
  close(): Promise<void>;
}

export interface SnapshotOptions {
  /** Ends the snapshot early when whoever asked for it has gone (a client that hung up). */
  signal?: AbortSignal;
}

/** Redirect targets whose origin gets speculative well-known probes (input = hop 0). */
const EARLY_PROBE_HOPS = 2;

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

/** An https hop on `hostname`:`port` that answered already proves HTTPS; no probe needed. */
function httpsProvenByChain(chain: Chain, hostname: string, port: number): boolean {
  return chain.hops.some((h) => {
    const u = new URL(h.url);
    return u.protocol === "https:" && u.hostname === hostname && effectivePort(u) === port;
  });
}

/** One running snapshot: its deadline, its connections and its probes, shared by its steps. */
interface Session {
  ctx: FetchContext;
  probePort: number;
  /** The well-known files of an origin, probed at most once per snapshot. */
  filesFor(url: URL): Promise<FileVerdicts>;
  /** The HTTPS probe of a host, sent at most once per snapshot. */
  httpsFor(hostname: string): Promise<HttpsProbe>;
  /** Cancels what is still running and closes the snapshot's connections. */
  end(): void;
}

interface SessionOptions {
  rawUrl: string;
  caller: AbortSignal | undefined;
  policy: UrlPolicy;
  resolve: ResolveHost;
  options: EngineOptions;
}

function openSession({ rawUrl, caller, policy, resolve, options }: SessionOptions): Session {
  const deadline = new AbortController();
  const done = new AbortController();
  const deadlineAt = Date.now() + options.timeoutMs;
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
  const signal = AbortSignal.any([deadline.signal, done.signal, ...(caller ? [caller] : [])]);
  // Every request and connect of the snapshot listens on this one signal; a redirect chain
  // with its speculative probes can have more than Node's default 10 in flight (not a leak).
  setMaxListeners(256, signal);
  // Each connect gets the time left and the signal; destroying the dispatcher at the end
  // closes all the snapshot's connections (no idle socket outlives it).
  const dispatcher = createTargetDispatcher({
    resolve,
    isBlockedAddress: policy.isBlockedAddress,
    allowedPorts: options.allowedPorts,
    connectTimeoutMs: options.timeoutMs,
    deadline: deadlineAt,
    signal,
  });
  const ctx: FetchContext = {
    dispatcher,
    policy,
    signal,
    deadlinePassed: () => deadline.signal.aborted,
    requestedUrl: rawUrl,
    timeoutMs: options.timeoutMs,
  };
  const probePort = options.httpsProbePort ?? 443;
  const filesByOrigin = new Map<string, Promise<FileVerdicts>>();
  const httpsByHost = new Map<string, Promise<HttpsProbe>>();
  return {
    ctx,
    probePort,
    filesFor(url) {
      let p = filesByOrigin.get(url.origin);
      if (!p) filesByOrigin.set(url.origin, (p = probeWellKnown(new URL(url.origin), ctx)));
      return p;
    },
    httpsFor(hostname) {
      let p = httpsByHost.get(hostname);
      if (!p) httpsByHost.set(hostname, (p = probeHttps(hostname, probePort, ctx)));
      return p;
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

/** The main chain, starting the probes of its first origins as soon as they are known. */
function followChain(input: URL, maxRedirects: number, session: Session): Promise<Chain> {
  return fetchChain(input, maxRedirects, session.ctx, (url, index) => {
    if (index <= EARLY_PROBE_HOPS) void session.filesFor(url);
    if (index === 0 && url.protocol === "http:") void session.httpsFor(url.hostname);
  });
}

interface Verdicts {
  headers: HeaderPresence;
  https: HttpsVerdict;
  /** null when the site was not reachable. */
  files: FileVerdicts | null;
}

/** The checks of a finished chain: headers of its final answer, HTTPS, the final origin's files. */
async function runChecks(chain: Chain, session: Session): Promise<Verdicts> {
  const { finalUrl } = chain;
  const isHttpFinal = finalUrl.protocol === "http:";
  const needProbe = isHttpFinal && !httpsProvenByChain(chain, finalUrl.hostname, session.probePort);
  const [files, probe] = await Promise.all([
    chain.final !== null ? session.filesFor(finalUrl) : null,
    needProbe ? session.httpsFor(finalUrl.hostname) : null,
  ]);
  const https = checkHttps({
    finalUrl,
    finalAnswered: chain.final !== null || chain.failure?.kind === "redirect_cap",
    finalFailure: requestFailureOf(chain),
    probe: isHttpFinal && !needProbe ? { ok: true } : probe,
    probeUrl: httpsProbeUrl(finalUrl.hostname, session.probePort).href,
  });
  return { headers: checkHeaders(chain.final?.headers ?? null), https, files };
}

export function createSnapshotEngine(options: EngineOptions): SnapshotEngine {
  const policy = createUrlPolicy(options);
  const resolve = shareAnswers(
    createResolver(options.dnsServers, { timeoutMs: options.timeoutMs }),
  );

  async function run(rawUrl: string, caller?: AbortSignal): Promise<SnapshotResult> {
    const input = parseInputUrl(rawUrl, policy);
    const session = openSession({ rawUrl, caller, policy, resolve, options });
    const fetchedAt = new Date().toISOString();
    try {
      const chain = await followChain(input, options.maxRedirects, session);
      refuseUnansweredFirstRequest(chain);
      const { headers, https, files } = await runChecks(chain, session);
      const findings = judge({
        input,
        chain,
        httpsOk: https.ok,
        page: null,
        cors: null,
        httpSide: null,
        https,
        files,
      });
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
        snapshotNotes({ chain, headers, https, files }, findings),
        findings,
      );
    } finally {
      session.end();
    }
  }

  let closed = false;
  const running = new Set<Promise<unknown>>();
  return {
    async snapshot(rawUrl: string, snapshotOptions: SnapshotOptions = {}): Promise<SnapshotResult> {
      if (closed)
        throw new SnapshotError("unreachable", "The snapshot engine is shut down.", rawUrl);
      const work = run(rawUrl, snapshotOptions.signal);
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
