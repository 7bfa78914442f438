import { isIP, isIPv4 } from "node:net";
import type { Socket } from "node:net";
import { Agent } from "./undici.js";
import type { buildConnector } from "./undici.js";
import type { Dispatcher } from "undici";
import { withoutBrackets } from "./address-policy.js";
import type { SnapshotBudget } from "./budget.js";
import { BlockedAddressError, BlockedPortError } from "./dial-errors.js";
import { dialOne, plainHttpConnector } from "./dial-one.js";
import type { DialTools } from "./dial-one.js";
import { errorCodes } from "./error-chain.js";
import { originConnections } from "./pool-queue.js";
import { HostNotFoundError } from "./resolver.js";
import type { ResolveHost } from "./resolver.js";
import { secureContextFor } from "./target-tls.js";
import type { TlsFactsStore } from "./tls-facts.js";
import { SessionStore } from "./tls-sessions.js";
import type { SessionWaitOptions } from "./tls-sessions.js";
import { effectivePort } from "./url-rules.js";

/**
 * The pinned dialler of docs/contract.md §5.2: the only way a target is ever connected to.
 *
 * For every new connection undici asks our `connect` function; it resolves the host itself,
 * refuses the whole connection if ANY answer is blocked, and dials one of the addresses it
 * checked, as an IP (dial-one.ts: TCP, then TLS for https). The socket layer therefore never
 * resolves anything (a `lookup` that always fails guards this), so a DNS answer that changes
 * between check and connect (rebinding) cannot be dialled. TLS still verifies the certificate
 * against the host name through `servername`.
 *
 * Time: one connection (resolution and every dial attempt) gets at most `connectTimeoutMs` and
 * never more than what is left until `deadline`; aborting `signal` destroys what is in progress.
 * The engine makes one such dispatcher per snapshot, so its connections end with the snapshot.
 *
 * No proxy: a plain undici Agent never reads HTTP_PROXY/HTTPS_PROXY (only EnvHttpProxyAgent
 * does), and it must stay that way.
 *
 * How errors reach callers: undici passes the error given to the connector callback unchanged
 * to the request, so `undici.request(url, { dispatcher })` rejects with exactly these objects;
 * `undici.fetch` wraps them as `TypeError("fetch failed", { cause })`. Their codes, found with
 * `errorCodes(err)` (error-chain.ts):
 *  - "SECSNAP_BLOCKED"      BlockedAddressError: a resolved or literal address is blocked → ssrf
 *  - "SECSNAP_BLOCKED_PORT" BlockedPortError: the port is not allowed → ssrf
 *  - "ENOTFOUND"            HostNotFoundError (resolver.ts): the name does not resolve
 *  - "ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL": TCP failures
 *  - "UND_ERR_CONNECT_TIMEOUT": TCP+TLS connect to one address did not finish in its share
 *    of the time left
 *  - an error named "TimeoutError": the deadline ran out while resolving or connecting
 *  - TLS: "ERR_TLS_CERT_ALTNAME_INVALID", "DEPTH_ZERO_SELF_SIGNED_CERT", "CERT_HAS_EXPIRED",
 *    "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "SELF_SIGNED_CERT_IN_CHAIN", "ERR_SSL_*", "EPROTO", ...
 * `findConnectPhase(err)` (dial-errors.ts) tells whether a connection error happened before the
 * TCP connection existed ("tcp"), or after it, during the TLS handshake ("tls"): docs/contract.md
 * §4.2 separates "refused or reset before any TLS" (unreachable) from "TLS handshake failed".
 */

/** Errors after which another checked address of the same host is worth trying. */
const TRY_NEXT_ADDRESS = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);
const MAX_DIAL_ATTEMPTS = 3;

