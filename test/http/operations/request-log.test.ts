/**
 * The request log of a real server (createApp behind startServer with the request observer),
 * written by the service's pino logger into a captured stream: request ids, route patterns,
 * LOG_LEVEL, and the pino safety net for keys and proof headers.
 */
import { hostname } from "node:os";
import { afterEach, expect, it } from "vitest";
import { createLogger } from "../../../src/cli/serve/logger.js";
import type { LogLevel } from "../../../src/config.js";
import {
  ROUTES,
  createApp,
  createChallengeFastPath,
  createRequestObserver,
  startServer,
  type NodeFront,
  type RequestObserver,
  type RunningServer,
} from "../../../src/http/index.js";
import { createPaymentGate } from "../../../src/payment/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "../helpers.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let server: RunningServer | undefined;

afterEach(async () => {
  await server?.close(1_000);
  server = undefined;
});

async function serve(level: LogLevel): Promise<{ url: string; lines: string[] }> {
  const lines: string[] = [];
  const logger = createLogger(level, { write: (line: string) => lines.push(line) });
  const app = createApp({
    engine: new ScriptedEngine((url) => Promise.resolve(sampleResult(url))),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
  });
  const observe = createRequestObserver({ routes: ROUTES, logger });
  server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, observe });
  return { url: server.url, lines };
}

const parsed = (lines: string[]) =>
  lines.map((line) => JSON.parse(line) as Record<string, unknown>);

it("one JSON line per request: the instance, id, method, route pattern, status, duration; the id echoed", async () => {
  const { url, lines } = await serve("info");
  const health = await fetch(`${url}/health`, { headers: { "x-request-id": "lb-7f3a.2_x" } });
  expect(health.headers.get("x-request-id")).toBe("lb-7f3a.2_x");
  await fetch(`${url}/openapi.json?download=1`);
  await fetch(`${url}/admin/secret-path`);
  // A path with a parameter is labelled by its pattern, never by the id it carries.
  await fetch(`${url}/v1/snapshots/secret-id-0123456789abcdef`);
  expect(parsed(lines)).toEqual([
    {
      level: "info",
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      pid: process.pid,
      hostname: hostname(),
      msg: "request",
      req_id: "lb-7f3a.2_x",
      method: "GET",
      route: "/health",
      status: 200,
      duration_ms: expect.any(Number),
    },
    expect.objectContaining({ route: "/openapi.json", status: 200, req_id: expect.any(String) }),
    expect.objectContaining({ route: "other", status: 404 }),
    expect.objectContaining({ route: "/v1/snapshots/{snapshot_id}", status: 404 }),
  ]);
  expect(lines.join("")).not.toContain("secret-path");
  expect(lines.join("")).not.toContain("secret-id");
});

it("a request id that is too long or not plain is replaced by a generated one", async () => {
  const { url, lines } = await serve("info");
  for (const sent of ["a".repeat(65), "has space", "semi;colon", 'quote"d']) {
    const response = await fetch(`${url}/health`, { headers: { "x-request-id": sent } });
    const id = response.headers.get("x-request-id");
    expect(id).toMatch(UUID);
    expect(lines.join("")).not.toContain(sent);
  }
  const kept = await fetch(`${url}/health`, { headers: { "x-request-id": "a".repeat(64) } });
  expect(kept.headers.get("x-request-id")).toBe("a".repeat(64));
  // Two requests without an id get two ids.
  const ids = parsed(lines).map((line) => line.req_id);
  expect(new Set(ids).size).toBe(ids.length);
});

it("LOG_LEVEL=warn silences request lines; warnings still go out", async () => {
  const { url, lines } = await serve("warn");
  expect((await fetch(`${url}/health`)).status).toBe(200);
  expect((await fetch(`${url}/nope`)).status).toBe(404);
  expect(lines).toEqual([]);
  const logger = createLogger("warn", { write: (line: string) => lines.push(line) });
  logger.info("not shown");
  logger.warn("x402 facilitator answers now");
  expect(parsed(lines)).toEqual([
    {
      level: "warn",
      time: expect.any(String),
      pid: process.pid,
      hostname: hostname(),
      msg: "x402 facilitator answers now",
    },
  ]);
});

it("keys and proof headers passed to the logger by mistake are censored", () => {
  const lines: string[] = [];
  const logger = createLogger("info", { write: (line: string) => lines.push(line) });
  const proof = Buffer.from(JSON.stringify({ x402Version: 2, payload: "signed" })).toString(
    "base64",
  );
  const key = `0x${"ab".repeat(32)}`;
  logger.info({ headers: { "payment-signature": proof, "x-payment": proof } }, "request");
  logger.info({ req: { headers: { authorization: "Bearer token-123456" } }, privateKey: key });
  const all = lines.join("");
  expect(all).not.toContain(proof);
  expect(all).not.toContain(key);
  expect(all).not.toContain("token-123456");
  expect(all).toContain("[redacted]");
});

