/**
 * The TLS facts store and the legacy handshakes over real sockets: the facts come from a verified
 * connection that has them, and the legacy versions are asked of the server whose handshake was
 * verified, also when TCP first reached another of the origin's addresses.
 */
import { once } from "node:events";
import { createServer as createTcpServer } from "node:net";
import type { AddressInfo, Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TlsFactsStore, legacyHandshake } from "../../../src/snapshot/net/tls-facts.js";
import type { TlsPeer } from "../../../src/snapshot/net/tls-facts.js";
import { PUBLIC_HOST, PUBLIC_HOST_2, respond, startHttpsTarget } from "../../fixtures/targets.js";
import type { TargetServer } from "../../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../../fixtures/tls.js";

const NAME = "site.test";
/** What a server that still speaks TLS 1.0 and 1.1 accepts. */
const LEGACY_TLS = { minVersion: "TLSv1", ciphers: "DEFAULT@SECLEVEL=0" } as const;

let legacy: TargetServer;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const ca = await loadTestCa();
  legacy = await startHttpsTarget({
    host: PUBLIC_HOST_2,
    cert: await issueLeaf(ca, { dnsNames: [NAME], ips: [PUBLIC_HOST_2] }),
    routes: { "/": respond.text("hello") },
    tls: LEGACY_TLS,
  });
});

afterAll(async () => {
  await Promise.all([legacy.close(), ...closers.map((close) => close())]);
});

/** A TCP server on `port` of PUBLIC_HOST that does `onSocket` with each connection. */
async function rawServer(port: number, onSocket: (s: Socket) => void): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((s) => {
    sockets.add(s);
    s.on("error", () => undefined);
    onSocket(s);
  });
  server.listen(port, PUBLIC_HOST);
  await once(server, "listening");
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    server.close();
    await once(server, "close").catch(() => undefined);
  });
  return (server.address() as AddressInfo).port;
}

const peerOf = (address: string, port: number): TlsPeer => ({ address, port, servername: NAME });

describe("legacyHandshake", () => {
  it("asks the server whose handshake was verified, not the address TCP reached first", async () => {
    // The origin's first address takes TCP and never answers TLS (the dialer moved on); its
    // second is the server the snapshot verified, which speaks TLS 1.0.
    const silentPort = await rawServer(legacy.port, () => undefined);
    const reached = peerOf(PUBLIC_HOST, silentPort);
    const verified = peerOf(PUBLIC_HOST_2, legacy.port);
    const before = legacy.handshakes.length;
    const accepted = await legacyHandshake(
      reached,
      "TLSv1",
      60_000,
      new AbortController().signal,
      Promise.resolve(verified),
    );
    expect(accepted).toBe(true);
    expect(legacy.handshakes.slice(before)).toEqual(["TLSv1"]);
  });

  it("a connection the server closes before the ClientHello is null at once, not at the deadline", async () => {
    // The timeout is far beyond the test's own: only an answer without waiting for it passes.
    const port = await rawServer(0, (s) => s.end());
    const peer = peerOf(PUBLIC_HOST, port);
    let go: (p: TlsPeer) => void = () => undefined;
    const ready = new Promise<TlsPeer>((r) => (go = r));
    const verdict = legacyHandshake(peer, "TLSv1", 600_000, new AbortController().signal, ready);
    setTimeout(() => go(peer), 200);
    expect(await verdict).toBeNull();
  });
});

describe("TlsFactsStore", () => {
  /** A verified client connection to the legacy target, as the dialer would report it. */
  async function verifiedSocket(): Promise<TLSSocket> {
    const socket = tlsConnect({
      host: PUBLIC_HOST_2,
      port: legacy.port,
      servername: NAME,
    });
    await once(socket, "secureConnect");
    return socket;
  }

  it("the facts come from the first verified connection that has them", async () => {
    const store = new TlsFactsStore();
    // A probe's connection verified first, then cancelled before its answer: no facts on it.
    const cancelled = await verifiedSocket();
    store.verified(cancelled, PUBLIC_HOST_2, legacy.port, NAME);
    const kept = await verifiedSocket();
    store.verified(kept, PUBLIC_HOST_2, legacy.port, NAME);
    cancelled.destroy();
    await once(cancelled, "close");
    kept.write(`GET / HTTP/1.1\r\nhost: ${NAME}\r\nconnection: close\r\n\r\n`);
    await once(kept, "readable");
    const facts = store.of(NAME, legacy.port);
    kept.destroy();
    expect(facts).toMatchObject({ address: PUBLIC_HOST_2, subject: `CN=${NAME}` });
    expect(facts?.protocol).toMatch(/^TLSv1\.[23]$/);
  });
});