export interface TargetDispatcherOptions {
  resolve: ResolveHost;
  isBlockedAddress(ip: string): boolean;
  allowedPorts: ReadonlySet<number>;
  /** Bounds name resolution and all dial attempts of one connection (default 10000 ms). */
  connectTimeoutMs?: number;
  /** Absolute end (epoch ms) of the work this dispatcher serves: every connection's resolution
   * and dial attempts get only the time left until then. */
  deadline?: number;
  /** Aborting it destroys every resolution and dial in progress at once. */
  signal?: AbortSignal;
  /** Trust anchors for tests. Like node:tls `ca`, they REPLACE the default store (public CAs and
   * NODE_EXTRA_CA_CERTS); production leaves this unset and uses NODE_EXTRA_CA_CERTS. */
  tls?: { ca?: string[] };
  /** Called with every address just before it is dialled (for tests and logs). */
  onDial?: (info: { host: string; address: string; port: number }) => void;
  /** When a connection waits for another's TLS session (tls-sessions.ts); tests widen it. */
  sessionWait?: SessionWaitOptions;
  /** The snapshot's caps (budget.ts): a name is resolved only if its budget admitted it. */
  budget?: Pick<SnapshotBudget, "checkResolvable">;
  /** Keeps each origin's first verified handshake for the report's `tls` section, and follows
   * the handshakes under way for the legacy ones (tls-facts.ts). */
  tlsFacts?: TlsFactsStore;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** Idle keep-alive connections are closed after this long, whatever the server announces. */
const KEEP_ALIVE_MAX_MS = 4_000;
/** Connections per origin; more requests to one origin wait for a free connection. */
const CONNECTIONS_PER_ORIGIN = 16;
/**
 * A connection waits for the session of the full handshake under way to its address, port and
 * name only when its own TCP connect took ≤ 2 ms: a near network and an event loop with time to
 * spare, where the wait costs less than the full handshake's CPU it saves. Farther away it makes
 * its own handshake at once, so a distant site's snapshot waits no extra round trip; on a busy
 * loop too, where waiting queues the probes behind the main handshake and slows the neighbours'
 * snapshots (docs/snapshot-engine.md "TLS handshakes").
 */
const SESSION_WAIT: SessionWaitOptions = { nearConnectMs: 2, maxWaitMs: 50 };

export function createTargetDispatcher(opts: TargetDispatcherOptions): Dispatcher {
  const target = new PinnedConnector(opts);
  return new Agent({
    allowH2: false,
    connections: CONNECTIONS_PER_ORIGIN,
    keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS,
    factory: originConnections,
    connect: (params, callback) => {
      target.connect(params).then(
        (socket) => callback(null, socket),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
      );
    },
  });
}

/** One dispatcher's connects: each to the origin undici asks for, by the rules above. */
class PinnedConnector {
  private readonly connectTimeoutMs: number;
  private readonly tools: DialTools;

  constructor(private readonly opts: TargetDispatcherOptions) {
    this.connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.tools = {
      connector: plainHttpConnector(),
      secureContext: secureContextFor(opts.tls?.ca),
      sessions: new SessionStore(opts.sessionWait ?? SESSION_WAIT),
      signal: opts.signal,
      ...(opts.tlsFacts ? { tls: opts.tlsFacts } : {}),
    };
  }

