/**
 * The edges of the public listener (docs/operations.md "The load balancer checks GET /ready",
 * "Time-outs"; docs/http-api.md "Host and request target"): every route answers HTTP/1.0
 * without Host, an absolute-form target never changes the URL the page and the challenge
 * name, and a client that trickles its headers or body is cut by the server. Real servers
 * (the app behind the unpaid-challenge fast path, a payment gate against a real /supported),
 * spoken to over raw TCP sockets.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createApp,
  createChallengeFastPath,
  startServer,
  type RunningServer,
  type ServerTimeouts,
} from "../../src/http/index.js";
import { createPaymentGate, type PaymentGate } from "../../src/payment/index.js";
import { createUrlPolicy } from "../../src/snapshot/index.js";
import { startSupportedFacilitator } from "../fixtures/supported-facilitator.js";
import {
  DEFAULT_PORTS,
  ScriptedEngine,
  rawRequest,
  sampleResult,
  type RawResponse,
} from "./helpers.js";
import { MemoryPaymentRecordStore } from "../../src/store/index.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>>;
const opened: RunningServer[] = [];

beforeAll(async () => {
  facilitator = await startSupportedFacilitator(["eip155:84532"]);
});

afterAll(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close(100)));
  await facilitator.close();
});

/** One service as `serve` wires it: a gate, the app, the fast path in front. */
async function service(
  opts: { publicUrl?: string; timeouts?: ServerTimeouts } = {},
): Promise<RunningServer & { gate: PaymentGate }> {
  const gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: PAY_TO,
    networks: ["eip155:84532"],
    priceUsdc: "0.05",
    facilitatorUrl: facilitator.url,
    ...(opts.publicUrl !== undefined && { publicUrl: opts.publicUrl }),
    log: () => {},
  });
  expect(await gate.warmUp()).toBe(true);
  const urlPolicy = createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] });
  const app = createApp({
    engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
    urlPolicy,
    payment: gate.route,
    ...(opts.publicUrl !== undefined && { publicUrl: opts.publicUrl }),
    readinessChecks: [{ name: "facilitator", check: () => gate.facilitatorReady() }],
    log: () => {},
  });
  const front = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });
  const server = await startServer({
    config: { host: "127.0.0.1", port: 0 },
    app,
    front,
    ...(opts.timeouts && { timeouts: opts.timeouts }),
  });
  opened.push(server);
  return { ...server, gate };
}

const BODY = JSON.stringify({ url: "https://example.com/" });

/** HTTP/1.0 without Host, as HAProxy's plain `option httpchk GET /ready` sends it. */
function http10(method: string, path: string, body?: string): string {
  const head = body
    ? `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`
    : "";
  return `${method} ${path} HTTP/1.0\r\n${head}\r\n${body ?? ""}`;
}

/** The challenge's resource URL, from the v2 header and the v1 body. */
function resources(answer: RawResponse): { v2: string; v1: string } {
  const header = /\r\npayment-required:\s*([^\r\n]+)/i.exec(answer.headers)?.[1];
  if (header === undefined) throw new Error(`no PAYMENT-REQUIRED in ${answer.headers}`);
  const v2 = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as {
    resource: { url: string };
  };
  const v1 = JSON.parse(answer.body) as { accepts: Array<{ resource: string }> };
  return { v2: v2.resource.url, v1: v1.accepts[0]!.resource };
}

describe("HTTP/1.0 without Host", () => {
  it("every route answers; the 402 names the listener's own URL", async () => {
    const served = await service();
    const ask = (method: string, path: string, body?: string) =>
      rawRequest(served.port, [http10(method, path, body)], true);
    for (const path of [
      "/health",
      "/ready",
      "/demo/snapshot",
      "/openapi.json",
      "/",
      "/reference",
    ]) {
      const answer = await ask("GET", path);
      expect(answer.status, path).toBe(200);
      expect(answer.headers).toMatch(/^HTTP\/1\.1 200 /);
    }
    expect((await ask("HEAD", "/ready")).status).toBe(200);
    // Twice: the first 402 comes from the route, the next from the prepared fast path.
    for (let i = 0; i < 2; i++) {
      const challenge = await ask("POST", "/v1/snapshot", BODY);
      expect(challenge.status).toBe(402);
      expect(resources(challenge)).toEqual({
        v2: `${served.url}/v1/snapshot`,
        v1: `${served.url}/v1/snapshot`,
      });
    }
    // The page's pay samples name the same URL.
    expect((await ask("GET", "/")).body).toContain(`${served.url}/v1/snapshot`);
  });

  it("with PUBLIC_URL the 402 and the page name it", async () => {
    const served = await service({ publicUrl: "https://api.example.org/secsnap" });
    const challenge = await rawRequest(served.port, [http10("POST", "/v1/snapshot", BODY)], true);
    expect(challenge.status).toBe(402);
    expect(resources(challenge).v2).toBe("https://api.example.org/secsnap/v1/snapshot");
    const page = await rawRequest(served.port, [http10("GET", "/")], true);
    expect(page.body).toContain("https://api.example.org/secsnap/v1/snapshot");
    expect(page.body).not.toContain("127.0.0.1");
  });

  it("an HTTP/1.1 request without Host is still a 400 (RFC 9112 requires it)", async () => {
    const served = await service();
    const answer = await rawRequest(
      served.port,
      ["GET /health HTTP/1.1\r\nconnection: close\r\n\r\n"],
      true,
    );
    expect(answer.status).toBe(400);
  });
});

