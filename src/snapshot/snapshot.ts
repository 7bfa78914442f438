/**
 * One snapshot, end to end (SPEC §3): validate, fetch the chain, run the checks, build the
 * SnapshotResult. Speed comes from speculation: the well-known probes of the input origin (and
 * of the first redirect targets) and the HTTPS probe of an http input start together with the
 * main request, are reused when the final origin/host turns out the same, and whatever is left
 * unused is cancelled when the snapshot ends. Each snapshot has its own dispatcher: its requests
 * share keep-alive connections, every connect knows the snapshot's deadline and signal, and all
 * its connections are closed when it ends. One deadline covers everything.
 */
import { setMaxListeners } from "node:events";
import type { SnapshotConfig } from "../config.js";
import { checkHeaders, headerPresenceFields } from "./checks/headers.js";
import { checkHttps } from "./checks/https.js";
import { ROBOTS_TXT_PATH, checkRobotsTxt } from "./checks/robots-txt.js";
import {
  SECURITY_TXT_PATHS,
  checkSecurityTxt,
  needsSecondLocation,
} from "./checks/security-txt.js";
import { SITEMAP_XML_PATH, checkSitemapXml } from "./checks/sitemap-xml.js";
import type { FileVerdict } from "./checks/well-known.js";
import { createAddressPolicy } from "./address-policy.js";
import { createTargetDispatcher } from "./dialer.js";
import { fetchChain, probeFile, probeHttps } from "./fetch.js";
import type { FetchContext } from "./fetch.js";
import { missingHeaderNotes, renderNotes } from "./notes.js";
import type { Note } from "./notes.js";
import { createResolver } from "./resolver.js";
import type { ResolveHost } from "./resolver.js";
import { SnapshotError, checksOf } from "./result.js";
import type { SnapshotResult } from "./result.js";
import type { Chain, FileProbe, HttpsProbe, RequestFailure } from "./types.js";
import { effectivePort, normalizeUrl, parseInputUrl } from "./url-rules.js";
import type { UrlPolicy } from "./url-rules.js";

export interface EngineOptions extends SnapshotConfig {
  /** Port of the HTTPS probe for http final URLs; 443 in production, overridable by tests. */
  httpsProbePort?: number;
}

export interface SnapshotEngine {
  /** Validates (SPEC §2, throws SnapshotError) and runs one snapshot; rejects only with SnapshotError. */
  snapshot(rawUrl: string): Promise<SnapshotResult>;
  close(): Promise<void>;
}

/** Redirect targets whose origin gets speculative well-known probes (input = hop 0). */
const SPECULATIVE_HOPS = 2;

/** The URL rules of SPEC §2/§4 for a configuration (also what the HTTP layer validates with). */
export function createUrlPolicy(
  config: Pick<SnapshotConfig, "allowedPorts" | "allowCidrs">,
): UrlPolicy {
  const addresses = createAddressPolicy(config.allowCidrs);
  return { allowedPorts: config.allowedPorts, isBlockedAddress: (ip) => addresses.isBlocked(ip) };
}

interface FileVerdicts {
  security_txt: FileVerdict;
  robots_txt: FileVerdict;
  sitemap_xml: FileVerdict;
}

async function probeWellKnown(origin: URL, ctx: FetchContext): Promise<FileVerdicts> {
  const failed = (path: string): FileProbe => ({ kind: "failed", url: path, reason: "protocol" });
  const safe = (p: Promise<FileProbe>, path: string) => p.catch(() => failed(path));
  // SPEC: the second security.txt location is asked only when the first answers 4xx; it then
  // goes over the keep-alive connection the first one freed.
  const security = safe(probeFile(origin, SECURITY_TXT_PATHS[0], ctx), SECURITY_TXT_PATHS[0]).then(
    async (first) => ({
      first,
      second: needsSecondLocation(first)
        ? await safe(probeFile(origin, SECURITY_TXT_PATHS[1], ctx), SECURITY_TXT_PATHS[1])
        : null,
    }),
  );
  const [{ first: sec1, second: sec2 }, robots, sitemap] = await Promise.all([
    security,
    safe(probeFile(origin, ROBOTS_TXT_PATH, ctx), ROBOTS_TXT_PATH),
    safe(probeFile(origin, SITEMAP_XML_PATH, ctx, { gunzipByMagic: true }), SITEMAP_XML_PATH),
  ]);
  return {
    security_txt: checkSecurityTxt(sec1, sec2),
    robots_txt: checkRobotsTxt(robots),
    sitemap_xml: checkSitemapXml(sitemap),
  };
}

