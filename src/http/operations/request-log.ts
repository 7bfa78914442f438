import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import { routeOfPath } from "../../routes.js";

/**
 * The logging the HTTP layer needs: pino's methods of the same names satisfy it (the service
 * passes its pino logger; tests may pass a pino on a captured stream).
 */
export interface Logger {
  info(fields: object, message?: string): void;
  isLevelEnabled(level: string): boolean;
}

/**
 * Sees each request as it arrives (startServer calls it before anything answers) and returns
 * its request id, which the answer's sender puts in `X-Request-Id`: set with the answer's own
 * headers rather than before them, a header set early sends Node's writeHead down its slow path
 * (every header of the ≈ 3 KB 402 set one by one; docs/benchmarks.md "Payment").
 */
export type RequestObserver = (req: IncomingMessage, res: ServerResponse) => string;

/** Where answered requests are counted (ServiceMetrics). */
interface RequestMetrics {
  request(route: string, status: number, seconds: number): void;
}

export interface RequestObserverOptions {
  /** Route patterns the app serves; any other path is counted and logged as "other". */
  routes: readonly string[];
  metrics?: RequestMetrics;
  logger?: Logger;
  /** The price of a paid call in USDC (X402_PRICE_USDC), logged as its amount. */
  priceUsdc?: string;
}

/** A client's own request id is kept when it is short and plain; otherwise one is made. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;
const RECEIPT_HEADERS = ["payment-response", "x-payment-response"] as const;
/** Status logged and counted for a request whose client left before any answer. */
const CLIENT_CLOSED = 499;

/**
 * One observer for metrics and the request log (docs/operations.md): the request id (the
 * client's `X-Request-Id` when sane, else a UUID), returned to be echoed in `X-Request-Id`, and when the
 * exchange ends, secsnap_http_requests_total and its duration by route pattern, and one log
 * line: id, method, route, status, duration and, for a paid call, its receipt (network, payer,
 * amount, transaction, protocol version). Headers are never logged.
 */
export function createRequestObserver(options: RequestObserverOptions): RequestObserver {
  const { metrics, logger } = options;
  const routes = new Set(options.routes);
  return (req, res) => {
    const started = performance.now();
    const sent = req.headers["x-request-id"];
    const id = typeof sent === "string" && SANE_REQUEST_ID.test(sent) ? sent : randomUUID();
    res.once("close", () => {
      const seconds = (performance.now() - started) / 1000;
      const status = res.headersSent ? res.statusCode : CLIENT_CLOSED;
      const route = routeOf(req.url, routes);
      metrics?.request(route, status, seconds);
      if (!logger?.isLevelEnabled("info")) return;
      const line: Record<string, unknown> = {
        req_id: id,
        method: req.method,
        route,
        status,
        duration_ms: Math.round(seconds * 1e4) / 10,
      };
      const receipt = paidReceipt(req, res);
      if (receipt) Object.assign(line, receipt, { amount_usdc: options.priceUsdc });
      logger.info(line, "request");
    });
    return id;
  };
}

/** The route pattern of a request path (query left out), or "other": bounded label values. */
function routeOf(url: string | undefined, routes: ReadonlySet<string>): string {
  if (url === undefined) return "other";
  const query = url.indexOf("?");
  const path = query < 0 ? url : url.slice(0, query);
  return routes.has(path) ? path : (routeOfPath(path, [...routes]) ?? "other");
}

/**
 * What a paid answer's receipt says (PAYMENT-RESPONSE, or X-PAYMENT-RESPONSE for x402 v1): the
 * public settlement the client received, never the proof it sent.
 */
function paidReceipt(
  req: IncomingMessage,
  res: ServerResponse,
): Record<string, unknown> | undefined {
  for (const name of RECEIPT_HEADERS) {
    const value = res.getHeader(name);
    if (typeof value !== "string") continue;
    try {
      const settled = JSON.parse(Buffer.from(value, "base64").toString("utf8")) as Record<
        string,
        unknown
      >;
      return {
        x402_version: req.headers["payment-signature"] ? "2" : "1",
        network: settled.network,
        payer: settled.payer,
        transaction: settled.transaction,
      };
    } catch {
      return undefined;
    }
  }
  return undefined;
}
