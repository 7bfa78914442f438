import { promises as dns } from "node:dns";
import { isIP } from "node:net";

/**
 * Name resolution for target hosts (SPEC §4). The dialer checks every address returned here
 * and dials only one of them, so this module only has to return *all* answers, bounded in time.
 */

export type ResolveHost = (hostname: string, signal?: AbortSignal) => Promise<string[]>;

/**
 * The name did not resolve to any address: NXDOMAIN, NODATA on both families, SERVFAIL, no
 * answer from the servers in time. `reason` keeps the resolver's own code (ENOTFOUND, ENODATA,
 * ETIMEOUT, ESERVFAIL, ECONNREFUSED, ABORTED, ...). SPEC §3 treats all of them as "does not
 * resolve" (→ unreachable); only the whole-snapshot deadline makes a timeout.
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
  /** Upper bound for one resolution when the caller gives no signal (default 5000 ms). */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "ERROR";
}

/** Rejects when the signal aborts, whatever the underlying lookup is doing. */
function raceSignal<T>(work: Promise<T>, signal: AbortSignal, onAbort?: () => void): Promise<T> {
  if (signal.aborted) {
    onAbort?.();
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort?.();
      reject(signal.reason);
    };
    signal.addEventListener("abort", abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener("abort", abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(e);
      },
    );
  });
}

/**
 * With `dnsServers` (["ip[:port]", ...], SNAPSHOT_DNS_SERVERS) queries those servers with
 * node:dns Resolver, A and AAAA in parallel; an answer of either family is enough. Without,
 * the system resolver (getaddrinfo via dns.lookup, all addresses). An IP literal (brackets
 * allowed) returns itself. Every failure is a HostNotFoundError.
 */
export function createResolver(
  dnsServers: readonly string[],
  options: ResolverOptions = {},
): ResolveHost {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  return async (hostname, signal) => {
    const bare = hostname.replace(/^\[(.*)\]$/, "$1");
    if (isIP(bare) !== 0) return [bare];
    const bound = signal
      ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
      : AbortSignal.timeout(timeoutMs);

    if (dnsServers.length > 0) {
      // A fresh Resolver per lookup so cancel() on abort stops only this lookup's queries.
      // c-ares' own per-try timeout keeps a dead server from holding the lookup until abort.
      const resolver = new dns.Resolver({ timeout: Math.min(timeoutMs, 2_000), tries: 2 });
      resolver.setServers([...dnsServers]);
      const families = Promise.allSettled([resolver.resolve4(bare), resolver.resolve6(bare)]);
      let settled: PromiseSettledResult<string[]>[];
      try {
        settled = await raceSignal(families, bound, () => resolver.cancel());
      } catch (err) {
        if (signal?.aborted) throw err; // the caller's own abort stays the caller's
        throw new HostNotFoundError(bare, "ETIMEOUT");
      }
      const addresses = settled.flatMap((r) => (r.status === "fulfilled" ? r.value : []));
      if (addresses.length > 0) return addresses;
      const reasons = settled.map((r) => (r.status === "rejected" ? codeOf(r.reason) : "ENODATA"));
      // NXDOMAIN says more than NODATA, which says more than a transport error.
      const reason = ["ENOTFOUND", "ENODATA"].find((c) => reasons.includes(c)) ?? reasons[0];
      throw new HostNotFoundError(bare, reason ?? "ENODATA");
    }

    let found: { address: string }[];
    try {
      // getaddrinfo cannot be cancelled; the race only stops us waiting for it.
      found = await raceSignal(dns.lookup(bare, { all: true, verbatim: true }), bound);
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new HostNotFoundError(bare, bound.aborted ? "ETIMEOUT" : codeOf(err));
    }
    if (found.length === 0) throw new HostNotFoundError(bare, "ENODATA");
    return found.map((a) => a.address);
  };
}