  /** A socket to one origin: port allowed, host resolved in time, every answer checked, then
   * the checked addresses dialled in turn until one connects. */
  async connect(params: buildConnector.Options): Promise<Socket> {
    const { signal } = this.opts;
    signal?.throwIfAborted();
    const startedAt = Date.now();
    const host = withoutBrackets(params.hostname);
    const port = effectivePort(params);
    if (!this.opts.allowedPorts.has(port)) throw new BlockedPortError(host, port);
    if (this.timeLeft(startedAt) <= 0) throw deadlineError(host);
    // Requests are counted where they are dispatched; this keeps the name count honest even
    // for a connection nobody dispatched a counted request for.
    this.opts.budget?.checkResolvable(host);

    const addresses = await this.resolveInTime(host, startedAt);
    this.refuseBlocked(host, addresses);

    const servername = tlsServerName(host);
    const attempts = dialOrder(addresses);
    // The next address is tried only after a failure that another address may not share, and
    // only while time is left.
    let lastError: unknown;
    for (const [i, address] of attempts.entries()) {
      signal?.throwIfAborted();
      const left = this.timeLeft(startedAt);
      if (left <= 0) break;
      try {
        this.opts.onDial?.({ host, address, port });
        // The time left is shared between the addresses still to try, so black-holed ones
        // cannot use it all before the last.
        const timeoutMs = left / (attempts.length - i);
        return await dialOne(this.tools, params, address, port, servername, timeoutMs);
      } catch (err) {
        lastError = err;
        if (!TRY_NEXT_ADDRESS.has(errorCodes(err)[0] ?? "")) break;
      }
    }
    throw lastError ?? deadlineError(host);
  }

  /** Time a connection started at `startedAt` may still use: the connect bound, cut by the
   * deadline. */
  private timeLeft(startedAt: number): number {
    return Math.min(
      startedAt + this.connectTimeoutMs - Date.now(),
      this.opts.deadline === undefined ? Infinity : this.opts.deadline - Date.now(),
    );
  }

  /** Whether the deadline, not the connect bound, ends the time of a connection started then. */
  private deadlineFirst(startedAt: number): boolean {
    return (
      this.opts.deadline !== undefined && this.opts.deadline <= startedAt + this.connectTimeoutMs
    );
  }

  /**
   * The host's addresses, resolved within the time left. Literals take the same path: the
   * resolver returns them unchanged. One controller and one timer, released as soon as the name
   * is resolved: AbortSignal.timeout + AbortSignal.any would leave a signal, a timer and weak
   * references on the snapshot's signal per connection until collected (docs/benchmarks.md
   * "Fleet").
   */
  private async resolveInTime(host: string, startedAt: number): Promise<string[]> {
    const { signal } = this.opts;
    const bound = new AbortController();
    const timer = setTimeout(() => {
      bound.abort(new DOMException("The connect bound ran out.", "TimeoutError"));
    }, this.timeLeft(startedAt));
    const onAbort = () => bound.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.opts.resolve(host, bound.signal);
    } catch (err) {
      signal?.throwIfAborted();
      if (bound.signal.aborted && !(err instanceof HostNotFoundError)) {
        // Cut by the deadline: a timeout. Cut by the connect bound alone: the name does not
        // resolve in time (docs/contract.md §4.2).
        if (this.deadlineFirst(startedAt)) throw deadlineError(host);
        throw new HostNotFoundError(host, "ETIMEOUT");
      }
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Refuses the whole connection unless every answer is an IP that is not blocked. */
  private refuseBlocked(host: string, addresses: string[]): void {
    if (addresses.length === 0) throw new BlockedAddressError(host, "(no address)");
    const blocked = addresses.find((a) => isIP(a) === 0 || this.opts.isBlockedAddress(a));
    if (blocked !== undefined) throw new BlockedAddressError(host, blocked);
  }
}

/** The name TLS verifies: a DNS name without its trailing dot; none (no SNI) for an IP literal. */
function tlsServerName(host: string): string | undefined {
  return isIP(host) === 0 ? host.replace(/\.$/, "") : undefined;
}

/** The checked addresses to dial, in turn: IPv4 first, then IPv6, at most MAX_DIAL_ATTEMPTS. */
function dialOrder(addresses: string[]): string[] {
  const ordered = [...addresses.filter((a) => isIPv4(a)), ...addresses.filter((a) => !isIPv4(a))];
  return ordered.slice(0, MAX_DIAL_ATTEMPTS);
}

/** The deadline ran out while connecting: a timeout, whatever step was under way. */
function deadlineError(host: string): Error {
  return new DOMException(`No connection to ${host} before the deadline.`, "TimeoutError");
}