function firstRequestError(
  failure: RequestFailure,
  url: URL,
  requestedUrl: string,
): SnapshotError | null {
  const where = url.host;
  switch (failure.kind) {
    case "dns":
      return new SnapshotError(
        "unreachable",
        `The host name ${url.hostname} does not resolve.`,
        requestedUrl,
      );
    case "refused":
      return new SnapshotError(
        "unreachable",
        `The connection to ${where} was refused.`,
        requestedUrl,
      );
    case "reset":
      return new SnapshotError(
        "unreachable",
        `The connection to ${where} was closed before any response.`,
        requestedUrl,
      );
    case "network":
      return new SnapshotError(
        "unreachable",
        `${where} cannot be reached from the network.`,
        requestedUrl,
      );
    case "timeout":
      return new SnapshotError(
        "timeout",
        `No response from ${url.href} before the deadline.`,
        requestedUrl,
      );
    default:
      return null; // TLS or HTTP trouble: something was learned, a 200 with reachable false
  }
}

/** An https hop on `hostname`:`port` that answered already proves HTTPS; no probe needed. */
function httpsProvenByChain(chain: Chain, hostname: string, port: number): boolean {
  return chain.hops.some((h) => {
    const u = new URL(h.url);
    return u.protocol === "https:" && u.hostname === hostname && effectivePort(u) === port;
  });
}

/** How long one name's answer is shared between the connections of a snapshot. */
const ANSWER_SHARE_MS = 2000;
const MAX_SHARED_ANSWERS = 1000;

interface SharedLookup {
  /** When the answer arrived (shared for ANSWER_SHARE_MS from then). */
  at: number;
  answer: Promise<string[]>;
  /** Callers still waiting; when the last one gives up, the lookup is cancelled. */
  waiting: number;
  settled: boolean;
  cancel: AbortController;
}

/**
 * A snapshot opens up to six connections to the same host at once; they share one lookup
 * instead of asking the DNS server six times. Safe for SSRF: the dialer still checks every
 * address it gets and dials only a checked one; sharing only means the same checked answer.
 * Each caller waits only as long as its own signal allows, and a lookup nobody waits for any
 * more is cancelled, so abandoned lookups do not pile up.
 */
function shareAnswers(resolve: ResolveHost): ResolveHost {
  const shared = new Map<string, SharedLookup>();
  return (hostname, signal) => {
    signal?.throwIfAborted();
    const now = Date.now();
    let entry = shared.get(hostname);
    if (!entry || (entry.settled && now - entry.at >= ANSWER_SHARE_MS)) {
      const cancel = new AbortController();
      const answer = resolve(hostname, cancel.signal);
      const fresh: SharedLookup = { at: now, answer, waiting: 0, settled: false, cancel };
      void answer.then(
        () => {
          fresh.settled = true;
          fresh.at = Date.now();
        },
        () => {
          fresh.settled = true;
          if (shared.get(hostname) === fresh) shared.delete(hostname);
        },
      );
      if (shared.size >= MAX_SHARED_ANSWERS) shared.clear();
      shared.set(hostname, fresh);
      entry = fresh;
    }
    if (!signal) return entry.answer;
    const joined = entry;
    joined.waiting++;
    return new Promise<string[]>((resolveAnswer, reject) => {
      const onAbort = () => {
        reject(signal.reason as Error);
        if (--joined.waiting === 0 && !joined.settled) {
          joined.cancel.abort();
          if (shared.get(hostname) === joined) shared.delete(hostname);
        }
      };
      signal.addEventListener("abort", onAbort, { once: true });
      joined.answer.then(
        (v) => {
          signal.removeEventListener("abort", onAbort);
          joined.waiting--;
          resolveAnswer(v);
        },
        (e: unknown) => {
          signal.removeEventListener("abort", onAbort);
          joined.waiting--;
          reject(e as Error);
        },
      );
    });
  };
}

