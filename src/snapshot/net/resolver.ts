import nodeDns, { promises as dns } from "node:dns";
import { isIP } from "node:net";
import { withoutBrackets } from "./address-policy.js";

/**
 * Name resolution for target hosts (docs/contract.md §5.2). The dialer checks every address
 * returned here and dials only one of them, so this module only has to return the answers it got,
 * bounded in time and cancellable.
 *
 * Always c-ares (node:dns Resolver), never getaddrinfo: getaddrinfo runs on libuv's four-thread
 * pool and cannot be cancelled, so four names whose queries go unanswered would hold every thread
 * and starve all other lookups (and fs, crypto) of the process.
 */

export type ResolveHost = (hostname: string, signal?: AbortSignal) => Promise<string[]>;

/**
 * The name did not resolve to any address: NXDOMAIN, NODATA on both families, SERVFAIL, no
 * answer from the servers in time. `reason` keeps the resolver's own code (ENOTFOUND, ENODATA,
 * ETIMEOUT, ESERVFAIL, ECONNREFUSED, ABORTED, ...). docs/contract.md §4.2 treats all of them as
 * "does not resolve" (→ unreachable); only the whole-snapshot deadline makes a timeout.
 */
export class HostNotFoundError extends Error {
  readonly code = "ENOTFOUND";
  constructor(
    readonly hostname: string,
    readonly reason: string,
  ) {
    super(`The host name ${hostname} does not resolve (${reason}).`);
    this.name = "HostNotFoundError";
  }
}

export interface ResolverOptions {
  /** Upper bound for one resolution (default 5000 ms); a caller's signal may end it sooner. */
  timeoutMs?: number;
  /** How long to wait for the other family once one answered with addresses (default 50 ms). */
  familyGraceMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;
/** RFC 8305 §3 "Resolution Delay": an answered family is used 50 ms later without the other. */
const DEFAULT_FAMILY_GRACE_MS = 50;
/** c-ares tries: the first waits half the bound (c-ares drops an answer to a try it gave up on,
 * so a slow server needs a long first try), the second, doubled, outlasts the bound. */
const TRIES = 2;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "ERROR";
}

/** `work`, or the signal's reason as soon as it aborts (then `onAbort` runs first). */
function raceSignal<T>(work: Promise<T>, signal: AbortSignal, onAbort?: () => void): Promise<T> {
  if (signal.aborted) {
    onAbort?.();
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort?.();
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(e as Error);
      },
    );
  });
}

type FamilyResult = { ok: true; addresses: string[] } | { ok: false; code: string };

/**
 * Asks A and AAAA at once and settles when both answered, or `graceMs` after the first one that
 * brought addresses (a server that drops one family must not hold every lookup until timeout).
 * A family still unanswered then counts as not arrived; its query is cancelled by the caller.
 */
function bothFamilies(resolver: dns.Resolver, name: string, graceMs: number) {
  const results: (FamilyResult | undefined)[] = [undefined, undefined];
  return new Promise<(FamilyResult | undefined)[]>((resolve) => {
    let pending = 2;
    let grace: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(grace);
      resolve(results);
    };
    [resolver.resolve4(name), resolver.resolve6(name)].forEach((query, i) => {
      query.then(
        (addresses) => {
          results[i] = { ok: true, addresses };
          if (addresses.length > 0 && grace === undefined) grace = setTimeout(done, graceMs);
        },
        (err: unknown) => (results[i] = { ok: false, code: codeOf(err) }),
      );
      void query.catch(() => undefined).finally(() => --pending === 0 && done());
    });
  });
}

/** RFC 6761 names answered without asking anyone (and without leaking them to DNS servers). */
function specialName(name: string): string[] | "nxdomain" | undefined {
  const n = name.toLowerCase().replace(/\.$/, "");
  if (n === "localhost" || n.endsWith(".localhost")) return ["127.0.0.1", "::1"];
  if (n === "invalid" || n.endsWith(".invalid")) return "nxdomain";
  return undefined;
}

/**
 * Resolves A and AAAA with node:dns Resolver (c-ares) through `dnsServers` (["ip[:port]", ...],
 * SNAPSHOT_DNS_SERVERS), or, when empty, through the servers the process's default resolver
 * uses (the system's /etc/resolv.conf, or what dns.setServers() set). The hosts file is not
 * read. An IP literal (brackets allowed) returns itself. Every failure is a HostNotFoundError,
 * except an abort by the caller's signal, which rejects with the signal's reason.
 */
