import { isIP, isIPv4 } from "node:net";
import type { Socket } from "node:net";
import { Agent } from "./undici.js";
import type { buildConnector } from "./undici.js";
import type { Dispatcher } from "undici";
import { withoutBrackets } from "./address-policy.js";
import { BlockedAddressError, BlockedPortError } from "./dial-errors.js";
import { dialOne, plainHttpConnector } from "./dial-one.js";
import type { DialTools } from "./dial-one.js";
import { errorCodes } from "./error-chain.js";
import { poolWithLightQueue } from "./pool-queue.js";
import { HostNotFoundError } from "./resolver.js";
import type { ResolveHost } from "./resolver.js";
import { secureContextFor } from "./target-tls.js";
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

/** The deadline ran out while connecting: a timeout, whatever step was under way. */
function deadlineError(host: string): Error {
  return new DOMException(`No connection to ${host} before the deadline.`, "TimeoutError");
}

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
 * loop too, where waiting queues the probes behind the main handshake (measured: neighbours'
 * snapshots got slower). Figures: docs/benchmarks.md "TLS handshakes".
 */
const SESSION_WAIT: SessionWaitOptions = { nearConnectMs: 2, maxWaitMs: 50 };

export function createTargetDispatcher(opts: TargetDispatcherOptions): Dispatcher {
  const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const { signal } = opts;
  const tools: DialTools = {
    connector: plainHttpConnector(),
    secureContext: secureContextFor(opts.tls?.ca),
    sessions: new SessionStore(opts.sessionWait ?? SESSION_WAIT),
    signal,
  };

  /** Time this connection may still use: the connect bound, cut by the deadline. */
  const budget = (startedAt: number) =>
    Math.min(
      startedAt + connectTimeoutMs - Date.now(),
      opts.deadline === undefined ? Infinity : opts.deadline - Date.now(),
    );
  const deadlineFirst = (startedAt: number) =>
    opts.deadline !== undefined && opts.deadline <= startedAt + connectTimeoutMs;

  const connect = async (params: buildConnector.Options): Promise<Socket> => {
    signal?.throwIfAborted();
    const startedAt = Date.now();
    const host = withoutBrackets(params.hostname);
    const port = effectivePort(params);
    if (!opts.allowedPorts.has(port)) throw new BlockedPortError(host, port);
    if (budget(startedAt) <= 0) throw deadlineError(host);

    // Literals take the same path: the resolver returns them unchanged. One controller and one
    // timer, released as soon as the name is resolved: AbortSignal.timeout + AbortSignal.any
    // would leave a signal, a timer and weak references on the snapshot's signal per connection
    // until collected (docs/benchmarks.md "Fleet").
    const bound = new AbortController();
    const timeUp = bound.signal;
    const timer = setTimeout(() => {
      bound.abort(new DOMException("The connect bound ran out.", "TimeoutError"));
    }, budget(startedAt));
    const onAbort = () => bound.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    let addresses: string[];
    try {
      addresses = await opts.resolve(host, bound.signal);
    } catch (err) {
      signal?.throwIfAborted();
      if (timeUp.aborted && !(err instanceof HostNotFoundError)) {
        // Cut by the deadline: a timeout. Cut by the connect bound alone: the name does not
        // resolve in time (docs/contract.md §4.2).
        if (deadlineFirst(startedAt)) throw deadlineError(host);
        throw new HostNotFoundError(host, "ETIMEOUT");
      }
      throw err;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
    if (addresses.length === 0) throw new BlockedAddressError(host, "(no address)");
    const blocked = addresses.find((a) => isIP(a) === 0 || opts.isBlockedAddress(a));
    if (blocked !== undefined) throw new BlockedAddressError(host, blocked);

    // No SNI for IP literals; a DNS name is verified without its trailing dot.
    const servername = isIP(host) === 0 ? host.replace(/\.$/, "") : undefined;
    const ordered = [...addresses.filter((a) => isIPv4(a)), ...addresses.filter((a) => !isIPv4(a))];
    const attempts = ordered.slice(0, MAX_DIAL_ATTEMPTS);
    let lastError: unknown;
    for (const [i, address] of attempts.entries()) {
      signal?.throwIfAborted();
      const left = budget(startedAt);
      if (left <= 0) break;
      try {
        opts.onDial?.({ host, address, port });
        // The time left is shared between the addresses still to try, so black-holed ones
        // cannot use it all before the last.
        return await dialOne(
          tools,
          params,
          address,
          port,
          servername,
          left / (attempts.length - i),
        );
      } catch (err) {
        lastError = err;
        if (!TRY_NEXT_ADDRESS.has(errorCodes(err)[0] ?? "")) break;
      }
    }
    throw lastError ?? deadlineError(host);
  };

  return new Agent({
    allowH2: false,
    connections: CONNECTIONS_PER_ORIGIN,
    keepAliveMaxTimeout: KEEP_ALIVE_MAX_MS,
    factory: poolWithLightQueue,
    connect: (params, callback) => {
      connect(params).then(
        (socket) => callback(null, socket),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
      );
    },
  });
}
