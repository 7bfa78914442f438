import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { Config } from "../config.js";
import type { NodeFront } from "./challenge-fast-path.js";
import type { RequestObserver } from "./request-log.js";

/** Anything with a fetch handler, such as the Hono app of createApp. */
export interface FetchApp {
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
}

export interface RunningServer {
  /** Base URL clients can use, e.g. `http://127.0.0.1:8080` (a wildcard host is shown as loopback). */
  url: string;
  port: number;
  /**
   * Graceful stop: no new connections, in-flight requests may finish for `graceMs`, then any
   * connection still open is cut. Resolves once the server is fully closed.
   */
  close(graceMs: number): Promise<void>;
}

function displayHost(address: string): string {
  if (address === "0.0.0.0") return "127.0.0.1";
  if (address === "::") return "[::1]";
  return address.includes(":") ? `[${address}]` : address;
}

/** Serves `app` with @hono/node-server on `config.host:config.port` (port 0 picks a free one). */
export async function startServer(opts: {
  config: Pick<Config, "host" | "port">;
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
  const server: Server = createServer((req, res) => {
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
  const close = (graceMs: number): Promise<void> =>
    (closing ??= new Promise<void>((resolve) => {
      // Keep-alive sockets that finish their last request while we wait are idle: close them too.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
      server.close(() => {
        clearInterval(sweep);
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    }));

  return { url: `http://${displayHost(address)}:${port}`, port, close };
}
