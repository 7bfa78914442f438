import type { IncomingMessage, Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer } from "node:http";
import ipaddr from "ipaddr.js";
import { getRequestListener } from "@hono/node-server";
import type { Config } from "../config.js";
import type { NodeFront } from "./challenge-fast-path.js";
import type { RequestObserver } from "./operations/request-log.js";

/** Anything with a fetch handler, such as the Hono app of createApp. */
export interface FetchApp {
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
}

export interface RunningServer {
  /** Base URL clients can use, e.g. `http://127.0.0.1:8080` (a wildcard host is shown as loopback). */
  url: string;
  /** The address bound, as the OS says: `0.0.0.0` or `::` for every address of the machine. */
  address: string;
  port: number;
  /**
   * Graceful stop: no new connections, in-flight requests may finish for `graceMs`, then any
   * connection still open is cut — after `holdOpen` resolved, when given: the work that must
   * still answer (paid calls settling, whose answers may come later than any request's bound).
   * Resolves once the server is fully closed.
   */
  close(graceMs: number, holdOpen?: () => Promise<void>): Promise<void>;
}

/** After held work ended, how long its answers get to be written before connections are cut. */
const ANSWER_WRITE_MARGIN_MS = 1_000;

function displayHost(address: string): string {
  if (address === "0.0.0.0") return "127.0.0.1";
  if (address === "::") return "[::1]";
  return address.includes(":") ? `[${address}]` : address;
}

/**
 * How long a client has to send a request's headers, and the whole request with its body
 * (docs/operations.md, "Time-outs"): a client that trickles is cut with a 408 (or the
 * connection closed) well within 30 s. Receiving the request only: a paid answer that takes
 * longer to produce (snapshot, settlement) is never cut by them.
 */
export const SERVER_TIMEOUTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 20_000,
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: 5_000,
} as const;

/** Node checks the two bounds above only this often (its default is 30 s, too coarse for them). */
const TIMEOUT_CHECK_MS = 1_000;

export type ServerTimeouts = { [K in keyof typeof SERVER_TIMEOUTS]: number };

/**
 * The request target and Host as the app may read them (docs/http-api.md, "Host and request
 * target"). An absolute-form target (`GET https://other.example/x HTTP/1.1`) is reduced to its
 * path and query: its authority is the client's word and must never become the URL the page,
 * the challenge or the API description name. A request without Host (HTTP/1.0, a load
 * balancer's plain check) is given the address the connection reached, so every route answers.
 */
function normalizeTarget(req: IncomingMessage): void {
  const target = req.url ?? "";
  if (/^https?:\/\//i.test(target)) {
    try {
      const url = new URL(target);
      req.url = `${url.pathname}${url.search}`;
    } catch {
      // Left as it is: the framework refuses a target it cannot read with a 400.
    }
  }
  if (!req.headers.host) req.headers.host = localAuthority(req);
}

/** `address:port` of our side of the connection, as a URL authority. */
function localAuthority(req: IncomingMessage): string {
  const { localAddress, localPort } = req.socket;
  if (localAddress === undefined || !ipaddr.isValid(localAddress)) return `localhost:${localPort}`;
  const address = ipaddr.process(localAddress);
  const host = address.kind() === "ipv6" ? `[${address.toString()}]` : address.toString();
  return `${host}:${localPort}`;
}

/** Serves `app` with @hono/node-server on `config.host:config.port` (port 0 picks a free one). */
export async function startServer(opts: {
  config: Pick<Config, "host" | "port">;
  /** The receiving bounds; default SERVER_TIMEOUTS (tests shorten them). */
  timeouts?: ServerTimeouts;
  app: FetchApp;
  /** Sees each request first and may answer it without the app (createChallengeFastPath). */
  front?: NodeFront;
  /**
   * Sees every request first, before `front` (createRequestObserver: metrics, request log); the
   * id it returns goes out in `X-Request-Id`, from `front` or set here before the app answers.
   */
  observe?: RequestObserver;
}): Promise<RunningServer> {
  // The env carries the Node request (`incoming`), which the POST route reads directly.
  const toApp = getRequestListener((request, env) => opts.app.fetch(request, env));
  const { front, observe } = opts;
  const timeouts = opts.timeouts ?? SERVER_TIMEOUTS;
  const options = {
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, timeouts.headersTimeoutMs),
  };
  const server: Server = createServer(options, (req, res) => {
    normalizeTarget(req);
    const id = observe?.(req, res);
    if (front?.(req, res, id)) return;
    if (id !== undefined) res.setHeader("x-request-id", id);
    void toApp(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.config.port, opts.config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;

  let closing: Promise<void> | undefined;
  const close = (graceMs: number, holdOpen?: () => Promise<void>): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      // Keep-alive sockets that finish their last request while we wait are idle: close them too.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const cut = () => server.closeAllConnections();
      // The held work's answers are written just after it ends: a moment for them, then the cut.
      const deadline = setTimeout(() => {
        if (!holdOpen) return cut();
        void holdOpen()
          .then(() => new Promise((r) => setTimeout(r, ANSWER_WRITE_MARGIN_MS)))
          .finally(cut);
      }, graceMs);
      server.close(() => {
        clearInterval(sweep);
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    }));

  return { url: `http://${displayHost(address)}:${port}`, address, port, close };
}