export function createResolver(
  dnsServers: readonly string[],
  options: ResolverOptions = {},
): ResolveHost {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const graceMs = options.familyGraceMs ?? DEFAULT_FAMILY_GRACE_MS;

  return async (hostname, signal) => {
    const bare = withoutBrackets(hostname);
    if (isIP(bare) !== 0) return [bare];
    const special = specialName(bare);
    if (special === "nxdomain") throw new HostNotFoundError(bare, "ENOTFOUND");
    if (special) return special;

    // Through the module object: dns.setServers() rebinds its functions, not named imports.
    const servers = dnsServers.length > 0 ? [...dnsServers] : nodeDns.getServers();
    if (servers.length === 0) throw new HostNotFoundError(bare, "ENOSERVERS");
    const bound = signal
      ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
      : AbortSignal.timeout(timeoutMs);
    // A fresh Resolver per lookup so cancel() stops only this lookup's queries.
    const resolver = new dns.Resolver({
      timeout: Math.max(100, Math.ceil(timeoutMs / 2)),
      tries: TRIES,
    });
    resolver.setServers(servers);
    let settled: (FamilyResult | undefined)[];
    try {
      settled = await raceSignal(bothFamilies(resolver, bare, graceMs), bound, () =>
        resolver.cancel(),
      );
    } catch (err) {
      if (signal?.aborted) throw err; // the caller's own abort stays the caller's
      throw new HostNotFoundError(bare, "ETIMEOUT");
    } finally {
      // Stops a family that did not answer within the grace.
      resolver.cancel();
    }
    const addresses = settled.flatMap((r) => (r?.ok ? r.addresses : []));
    if (addresses.length > 0) return addresses;
    const reasons = settled.map((r) => (r && !r.ok ? r.code : "ENODATA"));
    // NXDOMAIN says more than NODATA, which says more than a transport error.
    const reason = ["ENOTFOUND", "ENODATA"].find((c) => reasons.includes(c)) ?? reasons[0];
    throw new HostNotFoundError(bare, reason ?? "ENODATA");
  };
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
export function shareAnswers(resolve: ResolveHost): ResolveHost {
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
    let waiting = true;
    const leave = () => {
      if (waiting) joined.waiting--;
      waiting = false;
    };
    return raceSignal(joined.answer, signal, () => {
      leave();
      if (joined.waiting === 0 && !joined.settled) {
        joined.cancel.abort();
        if (shared.get(hostname) === joined) shared.delete(hostname);
      }
    }).finally(leave);
  };
}

/** What one CAA, TXT or MX question got (the domain checks of docs/contract.md §9.2). */
export type RecordAnswer<T> =
  /** The records (NOERROR with answers). */
  | { kind: "records"; records: T[] }
  /** NXDOMAIN or NODATA: the name has no record of that type. */
  | { kind: "none" }
  /** No usable answer: SERVFAIL, REFUSED, no answer in time, cancelled; `code` is c-ares'. */
  | { kind: "failed"; code: string };

/** One CAA record as c-ares gives it: `critical`, and its tag, spelled as served, as a key. */
export interface CaaRecordAnswer {
  critical: number;
  [tag: string]: string | number;
}

/** CAA, TXT and MX questions asked through one c-ares channel. Never reject. */
export interface RecordQuestions {
  caa(name: string): Promise<RecordAnswer<CaaRecordAnswer>>;
  /** Each TXT record with its character-strings joined (RFC 7208 §3.3). */
  txt(name: string): Promise<RecordAnswer<string>>;
  /** The mail exchangers; a null MX (RFC 7505) comes as an empty or "." exchange. */
  mx(name: string): Promise<RecordAnswer<nodeDns.MxRecord>>;
}

export interface RecordLookup {
  /**
   * Questions that share one channel, all bound by `signal` and the time bound: cancelled
   * together when either ends. One channel for a domain's five questions costs half the CPU of
   * one channel each, and they all end with the snapshot anyway.
   */
  open(signal: AbortSignal): RecordQuestions;
}

/**
 * CAA, TXT and MX questions through the same servers, c-ares and time bound as the address lookups
 * (createResolver). Every outcome is a RecordAnswer.
 */
export function createRecordLookup(
  dnsServers: readonly string[],
  options: Pick<ResolverOptions, "timeoutMs"> = {},
): RecordLookup {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return {
    open(signal) {
      const servers = dnsServers.length > 0 ? [...dnsServers] : nodeDns.getServers();
      const bound = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
      let channel: dns.Resolver | undefined;
      // Made on the first question: a snapshot of an IP address asks none.
      const resolver = (): dns.Resolver => {
        if (!channel) {
          const made = new dns.Resolver({
            timeout: Math.max(100, Math.ceil(timeoutMs / 2)),
            tries: TRIES,
          });
          made.setServers(servers);
          bound.addEventListener("abort", () => made.cancel(), { once: true });
          channel = made;
        }
        return channel;
      };
      async function ask<T>(query: (r: dns.Resolver) => Promise<T[]>): Promise<RecordAnswer<T>> {
        if (servers.length === 0) return { kind: "failed", code: "ENOSERVERS" };
        try {
          const records = await raceSignal(query(resolver()), bound);
          return records.length > 0 ? { kind: "records", records } : { kind: "none" };
        } catch (err) {
          if (bound.aborted) return { kind: "failed", code: "ETIMEOUT" };
          const code = codeOf(err);
          return code === "ENOTFOUND" || code === "ENODATA"
            ? { kind: "none" }
            : { kind: "failed", code };
        }
      }
      return {
        caa: (name) => ask((r) => r.resolveCaa(name) as Promise<CaaRecordAnswer[]>),
        txt: (name) =>
          ask((r) => r.resolveTxt(name).then((rs) => rs.map((chunks) => chunks.join("")))),
        mx: (name) => ask((r) => r.resolveMx(name)),
      };
    },
  };
}
