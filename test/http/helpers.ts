import { connect } from "node:net";
import { createApp, startServer, type RunningServer } from "../../src/http/index.js";
import type { PaidRoute } from "../../src/payment/index.js";
import {
  createUrlPolicy,
  type SnapshotEngine,
  type SnapshotTarget,
} from "../../src/snapshot/index.js";
import type { SnapshotResult } from "../../src/snapshot/result.js";

export const DEFAULT_PORTS = new Set([80, 443, 8080, 8443]);

/**
 * An engine for HTTP-layer tests that must control the engine's answer (errors, drift) or prove
 * the engine was never reached. Tests of the real engine behind the API live in api-live.test.ts.
 */
export class ScriptedEngine implements SnapshotEngine {
  readonly calls: string[] = [];
  constructor(private readonly answer: (rawUrl: string) => Promise<SnapshotResult>) {}
  /** Records the input as submitted (a parsed target's `raw`). */
  snapshot(target: SnapshotTarget | string): Promise<SnapshotResult> {
    const rawUrl = typeof target === "string" ? target : target.raw;
    this.calls.push(rawUrl);
    return this.answer(rawUrl);
  }
  async close(): Promise<void> {}
}

export function sampleResult(rawUrl: string): SnapshotResult {
  return {
    requested_url: rawUrl,
    normalized_url: "https://example.com/",
    final_url: "https://example.com/",
    fetched_at: "2026-01-01T00:00:00.000Z",
    reachable: true,
    final_status_code: 200,
    redirect_count: 0,
    https_ok: true,
    hsts_present: true,
    csp_present: true,
    x_frame_options_present: true,
    x_content_type_options_present: true,
    referrer_policy_present: true,
    permissions_policy_present: true,
    security_txt_present: true,
    robots_txt_present: true,
    sitemap_xml_present: null,
    notes: ["sitemap.xml could not be checked."],
    checks: {
      https: true,
      hsts: true,
      csp: true,
      x_frame_options: true,
      x_content_type_options: true,
      referrer_policy: true,
      permissions_policy: true,
      security_txt: true,
      robots_txt: true,
      sitemap_xml: null,
    },
    findings: [],
    score: 100,
    grade: "A+",
    tls: null,
    dns: null,
    cross_origin: null,
  };
}

export interface Served extends RunningServer {
  logged: Array<{ message: string; error: unknown }>;
  stop(): Promise<void>;
}

/** The app behind a real listening HTTP server on 127.0.0.1 with an OS-picked port. */
export async function serveApp(opts: {
  engine: SnapshotEngine;
  payment?: PaidRoute;
  allowCidrs?: string[];
  allowedPorts?: ReadonlySet<number>;
}): Promise<Served> {
  const logged: Served["logged"] = [];
  const app = createApp({
    engine: opts.engine,
    urlPolicy: createUrlPolicy({
      allowedPorts: opts.allowedPorts ?? DEFAULT_PORTS,
      allowCidrs: opts.allowCidrs ?? [],
    }),
    ...(opts.payment && { payment: opts.payment }),
    log: (message, error) => logged.push({ message, error }),
  });
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
  return { ...server, logged, stop: () => server.close(1_000) };
}

export interface RawResponse {
  status: number;
  headers: string;
  body: string;
}

/**
 * Sends bytes as they are over TCP: fetch() cannot send a lying Content-Length or an unfinished
 * chunked body. `keepOpen` leaves our side open after writing, like a client that stalls.
 */
export function rawRequest(
  port: number,
  chunks: Array<string | Buffer>,
  keepOpen = false,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    const finish = () => {
      const headerEnd = data.indexOf("\r\n\r\n");
      if (headerEnd < 0) return false;
      const headers = data.slice(0, headerEnd);
      const lengthMatch = /\r\ncontent-length:\s*(\d+)/i.exec(headers);
      const body = data.slice(headerEnd + 4);
      if (lengthMatch && Buffer.byteLength(body) < Number(lengthMatch[1])) return false;
      resolve({ status: Number(headers.split(" ")[1]), headers, body });
      socket.destroy();
      return true;
    };
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      data += d;
      finish();
    });
    socket.on("end", () => {
      if (!finish()) reject(new Error(`incomplete response: ${JSON.stringify(data)}`));
    });
    // The server may close while we still write (it does not want the rest): not an error here.
    socket.on("error", (err) => {
      if (!finish()) reject(err);
    });
    socket.on("connect", () => {
      for (const chunk of chunks) socket.write(chunk);
      if (!keepOpen) socket.end();
    });
  });
}
