import { constants as cryptoConstants } from "node:crypto";
import { connect as tlsConnect, createSecureContext } from "node:tls";
import type { SecureContext, TLSSocket } from "node:tls";
import { connect as netConnect } from "node:net";
import { refuseLookup } from "./dial-one.js";
import type { TlsObserver } from "./dial-one.js";
import { errorCodes } from "./error-chain.js";
import type { TlsHandshake } from "../types.js";

/**
 * What the `tls` section reports (docs/snapshot-engine.md "TLS facts"): the protocol, cipher and
 * certificate of the first verified handshake the snapshot made to an origin — read from the
 * connection the dialer opened for its requests, never from one of its own — and whether the
 * server still accepts TLS 1.0 and 1.1, one forced handshake each to the same checked address.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** One verified handshake as seen by the client. */
export interface TlsHandshakeFacts extends TlsHandshake {
  /** The checked address the connection was dialled to: the legacy handshakes go there too. */
  address: string;
  port: number;
  servername: string | undefined;
}

/** A distinguished name as one line, in the certificate's order ("CN=site, O=Org"). */
function oneLine(name: string): string {
  return name.split("\n").filter(Boolean).join(", ");
}

/** The curve sizes of the named curves a certificate may carry. */
const CURVE_BITS: Record<string, number> = {
  prime256v1: 256,
  secp384r1: 384,
  secp521r1: 521,
  "P-256": 256,
  "P-384": 384,
  "P-521": 521,
};

/** The facts of a socket whose handshake has just completed verified; null without a leaf. */
export function readHandshake(
  socket: TLSSocket,
  address: string,
  port: number,
  servername: string | undefined,
): TlsHandshakeFacts | null {
  const cert = socket.getPeerX509Certificate();
  const cipher = socket.getCipher();
  const protocol = socket.getProtocol();
  if (!cert || !protocol) return null;
  const notAfter = new Date(cert.validTo);
  const key = cert.publicKey;
  const details = key.asymmetricKeyDetails;
  const curve = details?.namedCurve;
  const bits = details?.modulusLength ?? (curve ? CURVE_BITS[curve] : undefined);
  return {
    address,
    port,
    servername,
    protocol,
    cipher: cipher.standardName ?? cipher.name,
    subject: oneLine(cert.subject),
    issuer: oneLine(cert.issuer),
    notAfter: notAfter.toISOString(),
    daysLeft: Math.floor((notAfter.getTime() - Date.now()) / DAY_MS),
    keyType: key.asymmetricKeyType ?? null,
    keyBits: bits ?? null,
  };
}

/** An origin as the dialer sees it: the host without brackets, and the port. */
export function originKey(host: string, port: number): string {
  return `${host}|${port}`;
}

/** Where a verified handshake was made: what the legacy handshakes need to go to the same place. */
export type TlsPeer = Pick<TlsHandshakeFacts, "address" | "port" | "servername">;

interface Seen extends TlsPeer {
  socket: TLSSocket;
  /** Read once, on first need: undefined until then; null when the socket had no leaf. */
  facts?: TlsHandshakeFacts | null;
}

/** Wakes whoever waits on a key once, with a value; a waiter leaves on its signal's abort. */
class Waiters<T> {
  private readonly byKey = new Map<string, Set<(value: T | null) => void>>();

  wait(key: string, signal: AbortSignal): Promise<T | null> {
    if (signal.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const set = this.byKey.get(key) ?? new Set();
      this.byKey.set(key, set);
      const done = (value: T | null) => {
        set.delete(done);
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      };
      const onAbort = () => done(null);
      signal.addEventListener("abort", onAbort, { once: true });
      set.add(done);
    });
  }

  wake(key: string, value: T): void {
    for (const done of this.byKey.get(key) ?? []) done(value);
    this.byKey.delete(key);
  }
}

/** The key of "no handshake under way" among the idle waiters. */
const IDLE = "";

