import { errorChain } from "./error-chain.js";

/**
 * The errors the pinned dialler throws itself, and the tags it puts on connect failures so that
 * a failed request can be classified later (dialer.ts lists every error a caller may see).
 */

export class BlockedAddressError extends Error {
  readonly code = "SECSNAP_BLOCKED";
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(
      address === host
        ? `${address} is a private, reserved or otherwise non-public address.`
        : `${host} resolves to ${address}, a private, reserved or otherwise non-public address.`,
    );
    this.name = "BlockedAddressError";
  }
}

export class BlockedPortError extends Error {
  readonly code = "SECSNAP_BLOCKED_PORT";
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(`Port ${port} is not allowed for target connections.`);
    this.name = "BlockedPortError";
  }
}

export type ConnectPhase = "tcp" | "tls";
const PHASE = Symbol.for("secsnap.connectPhase");

/** "tcp" when a connection failed before the TCP connection was established, "tls" when it
 * failed afterwards during the handshake; undefined for errors that are not connect failures. */
export function findConnectPhase(err: unknown): ConnectPhase | undefined {
  for (const e of errorChain(err)) {
    const phase = (e as { [PHASE]?: ConnectPhase })[PHASE];
    if (phase) return phase;
  }
  return undefined;
}

export function tagPhase(err: Error, phase: ConnectPhase): Error {
  Object.defineProperty(err, PHASE, { value: phase, configurable: true });
  return err;
}

const BYTES_READ = Symbol.for("secsnap.bytesRead");

export function tagBytesRead(err: Error, bytes: number): void {
  Object.defineProperty(err, BYTES_READ, { value: bytes, configurable: true });
}

/**
 * Bytes the peer had sent on the connection when it failed (reset, closed): tells "reset before
 * any TLS or HTTP exchange" from a handshake or an answer cut off midway. From our own tag on
 * socket errors (a read ECONNRESET carries nothing else; for a failed TLS connect it counts the
 * raw TCP bytes) or from undici's SocketError socket info. Undefined when unknown.
 */
export function findBytesRead(err: unknown): number | undefined {
  for (const e of errorChain(err)) {
    const tagged = (e as { [BYTES_READ]?: number })[BYTES_READ];
    if (typeof tagged === "number") return tagged;
    const info = (e as { socket?: { bytesRead?: unknown } }).socket;
    if (typeof info?.bytesRead === "number") return info.bytesRead;
  }
  return undefined;
}