export function createSnapshotEngine(options: EngineOptions): SnapshotEngine {
  const policy = createUrlPolicy(options);
  const resolve = shareAnswers(
    createResolver(options.dnsServers, { timeoutMs: options.timeoutMs }),
  );
  const probePort = options.httpsProbePort ?? 443;

  async function run(rawUrl: string): Promise<SnapshotResult> {
    const input = parseInputUrl(rawUrl, policy);
    const normalized = normalizeUrl(input);

    const deadline = new AbortController();
    const done = new AbortController();
    const deadlineAt = Date.now() + options.timeoutMs;
    const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
    const signal = AbortSignal.any([deadline.signal, done.signal]);
    // Every request and connect of the snapshot listens on this one signal; a redirect chain
    // with its speculative probes can have more than Node's default 10 in flight (not a leak).
    setMaxListeners(256, signal);
    // This snapshot's own connections: each connect gets the time left and the signal, and
    // destroying the dispatcher at the end closes them all (no idle sockets outlive it).
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

    const filesByOrigin = new Map<string, Promise<FileVerdicts>>();
    const filesFor = (url: URL): Promise<FileVerdicts> => {
      let p = filesByOrigin.get(url.origin);
      if (!p) filesByOrigin.set(url.origin, (p = probeWellKnown(new URL(url.origin), ctx)));
      return p;
    };
    const httpsByHost = new Map<string, Promise<HttpsProbe>>();
    const httpsFor = (hostname: string): Promise<HttpsProbe> => {
      let p = httpsByHost.get(hostname);
      if (!p) httpsByHost.set(hostname, (p = probeHttps(hostname, probePort, ctx)));
      return p;
    };

    const fetchedAt = new Date().toISOString();
    try {
      const chain = await fetchChain(input, options.maxRedirects, ctx, (url, index) => {
        if (index <= SPECULATIVE_HOPS) void filesFor(url);
        if (index === 0 && url.protocol === "http:") void httpsFor(url.hostname);
      });
      const finalUrl = chain.finalUrl;
      const requestFailure =
        chain.failure && chain.failure.kind !== "redirect_cap" ? chain.failure : null;
      if (chain.hops.length === 0 && requestFailure) {
        const error = firstRequestError(requestFailure, finalUrl, rawUrl);
        if (error) throw error;
      }

      const reachable = chain.final !== null;
      const headers = checkHeaders(chain.final?.headers ?? null);
      const isHttpFinal = finalUrl.protocol === "http:";
      const probeUrl = `https://${finalUrl.hostname}${probePort === 443 ? "" : `:${probePort}`}/`;
      const needProbe = isHttpFinal && !httpsProvenByChain(chain, finalUrl.hostname, probePort);

      const [files, probe] = await Promise.all([
        reachable ? filesFor(finalUrl) : null,
        needProbe ? httpsFor(finalUrl.hostname) : null,
      ]);
      const https = checkHttps({
        finalUrl,
        finalAnswered: chain.final !== null || chain.failure?.kind === "redirect_cap",
        finalFailure: requestFailure,
        probe: isHttpFinal && !needProbe ? { ok: true } : probe,
        probeUrl,
      });

      const notes: Note[] = missingHeaderNotes(headers);
      if (!https.ok) notes.push({ code: "https_failed", url: https.url, failure: https.failure });
      if (chain.failure?.kind === "redirect_cap") {
        notes.push({ code: "redirect_cap", url: finalUrl.href, max: chain.failure.max });
      } else if (requestFailure && !(!https.ok && https.url === finalUrl.href)) {
        // (A failed https final request is already explained by the HTTPS note.)
        notes.push({ code: "chain_broken", url: finalUrl.href, failure: requestFailure });
      }
      if (reachable && isHttpFinal && https.ok) {
        notes.push({ code: "http_final_although_https_works", url: finalUrl.href });
      }
      if (isHttpFinal && headers.hsts) notes.push({ code: "hsts_over_http" });
      if (files) {
        notes.push({ code: "file", file: "security_txt", verdict: files.security_txt });
        notes.push({ code: "file", file: "robots_txt", verdict: files.robots_txt });
        notes.push({ code: "file", file: "sitemap_xml", verdict: files.sitemap_xml });
      }

      // Key order is SERVICE.md §2.1 (SPEC "Field presence").
      const fields = {
        requested_url: rawUrl,
        normalized_url: normalized,
        final_url: finalUrl.href,
        fetched_at: fetchedAt,
        reachable,
        final_status_code: chain.final ? chain.final.status : null,
        redirect_count: chain.redirectCount,
        https_ok: https.ok,
        ...headerPresenceFields(headers),
        security_txt_present: files ? files.security_txt.value : null,
        robots_txt_present: files ? files.robots_txt.value : null,
        sitemap_xml_present: files ? files.sitemap_xml.value : null,
        notes: renderNotes(notes),
      };
      return { ...fields, checks: checksOf(fields) };
    } finally {
      clearTimeout(timer);
      // Cancels every speculative request the result did not need, and cuts unread bodies.
      done.abort();
      // Closes the snapshot's connections right after its answer is on its way, not before.
      setImmediate(() => void dispatcher.destroy().catch(() => undefined));
    }
  }

  let closed = false;
  const running = new Set<Promise<unknown>>();
  return {
    async snapshot(rawUrl: string): Promise<SnapshotResult> {
      if (closed)
        throw new SnapshotError("unreachable", "The snapshot engine is shut down.", rawUrl);
      const work = run(rawUrl);
      running.add(work);
      try {
        return await work;
      } catch (err) {
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
