import { connect as netConnect } from "node:net";
import type { LookupFunction, Socket } from "node:net";
import type { SecureContext, TLSSocket } from "node:tls";
import { buildConnector, errors } from "./undici.js";
import { tagBytesRead, tagPhase } from "./dial-errors.js";
import { dropUnsolicitedContinue } from "./interim.js";
import { startTargetTls } from "./target-tls.js";
import { sessionKey } from "./tls-sessions.js";
import type { SessionStore } from "./tls-sessions.js";

/**
 * The dial of ONE address that the dialler has checked (dialer.ts): TCP to that IP, never to a
 * name, then for https TLS with the host's name verified. Its own timer and the abort signal end
 * it at any step; a failure says whether it came before the TCP connection or during TLS.
 */

/** The socket layer must never resolve: every host handed to it is an IP already. */
export const refuseLookup: LookupFunction = (hostname, _options, callback) => {
  const err = Object.assign(new Error(`refusing to resolve ${hostname} inside the socket`), {
    code: "SECSNAP_UNPINNED",
  });
  callback(err as NodeJS.ErrnoException, "", 0);
};

/** undici's connector for plain-HTTP dials; https ones are made by dialOne itself. */
export function plainHttpConnector(): buildConnector.connector {
  return buildConnector({
    // dialOne's own timer bounds each attempt, so an abort or the deadline can end it.
    timeout: 0,
    allowH2: false,
    lookup: refuseLookup,
  });
}

/** What every dial of one dispatcher (one snapshot) uses. */
export interface DialTools {
  /** Makes the plain-HTTP connections (plainHttpConnector). */
  connector: buildConnector.connector;
  /** The TLS context of the dispatcher's trust anchors (target-tls.ts). */
  secureContext: SecureContext;
  /** The dispatcher's verified TLS sessions: never shared with another snapshot. */
  sessions: SessionStore;
  /** Aborting it ends every dial in progress. */
  signal: AbortSignal | undefined;
  /** Follows the https connections (tls-facts.ts). */
  tls?: TlsObserver;
}

/** What a snapshot follows of its https connections (tls-facts.ts TlsFactsStore). */
export interface TlsObserver {
  /** A TCP connection to a checked address of an https origin is up; its TLS starts next. */
  reached(address: string, port: number, servername: string | undefined): void;
  /** A handshake starts; the function returned marks its end (only its first call counts). */
  handshakeStarted(): () => void;
  /** An https connection's handshake has just completed verified; nothing has read from it yet. */
  verified(socket: TLSSocket, address: string, port: number, servername: string | undefined): void;
}

/**
 * A target socket's error listener, not a closure: a closure would keep its dial attempt's
 * scope (timer, callbacks, options) alive as long as the connection lives.
 */
function destroyOnError(this: Socket, err: Error): void {
  tagBytesRead(err, this.bytesRead);
  this.destroy();
}

function ignoreError(): void {}

/** A failed dial's error, with the bytes the server had sent and the phase it failed in. */
function dialFailure(err: Error, tcp: Socket | undefined, tcpConnected: boolean): Error {
  tagBytesRead(err, tcp?.bytesRead ?? 0);
  return tagPhase(err, tcpConnected ? "tls" : "tcp");
}

/**
 * A connected socket to `address` (an IP the caller has checked) within `timeoutMs`: plain TCP
 * through `tools.connector` for http, TCP then TLS (verified against `servername`) for https.
 */
export function dialOne(
  tools: DialTools,
  params: buildConnector.Options,
  address: string,
  port: number,
  servername: string | undefined,
  timeoutMs: number,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
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

    // Settles the dial once; a socket that arrives after it has settled is destroyed.
    const finish = (err: Error | null, sock?: Socket) => {
      clearTimeout(timer);
      tools.signal?.removeEventListener("abort", onAbort);
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
      if (err || !sock)
        return finish(dialFailure(err ?? new Error("no socket"), tcp, tcpConnected));
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
      // are made here.
      const startTls = (session: Buffer | undefined) => {
        if (settled) return;
        tcp.off("error", onTcpError);
        const tlsSocket: TLSSocket = startTargetTls(
          tcp,
          address,
          servername,
          session,
          tools.secureContext,
        );
        socket = tlsSocket;
        tools.sessions.watch(key, tlsSocket, session === undefined);
        const ended = tools.tls?.handshakeStarted();
        tlsSocket.once("secureConnect", () => {
          ended?.();
          tools.tls?.verified(tlsSocket, address, port, servername);
          connected(null, tlsSocket);
        });
        tlsSocket.once("error", (err: Error) => {
          ended?.();
          connected(err);
        });
        if (ended) tlsSocket.once("close", ended);
      };
      // 'connect' is the TCP connection, before any TLS handshake. A verified session of the
      // same address, port and name is resumed when ready, or waited for when that pays.
      tcp.once("connect", () => {
        tcpConnected = true;
        tools.tls?.reached(address, port, servername);
        const ready = tools.sessions.take(key);
        if (ready || !tools.sessions.worthWaiting(key, performance.now() - dialledAt)) {
          return startTls(ready);
        }
        void tools.sessions.wait(key, tools.signal).then(startTls);
      });
    } else {
      socket = tools.connector(
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
      giveUp(dialFailure(err, tcp, tcpConnected));
    }, timeoutMs);
    const onAbort = () => giveUp(tools.signal?.reason as Error);
    tools.signal?.addEventListener("abort", onAbort, { once: true });
  });
}