it("on a terminal the same lines are readable text, not JSON", () => {
  const lines: string[] = [];
  const logger = createLogger("info", { isTTY: true, write: (line: string) => lines.push(line) });
  logger.info({ req_id: "t-1", route: "/health", status: 200 }, "request");
  expect(lines).toHaveLength(1);
  // eslint-disable-next-line no-control-regex
  const plain = lines[0]!.replace(/\u001b\[[0-9;]*m/g, "");
  expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request\n/);
  expect(plain).toContain('req_id: "t-1"');
  expect(plain).toContain("status: 200");
  expect(plain.startsWith("{")).toBe(false);
});

it("a client that leaves before any answer is logged and counted as 499", async () => {
  const lines: string[] = [];
  const logger = createLogger("info", { write: (line: string) => lines.push(line) });
  let arrived: () => void = () => {};
  const started = new Promise<void>((resolve) => (arrived = resolve));
  const app = createApp({
    // A snapshot that never ends until its client is gone.
    engine: new ScriptedEngine(() => {
      arrived();
      return new Promise(() => {});
    }),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
  });
  const counted: Array<[string, number]> = [];
  const observe = createRequestObserver({
    routes: ROUTES,
    logger,
    metrics: { request: (route, status) => counted.push([route, status]) },
  });
  server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, observe });
  const abort = new AbortController();
  const request = fetch(`${server.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-request-id": "gone" },
    body: JSON.stringify({ url: "https://example.com" }),
    signal: abort.signal,
  }).catch(() => undefined);
  await started;
  abort.abort();
  await request;
  for (let i = 0; i < 100 && lines.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(parsed(lines)).toEqual([
    expect.objectContaining({ req_id: "gone", route: "/v1/snapshot", status: 499 }),
  ]);
  expect(counted).toEqual([["/v1/snapshot", 499]]);
});

it("the fast path's 402 echoes the request id, and nothing is set on a response before its answer", async () => {
  const facilitator = await startSupportedFacilitator(["eip155:84532"]);
  try {
    const lines: string[] = [];
    const logger = createLogger("info", { write: (line: string) => lines.push(line) });
    const gate = createPaymentGate({
      store: new MemoryPaymentRecordStore(),
      payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      networks: ["eip155:84532"],
      priceUsdc: "0.05",
      facilitatorUrl: facilitator.url,
      log: () => {},
    });
    expect(await gate.warmUp()).toBe(true);
    const urlPolicy = createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] });
    const app = createApp({
      engine: new ScriptedEngine((url) => Promise.resolve(sampleResult(url))),
      urlPolicy,
      payment: gate.route,
      log: () => {},
    });
    const fastPath = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });
    let fast = 0;
    const front: NodeFront = (req, res, id) => {
      const taken = fastPath(req, res, id);
      if (taken) fast++;
      return taken;
    };
    // A header set before the answer's own makes Node's writeHead set every header one by one.
    const setEarly: string[][] = [];
    const observer = createRequestObserver({ routes: ROUTES, logger });
    const observe: RequestObserver = (req, res) => {
      const id = observer(req, res);
      setEarly.push(res.getHeaderNames());
      return id;
    };
    server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front, observe });
    const unpaid = (headers: Record<string, string>) =>
      fetch(`${server!.url}/v1/snapshot`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ url: "https://example.com" }),
      });
    const throughHono = await unpaid({ "x-request-id": "first-402" });
    expect(throughHono.status).toBe(402);
    expect(throughHono.headers.get("x-request-id")).toBe("first-402");
    const sent = await unpaid({ "x-request-id": "fast-402" });
    const made = await unpaid({});
    expect(fast).toBe(2);
    for (const answer of [sent, made]) {
      expect(answer.status).toBe(402);
      expect(answer.headers.get("payment-required")).toBe(
        throughHono.headers.get("payment-required"),
      );
    }
    expect(sent.headers.get("x-request-id")).toBe("fast-402");
    const generated = made.headers.get("x-request-id");
    expect(generated).toMatch(UUID);
    expect(setEarly).toEqual([[], [], []]);
    for (let i = 0; i < 100 && lines.length < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(parsed(lines).map((line) => [line.req_id, line.status])).toEqual([
      ["first-402", 402],
      ["fast-402", 402],
      [generated, 402],
    ]);
  } finally {
    await facilitator.close();
  }
});