/**
 * The https connections of one snapshot, as the dialer reports them (dial-one.ts TlsObserver):
 * the first checked address each origin's TCP reached, the verified handshakes of each origin in
 * the order they completed, and how many handshakes are under way. The facts are read with the answer's first
 * bytes (or the report, or the socket's end), never during the handshake's own events: read
 * there, a server that then asks to renegotiate made Node's refusal surface as a wrong host name.
 * Belongs to one snapshot, like its session store.
 */
export class TlsFactsStore implements TlsObserver {
  private readonly reachedAt = new Map<string, TlsPeer>();
  /** Each origin's verified connections, first first: the first one read with facts is the
   * origin's (one destroyed before its answer, a cancelled probe's, has none). */
  private readonly seen = new Map<string, Seen[]>();
  private readonly reachWaiters = new Waiters<TlsPeer>();
  private readonly verifiedWaiters = new Waiters<TlsPeer>();
  private readonly idleWaiters = new Waiters<true>();
  private underWay = 0;

  reached(address: string, port: number, servername: string | undefined): void {
    const key = originKey(servername ?? address, port);
    if (this.reachedAt.has(key)) return;
    const peer = { address, port, servername };
    this.reachedAt.set(key, peer);
    this.reachWaiters.wake(key, peer);
  }

  handshakeStarted(): () => void {
    this.underWay++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      if (--this.underWay === 0) this.idleWaiters.wake(IDLE, true);
    };
  }

  /** Keeps each verified https connection of its origin (the SNI name, else the IP literal, and
   * the port), at most one per request the snapshot may make. */
  verified(socket: TLSSocket, address: string, port: number, servername: string | undefined): void {
    const key = originKey(servername ?? address, port);
    const list = this.seen.get(key) ?? [];
    const seen: Seen = { address, port, servername, socket };
    list.push(seen);
    this.seen.set(key, list);
    // Read with the first bytes of the answer (a 'readable' listener does not change how undici
    // reads the socket), or at its end, while the connection is still there.
    const read = () => this.read(seen);
    socket.once("readable", read);
    socket.once("end", read);
    if (list.length === 1) this.verifiedWaiters.wake(key, { address, port, servername });
  }

  private read(seen: Seen): TlsHandshakeFacts | null {
    if (seen.facts === undefined) {
      seen.facts = readHandshake(seen.socket, seen.address, seen.port, seen.servername);
    }
    return seen.facts;
  }

  /** The facts of `host`:`port`: those of its first verified connection that has them. */
  of(host: string, port: number): TlsHandshakeFacts | null {
    for (const seen of this.seen.get(originKey(host, port)) ?? []) {
      const facts = this.read(seen);
      if (facts) return facts;
    }
    return null;
  }

  /** The checked address a TCP connection to `host`:`port` reached, once one has; null on abort. */
  whenReached(host: string, port: number, signal: AbortSignal): Promise<TlsPeer | null> {
    const key = originKey(host, port);
    const known = this.reachedAt.get(key);
    return known ? Promise.resolve(known) : this.reachWaiters.wait(key, signal);
  }

  /** Where `host`:`port`'s verified handshake went, once one completes; null on abort. */
  whenVerified(host: string, port: number, signal: AbortSignal): Promise<TlsPeer | null> {
    const key = originKey(host, port);
    const known = this.seen.get(key)?.[0];
    return known ? Promise.resolve(known) : this.verifiedWaiters.wait(key, signal);
  }

  /** Resolves true once no handshake of the snapshot is under way (at once if none is); null
   * on abort. */
  whenIdle(signal: AbortSignal): Promise<true | null> {
    return this.underWay === 0 ? Promise.resolve(true) : this.idleWaiters.wait(IDLE, signal);
  }
}

export type LegacyVersion = "TLSv1" | "TLSv1.1";

/**
 * Our side must offer what it tests: Node's defaults allow TLS 1.2+ only, and OpenSSL 3's
 * default security level refuses the SHA-1 signatures TLS 1.0/1.1 need. One context per
 * version, shared by every snapshot (no trust store: the certificate was verified already).
 */
