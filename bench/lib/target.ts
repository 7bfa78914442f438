/**
 * The benchmark's target site: an HTTP and an HTTPS server on one loopback address that delay
 * EVERY response (redirects and 404s included) by a fixed time, so network latency dominates
 * and overlap (or the lack of it) shows in the timings.
 *
 * Routing is by Host name, so two "sites" share the servers:
 *  - PAGE_HOST: `/` is the page (200, all six security headers);
 *  - CHAIN_HOST: `http://CHAIN_HOST/` → `https://CHAIN_HOST/` → `https://CHAIN_HOST/en/` (page).
 * Both serve the three well-known files at their canonical paths over HTTPS (a valid security.txt
 * with Contact at /.well-known/security.txt, robots.txt, sitemap.xml with <urlset); /security.txt
 * and other paths are 404. Plain HTTP redirects every path to HTTPS, like a real site.
 *
 * Written for the benchmark rather than reusing test/fixtures/targets.ts: it needs a listen
 * backlog large enough for 1000 simultaneous connections and counts what it served.
 */
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { HostRecords } from "../../test/fixtures/dns-server.js";

/**
 * Under a public suffix, so the report's domain checks run as for a real site: its DNS records
 * (BENCH_DOMAIN_RECORDS) come from the benchmark's own DNS server, never from the internet.
 */
export const BENCH_DOMAIN = "bench-site.com";
export const PAGE_HOST = `www.${BENCH_DOMAIN}`;
export const CHAIN_HOST = `chain.${BENCH_DOMAIN}`;

/**
 * The domain as most sites publish it: CAA, SPF, DMARC and MX, no MTA-STS (so no policy file is
 * fetched). Spread into the DNS server's table beside the hosts' A records.
 */
export const BENCH_DOMAIN_RECORDS: HostRecords = {
  [BENCH_DOMAIN]: {
    CAA: [{ tag: "issue", value: "letsencrypt.org" }],
    TXT: ["v=spf1 mx -all"],
    MX: [{ priority: 10, exchange: `mx.${BENCH_DOMAIN}` }],
  },
  [`_dmarc.${BENCH_DOMAIN}`]: { TXT: ["v=DMARC1; p=reject"] },
};

const SECURITY_HEADERS: OutgoingHttpHeaders = {
  "strict-transport-security": "max-age=31536000; includeSubDomains",
  "content-security-policy": "default-src 'self'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "permissions-policy": "geolocation=()",
};

const PAGE = "<!doctype html><html><head><title>bench</title></head><body>hello</body></html>";
const FILES: Record<string, { type: string; body: string }> = {
  "/.well-known/security.txt": {
    type: "text/plain; charset=utf-8",
    body: `Contact: mailto:security@${BENCH_DOMAIN}\nExpires: 2030-01-01T00:00:00.000Z\n`,
  },
  "/robots.txt": { type: "text/plain; charset=utf-8", body: "User-agent: *\nDisallow:\n" },
  "/sitemap.xml": {
    type: "application/xml",
    body:
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
      `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://${PAGE_HOST}/</loc></url></urlset>\n`,
  },
};

export interface BenchTarget {
  address: string;
  httpPort: number;
  httpsPort: number;
  /** Requests answered so far, by "scheme host path". */
  served: Map<string, number>;
  /** Totals so far: requests answered, TCP connections accepted. */
  counts: { requests: number; connections: number };
  close(): Promise<void>;
}

export interface BenchTargetOptions {
  address: string;
  delayMs: number;
  cert: { certPem: string; keyPem: string };
  /** The host whose `/` is the page (default PAGE_HOST). */
  pageHost?: string;
  /** Fixed ports (e.g. 80 and 443 for a scanner that knows no other); default: any free. */
  ports?: { http: number; https: number };
}

function hostOf(req: IncomingMessage): string {
  return (req.headers.host ?? "").replace(/:\d+$/, "").toLowerCase();
}

export async function startBenchTarget(opts: BenchTargetOptions): Promise<BenchTarget> {
  const served = new Map<string, number>();
  const counts = { requests: 0, connections: 0 };
  const pageHost = opts.pageHost ?? PAGE_HOST;
  let httpsPort = 0;

  const answer = (scheme: "http" | "https", req: IncomingMessage, res: ServerResponse) => {
    const host = hostOf(req);
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const key = `${scheme} ${host} ${path}`;
    served.set(key, (served.get(key) ?? 0) + 1);
    counts.requests++;
    if (scheme === "http") {
      res.writeHead(301, { location: `https://${host}:${httpsPort}${path}` });
      return res.end();
    }
    if (host === CHAIN_HOST && path === "/") {
      res.writeHead(301, { location: `https://${host}:${httpsPort}/en/` });
      return res.end();
    }
    const isPage = (host === pageHost && path === "/") || (host === CHAIN_HOST && path === "/en/");
    if (isPage) {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", ...SECURITY_HEADERS });
      return res.end(PAGE);
    }
    const file = FILES[path];
    if (file) {
      res.writeHead(200, { "content-type": file.type });
      return res.end(file.body);
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("not found");
  };
  const delayed = (scheme: "http" | "https") => (req: IncomingMessage, res: ServerResponse) => {
    // The request body (none for GET) is not waited for; the delay is the "network".
    setTimeout(() => answer(scheme, req, res), opts.delayMs);
  };

  const servers: Server[] = [
    createHttpServer(delayed("http")),
    createHttpsServer({ cert: opts.cert.certPem, key: opts.cert.keyPem }, delayed("https")),
  ];
  const sockets = new Set<Socket>();
  const ports: number[] = [];
  const fixedPorts = opts.ports ? [opts.ports.http, opts.ports.https] : [0, 0];
  for (const [i, server] of servers.entries()) {
    server.on("connection", (s: Socket) => {
      counts.connections++;
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    // Clients that abort mid-handshake (a cancelled speculative probe) are expected.
    server.on("tlsClientError", () => undefined);
    server.on("clientError", (_err, socket: Socket) => socket.destroy());
    // 1000 connections arrive at once in the concurrency test; Node's default backlog (511)
    // would make some of them wait for a SYN retransmission (1 s) and measure the kernel.
    server.listen({ port: fixedPorts[i], host: opts.address, backlog: 4096 });
    await once(server, "listening");
    ports.push((server.address() as AddressInfo).port);
  }
  const [httpPort, httpsPortBound] = ports as [number, number];
  httpsPort = httpsPortBound;

  return {
    address: opts.address,
    httpPort,
    httpsPort,
    served,
    counts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await Promise.all(
        servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      );
    },
  };
}
