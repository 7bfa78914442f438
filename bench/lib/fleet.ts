/**
 * What the fleet benchmarks share: a load generator that sends bounded concurrent requests with
 * undici's raw dispatch (small client cost), proofs signed ahead of the clock, and a plain site.
 * Their redis-server is test/fixtures/redis.ts.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { performance } from "node:perf_hooks";
import type { Dispatcher, Pool } from "undici";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One request on `pool`; headers and body of the answer as strings. */
export function request(pool: Pool, options: Dispatcher.DispatchOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let status = 0;
    const headers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    pool.dispatch(options, {
      onConnect() {},
      onHeaders(statusCode, raw) {
        status = statusCode;
        const list = raw as unknown as Buffer[];
        for (let i = 0; i + 1 < list.length; i += 2) {
          headers[String(list[i]).toLowerCase()] = String(list[i + 1]);
        }
        return true;
      },
      onData(chunk) {
        chunks.push(chunk);
        return true;
      },
      onComplete: () => resolve({ status, headers, body: Buffer.concat(chunks).toString() }),
      onError: reject,
    });
  });
}

/**
 * `count` payment headers for the challenge the service answers `post` with unpaid, spread over
 * the devnet's funded payers, each a distinct authorization.
 */
export async function signProofs(
  pool: Pool,
  post: { path: string; method: "POST"; body: string },
  payerKeys: readonly Hex[],
  count: number,
): Promise<Record<string, string>[]> {
  const unpaid = await request(pool, { ...post, headers: { "content-type": "application/json" } });
  if (unpaid.status !== 402) throw new Error(`the challenge answered ${unpaid.status}`);
  const required = decodePaymentRequiredHeader(unpaid.headers["payment-required"] ?? "");
  const clients = payerKeys.map((key) => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(key) });
    return client;
  });
  const proofs: Record<string, string>[] = [];
  for (let i = 0; i < count; i++) {
    const client = clients[i % clients.length] as x402Client;
    const payload = await client.createPaymentPayload(required);
    proofs.push(new x402HTTPClient(client).encodePaymentSignatureHeader(payload));
  }
  return proofs;
}

/** One request, its body discarded unread; resolves with the status (least client work). */
export function send(pool: Pool, options: Dispatcher.DispatchOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    let status = 0;
    pool.dispatch(options, {
      onConnect() {},
      onHeaders(statusCode) {
        status = statusCode;
        return true;
      },
      onData: () => true,
      onComplete: () => resolve(status),
      onError: reject,
    });
  });
}

/** `connections` workers sending back-to-back for `ms`; requests per second and statuses. */
export async function loadFor(
  pool: Pool,
  options: Dispatcher.DispatchOptions,
  connections: number,
  ms: number,
): Promise<{ rps: number; statuses: Map<number, number> }> {
  const statuses = new Map<number, number>();
  let done = 0;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < deadline) {
        const status = await send(pool, options);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        done++;
      }
    }),
  );
  return { rps: done / ((performance.now() - started) / 1000), statuses };
}

/** A small site on `host` answering `/` with a page and some security headers; 404 otherwise. */
export async function startSite(host: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.url !== "/") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res
      .writeHead(200, {
        "content-type": "text/html",
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
      })
      .end("<!doctype html><title>site</title>");
  });
  server.keepAliveTimeout = 1_000;
  server.listen({ port: 0, host, backlog: 4096 });
  await once(server, "listening");
  return {
    port: (server.address() as { port: number }).port,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, "close");
    },
  };
}