const legacyContexts = new Map<LegacyVersion, SecureContext>();

function legacyContext(version: LegacyVersion): SecureContext {
  let ctx = legacyContexts.get(version);
  if (!ctx) {
    ctx = createSecureContext({
      minVersion: version,
      maxVersion: version,
      ciphers: "DEFAULT@SECLEVEL=0",
      secureOptions: cryptoConstants.SSL_OP_NO_RENEGOTIATION,
    });
    legacyContexts.set(version, ctx);
  }
  return ctx;
}

/**
 * The server's refusals of a legacy version: a `protocol_version` alert (RFC 8446 §4.2.1),
 * `handshake_failure` or `insufficient_security` (nothing it accepts at that version), or a
 * ServerHello of a version we did not offer.
 */
const REFUSED = new Set([
  "ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION",
  "ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE",
  "ERR_SSL_TLSV1_ALERT_INSUFFICIENT_SECURITY",
  "ERR_SSL_UNSUPPORTED_PROTOCOL",
]);

/**
 * One handshake limited to `version`, to a checked address (never resolved again) with the same
 * SNI name, no HTTP request: true when it completes, false when the server refuses that version,
 * null when it cannot be told (reset, close, silence, timeout, abort, `ready` null, anything
 * else). The TCP connection to `reached` (the origin's first address TCP reached) is made at
 * once, so its round trip overlaps the snapshot's own handshakes; the ClientHello waits for
 * `ready`, so its CPU does not delay their requests (docs/snapshot-engine.md "TLS facts").
 * `ready` gives where the verified handshake went: the version is asked of that server, so when
 * it is another address than the one reached first, that one is dialled instead.
 */
export function legacyHandshake(
  reached: TlsPeer,
  version: LegacyVersion,
  timeoutMs: number,
  signal: AbortSignal,
  ready: Promise<TlsPeer | null>,
): Promise<boolean | null> {
  if (signal.aborted || timeoutMs <= 0) return Promise.resolve(null);
  return new Promise((resolve) => {
    let socket: TLSSocket | undefined;
    let settled = false;
    const finish = (accepted: boolean | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      socket?.destroy();
      tcp.destroy();
      resolve(accepted);
    };
    const onAbort = () => finish(null);
    const timer = setTimeout(onAbort, timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });
    // Before TLS starts, a TCP failure or close cannot tell (and would leave the ClientHello
    // waiting on a dead socket until the deadline); then the TLS socket reports it.
    const onTcpEnd = () => finish(null);
    const dial = (to: TlsPeer) => {
      const s = netConnect({ host: to.address, port: to.port, lookup: refuseLookup });
      s.once("error", onTcpEnd);
      s.once("close", onTcpEnd);
      return s;
    };
    const quiet = (s: ReturnType<typeof dial>) => {
      s.off("error", onTcpEnd);
      s.off("close", onTcpEnd);
    };
    let tcp = dial(reached);
    void ready.then(async (verified) => {
      if (settled) return;
      if (!verified) return finish(null);
      if (verified.address !== reached.address || verified.port !== reached.port) {
        quiet(tcp);
        tcp.destroy();
        tcp = dial(verified);
      }
      const current = tcp;
      if (current.connecting) await new Promise<void>((r) => current.once("connect", () => r()));
      if (settled) return;
      quiet(current);
      const tls = tlsConnect({
        socket: current,
        ...(verified.servername ? { servername: verified.servername } : {}),
        secureContext: legacyContext(version),
        // Only whether the version is accepted is asked; the certificate was judged already.
        rejectUnauthorized: false,
        ALPNProtocols: ["http/1.1"],
      });
      socket = tls;
      tls.once("secureConnect", () => finish(tls.getProtocol() === version));
      tls.once("error", (err: Error) =>
        finish(REFUSED.has(errorCodes(err)[0] ?? "") ? false : null),
      );
    });
  });
}
