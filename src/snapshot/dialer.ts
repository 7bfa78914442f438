import { constants as cryptoConstants } from "node:crypto";
import { isIP, isIPv4, connect as netConnect } from "node:net";
import type { LookupFunction, Socket } from "node:net";
import { TLSSocket, createSecureContext, connect as tlsConnect } from "node:tls";
import type { PeerCertificate, SecureContext } from "node:tls";
import { Agent, buildConnector, errors } from "./undici.js";
import type { Dispatcher } from "undici";
import { withoutBrackets } from "./address-policy.js";
import { BlockedAddressError, BlockedPortError, tagBytesRead, tagPhase } from "./dial-errors.js";
import { errorCodes } from "./error-chain.js";
import { dropUnsolicitedContinue } from "./interim.js";
import { poolWithLightQueue } from "./pool-queue.js";
import { HostNotFoundError } from "./resolver.js";
import type { ResolveHost } from "./resolver.js";
import { SessionStore, sessionKey } from "./tls-sessions.js";
import type { SessionWaitOptions } from "./tls-sessions.js";
import { effectivePort } from "./url-rules.js";

/**
 * The pinned dialler of docs/contract.md §5.2: the only way a target is ever connected to.
 *
 * For every new connection undici asks our `connect` function; it resolves the host itself,
 * refuses the whole connection if ANY answer is blocked, and hands undici's own connector
 * (buildConnector: socket, TLS, connect timeout) one of the addresses it checked, as an IP. The
 * socket layer therefore never resolves anything (a `lookup` that always fails guards this), so
 * a DNS answer that changes between check and connect (rebinding) cannot be dialled. TLS still
 * verifies the certificate against the host name through `servername`.
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
 * `findConnectPhase(err)` (dial-errors.ts) tells whether a connection error happened before the TCP connection
 * existed ("tcp"), or after it, during the TLS handshake ("tls"): docs/contract.md §4.2
 * separates "refused or reset before any TLS" (unreachable) from "TLS handshake failed".
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

/**
 * A target socket's error listener, not a closure: a closure would keep its dial attempt's
 * scope (timer, callbacks, options) alive as long as the connection lives.
 */
function destroyOnError(this: Socket, err: Error): void {
  tagBytesRead(err, this.bytesRead);
  this.destroy();
}

function ignoreError(): void {}

const chainCertificate = TLSSocket.prototype.getPeerCertificate;

/**
 * Node's check of the server's name after a handshake asks for the whole chain as objects
 * (`getPeerCertificate(true)`) only to read the leaf's names; OpenSSL has verified the chain
 * already. Building the chain costs about a fifth of a client handshake's CPU
 * (docs/benchmarks.md "Hostile neighbours"), so a target socket answers with the leaf alone.
 */
function leafCertificate(this: TLSSocket): PeerCertificate {
  return chainCertificate.call(this, false);
}

/** The socket layer must never resolve: every host handed to it is an IP already. */
const refuseLookup: LookupFunction = (hostname, _options, callback) => {
  const err = Object.assign(new Error(`refusing to resolve ${hostname} inside the socket`), {
    code: "SECSNAP_UNPINNED",
  });
  callback(err as NodeJS.ErrnoException, "", 0);
};

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

/**
 * What every target TLS connection negotiates with. A renegotiation asked for by a server is
 * refused: each one is a full handshake of our CPU, and a hostile server can ask in a loop.
 */
function targetTlsOptions(ca: string[] | undefined) {
  return {
    secureOptions: cryptoConstants.SSL_OP_NO_RENEGOTIATION,
    ...(ca ? { ca } : {}),
  };
}

/** The context of the default trust store (public CAs and NODE_EXTRA_CA_CERTS, read at start). */
let defaultSecureContext: SecureContext | undefined;

/**
 * One SecureContext for every connection with the same trust anchors: tls.connect without one
 * builds a new context (and copies the root store into it) per connection, a large share of a
 * handshake's CPU. A context holds no sessions for resumption (Node keeps none in it), so sharing
 * it across snapshots shares nothing else.
 */
function secureContextFor(ca: string[] | undefined): SecureContext {
  if (ca) return createSecureContext(targetTlsOptions(ca));
  return (defaultSecureContext ??= createSecureContext(targetTlsOptions(undefined)));
}

