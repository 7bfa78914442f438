import type { TLSSocket } from "node:tls";

/**
 * TLS session resumption inside ONE snapshot (docs/snapshot-engine.md "TLS handshakes").
 *
 * A snapshot opens several connections to one origin at once (the main request and the
 * well-known probes). The first to a (pinned address, port, servername) makes the full, verified
 * handshake; the others may resume its session. Only a session of a connection whose handshake
 * completed verified ('secureConnect': chain, dates and name checked) is ever offered, and only
 * to a connection to the same address, port and servername — a resumed handshake carries no
 * certificate and Node does not check the name again, so a session must never cross names or
 * pinned addresses. The store belongs to one snapshot's dispatcher and ends with it: the next
 * snapshot verifies afresh, so a certificate replaced or expired since then shows.
 */

export interface SessionWaitOptions {
  /** A connection waits for another's session only when its TCP connect took at most this long
   * (a near network and a responsive event loop); otherwise it makes its own full handshake. */
  nearConnectMs: number;
  /** Longest a connection waits for another's session before making its own full handshake;
   * after one such wait the origin is taken to give no sessions, and nobody waits again. */
  maxWaitMs: number;
}

/** The identity a session may be reused for: the pinned address, the port and the SNI name. */
export function sessionKey(address: string, port: number, servername: string | undefined): string {
  return `${address}|${port}|${servername ?? ""}`;
}

interface Slot {
  /** Verified sessions received for this key, oldest first. */
  sessions: Buffer[];
  /** Connections waiting for a session (or for the full handshakes under way to end). */
  waiters: Set<(session: Buffer | undefined) => void>;
  /** Full handshakes to this key under way. */
  leaders: number;
  /** A wait ended without a session: this origin gives none in time, nobody waits again. */
  barren: boolean;
}

/** The verified TLS sessions of one snapshot's connections, by sessionKey. */
export class SessionStore {
  private readonly slots = new Map<string, Slot>();
  constructor(private readonly options: SessionWaitOptions) {}

  private slot(key: string): Slot {
    let s = this.slots.get(key);
    if (!s)
      this.slots.set(key, (s = { sessions: [], waiters: new Set(), leaders: 0, barren: false }));
    return s;
  }

  /** A verified session for `key`, if there is one. A server may take a TLS 1.3 ticket only
   * once, so callers get one each while several are kept; the last one is shared. */
  take(key: string): Buffer | undefined {
    const { sessions } = this.slot(key);
    return sessions.length > 1 ? sessions.shift() : sessions[0];
  }

  /**
   * Whether a connection to `key` whose TCP connect took `connectMs` should wait for the session
   * of a full handshake under way rather than make its own.
   */
  worthWaiting(key: string, connectMs: number): boolean {
    const slot = this.slot(key);
    return connectMs <= this.options.nearConnectMs && slot.leaders > 0 && !slot.barren;
  }

  /**
   * Resolves with a session for `key` as soon as one is offered; with undefined when every full
   * handshake under way has ended without one, after maxWaitMs, or when `signal` aborts.
   */
  wait(key: string, signal?: AbortSignal): Promise<Buffer | undefined> {
    const slot = this.slot(key);
    return new Promise((resolve) => {
      const done = (session: Buffer | undefined) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        slot.waiters.delete(done);
        resolve(session);
      };
      const onAbort = () => done(undefined);
      const timer = setTimeout(() => {
        slot.barren = true;
        done(undefined);
      }, this.options.maxWaitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      slot.waiters.add(done);
    });
  }

  /**
   * Follows a new TLS connection to `key`: its sessions are kept, and handed to the waiters, only
   * once its handshake has completed verified. `full` marks a full handshake, which waiters wait
   * for; when it fails, closes, or completes without a session (TLS 1.2 has sent its session by
   * then; TLS 1.3 tickets come just after, within maxWaitMs), they make their own.
   */
  watch(key: string, socket: TLSSocket, full: boolean): void {
    const slot = this.slot(key);
    if (full) slot.leaders++;
    let leading = full;
    let verified = false;
    let early: Buffer | undefined;
    const offer = (session: Buffer) => {
      slot.sessions.push(session);
      for (const wake of [...slot.waiters]) wake(this.take(key));
    };
    const release = () => {
      if (!leading) return;
      leading = false;
      if (--slot.leaders > 0) return;
      for (const wake of [...slot.waiters]) wake(undefined);
    };
    socket.on("session", (session: Buffer) => {
      if (verified) offer(session);
      else early = session;
    });
    socket.once("secureConnect", () => {
      verified = true;
      if (early) offer(early);
      // Node hands a TLS 1.2 session over right after this event, in the same turn.
      if (socket.getProtocol() !== "TLSv1.3") setImmediate(release);
    });
    socket.once("error", release);
    socket.once("close", release);
  }
}
