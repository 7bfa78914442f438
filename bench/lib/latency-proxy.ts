/**
 * A TCP proxy that delays every chunk by half a round trip in each direction, so a client pays
 * network round trips for its TLS handshakes and requests, not only for the server's answers.
 * Hand-written: the latency tools that do this (netem, toxiproxy) need root on the loopback
 * device or a binary of their own, and this is twenty lines.
 *
 * Not modelled: the TCP handshake's own round trip (the kernel completes the client's connect at
 * once), so each connection costs one round trip less than on a network, whoever opens it.
 */
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";

export interface LatencyProxy {
  close(): Promise<void>;
}

/** Writes what `from` sends to `to` half a round trip later, in order, then ends it likewise. */
function delayed(from: Socket, to: Socket, oneWayMs: number): void {
  let nextAt = 0;
  const later = (action: () => void) => {
    const at = Math.max(performance.now() + oneWayMs, nextAt);
    nextAt = at;
    setTimeout(action, at - performance.now());
  };
  from.on("data", (chunk: Buffer) => later(() => to.destroyed || to.write(chunk)));
  from.on("end", () => later(() => to.destroyed || to.end()));
}

/** Listens on `host:port` and forwards each connection to `upstreamHost:upstreamPort`. */
export async function startLatencyProxy(o: {
  host: string;
  port: number;
  upstreamHost: string;
  upstreamPort: number;
  rttMs: number;
}): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect({ host: o.upstreamHost, port: o.upstreamPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
      s.on("close", () => sockets.delete(s));
    }
    delayed(client, upstream, o.rttMs / 2);
    delayed(upstream, client, o.rttMs / 2);
  });
  server.listen({ host: o.host, port: o.port, backlog: 1024 });
  await once(server, "listening");
  return {
    async close() {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, "close");
    },
  };
}