export function createTargetDispatcher(opts: TargetDispatcherOptions): Dispatcher {
  const connectTimeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const { signal } = opts;
  // Plain-HTTP connections; https ones are made by dialOne itself (startTls).
  const socketConnector = buildConnector({
    // Our own timer bounds each attempt (dialOne), so an abort or the deadline can end it.
    timeout: 0,
    allowH2: false,
    lookup: refuseLookup,
  });
  const secureContext = secureContextFor(opts.tls?.ca);
  // This dispatcher's (one snapshot's) verified sessions: never shared with another snapshot.
  const sessions = new SessionStore(opts.sessionWait ?? SESSION_WAIT);

  /** Time this connection may still use: the connect bound, cut by the deadline. */
  const budget = (startedAt: number) =>
    Math.min(
      startedAt + connectTimeoutMs - Date.now(),
      opts.deadline === undefined ? Infinity : opts.deadline - Date.now(),
    );
  const deadlineFirst = (startedAt: number) =>
    opts.deadline !== undefined && opts.deadline <= startedAt + connectTimeoutMs;

  const dialOne = (
    params: buildConnector.Options,
    address: string,
    port: number,
    servername: string | undefined,
    timeoutMs: number,
  ): Promise<Socket> =>
    new Promise((resolve, reject) => {
      let tcpConnected = false;
      let settled = false;
      // For https the TCP socket is ours, so a failed handshake can tell whether the server had
      // sent anything: docs/contract.md §4.2 separates a reset before any TLS exchange
      // (unreachable) from a TLS handshake that failed.
      const tcp =
        params.protocol === "https:"
          ? netConnect({ host: address, port, lookup: refuseLookup })
          : undefined;
      let socket: Socket | undefined;
      const finish = (err: Error | null, sock?: Socket) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (settled) return void sock?.destroy();
        settled = true;
        if (err) reject(err);
        else resolve(sock as Socket);
      };
      // Gives up on this attempt at once: the half-open socket is destroyed, not left to linger.
      const giveUp = (err: Error) => {
        if (settled) return;
        socket?.destroy();
        tcp?.destroy();
        finish(err);
      };
      let reported = false;
      const connected = (err: Error | null, sock?: Socket) => {
        if (reported) return;
        reported = true;
        if (err || !sock) {
          const e = err ?? new Error("no socket");
          tagBytesRead(e, tcp?.bytesRead ?? 0);
          return finish(tagPhase(e, tcpConnected ? "tls" : "tcp"));
        }
        // Records a number on the error object; undici still handles the error itself. A TLS
        // socket that failed (an alert after the handshake) is not destroyed by Node, and undici
        // ends its request only on 'close': without this it would wait for the deadline.
        sock.on("error", destroyOnError);
        finish(null, dropUnsolicitedContinue(sock));
      };
      if (tcp) {
        const key = sessionKey(address, port, servername);
        const dialledAt = performance.now();
        // Before TLS starts, TCP failures are reported from here; then the TLS socket reports
        // them, and this listener only keeps them from being unhandled.
        const onTcpError = (err: Error) => connected(err);
        tcp.on("error", onTcpError);
        tcp.on("error", ignoreError);
        // undici's connector takes a TLS session only when it is built, so https connections
        // are made here, with the options it would use (http/1.1 only).
        const startTls = (session: Buffer | undefined) => {
          if (settled) return;
          tcp.off("error", onTcpError);
          tcp.setNoDelay(true).setKeepAlive(true, 60_000);
          const tlsSocket: TLSSocket = tlsConnect({
            socket: tcp,
            host: address,
            ...(servername ? { servername } : {}),
            ...(session ? { session } : {}),
            secureContext,
            ALPNProtocols: ["http/1.1"],
          });
          tlsSocket.getPeerCertificate = leafCertificate as TLSSocket["getPeerCertificate"];
          socket = tlsSocket;
          sessions.watch(key, tlsSocket, session === undefined);
          tlsSocket.once("secureConnect", () => connected(null, tlsSocket));
          tlsSocket.once("error", (err: Error) => connected(err));
        };
        // 'connect' is the TCP connection, before any TLS handshake.
        tcp.once("connect", () => {
          tcpConnected = true;
          const ready = sessions.take(key);
          if (ready || !sessions.worthWaiting(key, performance.now() - dialledAt)) {
            return startTls(ready);
          }
          void sessions.wait(key, signal).then(startTls);
        });
      } else {
        socket = socketConnector(
          // hostname is what gets dialled; host (name:port) stays for undici's bookkeeping.
          { ...params, hostname: address },
          (err, sock) => connected(err, (sock ?? undefined) as Socket | undefined),
        ) as unknown as Socket;
        socket.once("connect", () => {
          tcpConnected = true;
        });
      }
      // finish() and giveUp() only run from later events, when the timer and listener exist.
      const timer = setTimeout(() => {
        const err = new errors.ConnectTimeoutError(
          `Connect timeout (${address}:${port}, ${Math.round(timeoutMs)} ms)`,
        );
        tagBytesRead(err, tcp?.bytesRead ?? 0);
        giveUp(tagPhase(err, tcpConnected ? "tls" : "tcp"));
      }, timeoutMs);
      const onAbort = () => giveUp(signal?.reason as Error);
      signal?.addEventListener("abort", onAbort, { once: true });
    });

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
        return await dialOne(params, address, port, servername, left / (attempts.length - i));
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