describe("absolute-form request targets", () => {
  const absolute = (method: string, target: string, port: number, body?: string) => {
    const head = body
      ? `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`
      : "";
    return `${method} ${target} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n${head}connection: close\r\n\r\n${body ?? ""}`;
  };

  it("the target's authority changes neither the page nor the 402: Host (or PUBLIC_URL) does", async () => {
    const served = await service();
    const page = await rawRequest(
      served.port,
      [absolute("GET", "https://evil.example/", served.port)],
      true,
    );
    expect(page.status).toBe(200);
    expect(page.body).not.toContain("evil.example");
    expect(page.body).toContain(`${served.url}/v1/snapshot`);
    for (let i = 0; i < 2; i++) {
      const challenge = await rawRequest(
        served.port,
        [absolute("POST", "https://evil.example/v1/snapshot", served.port, BODY)],
        true,
      );
      expect(challenge.status).toBe(402);
      expect(challenge.headers + challenge.body).not.toContain("evil.example");
      expect(resources(challenge).v2).toBe(`${served.url}/v1/snapshot`);
    }
    // The path and query of the target still route the request.
    const health = await rawRequest(
      served.port,
      [absolute("GET", "http://evil.example:9999/health?x=1", served.port)],
      true,
    );
    expect(health.status).toBe(200);
    const openApi = await rawRequest(
      served.port,
      [absolute("GET", "https://evil.example/openapi.json", served.port)],
      true,
    );
    expect(openApi.body).not.toContain("evil.example");
  });
});

/** Writes `head`, then one byte of `trickle` every `everyMs` until the server ends the connection. */
function trickle(
  port: number,
  head: string,
  trickled: string,
  everyMs: number,
): Promise<{ status: number | undefined; closed: "end" | "reset"; sentAll: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = (closed: "end" | "reset") => {
      clearInterval(timer);
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(data)?.[1];
      resolve({
        status: status === undefined ? undefined : Number(status),
        closed,
        sentAll: sent >= trickled.length,
      });
    };
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (data += d));
    socket.on("end", () => done("end"));
    socket.on("error", () => done("reset"));
    socket.on("connect", () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < trickled.length && socket.writable) socket.write(trickled[sent++]!);
      }, everyMs);
    });
  });
}

describe("server time-outs", () => {
  // Short bounds, so the test runs in seconds; the defaults are SERVER_TIMEOUTS.
  const timeouts: ServerTimeouts = {
    headersTimeoutMs: 1_000,
    requestTimeoutMs: 2_000,
    keepAliveTimeoutMs: 1_000,
  };

  it("a body that trickles is cut (408 or closed) before it is all sent", async () => {
    const served = await service({ timeouts });
    const body = BODY.padEnd(200, " ");
    const head = `POST /v1/snapshot HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
    // 200 bytes at one per 100 ms would take 20 s: ten times the bound.
    const outcome = await trickle(served.port, head, body, 100);
    expect(outcome.sentAll).toBe(false);
    if (outcome.status !== undefined) expect(outcome.status).toBe(408);
  });

  it("headers that trickle are cut (408 or closed) before they are all sent", async () => {
    const served = await service({ timeouts });
    const head = `GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ${"a".repeat(200)}\r\n\r\n`;
    const outcome = await trickle(served.port, "", head, 100);
    expect(outcome.sentAll).toBe(false);
    if (outcome.status !== undefined) expect(outcome.status).toBe(408);
  });

  it("an answer that takes longer than the request bound, once the request is in, is not cut", async () => {
    // The engine answers after three times the request bound, as a slow settlement would.
    const slow = new ScriptedEngine(async (raw) => {
      await new Promise((resolve) => setTimeout(resolve, 3 * timeouts.requestTimeoutMs));
      return sampleResult(raw);
    });
    // Without a payment gate in the way: the app served unpaid, as in tests of the route.
    const app = createApp({
      engine: slow,
      urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
      log: () => {},
    });
    const direct = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, timeouts });
    opened.push(direct);
    const answer = await rawRequest(
      direct.port,
      [
        `POST /v1/snapshot HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${BODY.length}\r\nconnection: close\r\n\r\n${BODY}`,
      ],
      true,
    );
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ requested_url: "https://example.com/" });
  });
});
