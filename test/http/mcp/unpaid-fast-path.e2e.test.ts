/**
 * The unpaid `tools/call snapshot` fast path of POST /mcp (src/http/mcp/unpaid-fast-path.ts):
 * its answer is the SDK's, byte for byte, and every other request still goes through the SDK.
 * One payment gate on a real devnet, two services on it — the fast path on (as served) and off
 * (every request through the SDK's transport and McpServer) — asked the same requests.
 */
import { request as httpRequest } from "node:http";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/devnet.js";
import { createApp, startServer, type RunningServer } from "../../../src/http/index.js";
import { McpUnpaidFastPath } from "../../../src/http/mcp/unpaid-fast-path.js";
import { createPaymentGate, type PaymentGate } from "../../../src/payment/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";
import { startLocalTarget, type LocalTarget } from "../../fixtures/paid-service.js";

let devnet: Devnet;
let target: LocalTarget;
let gate: PaymentGate;
let fast: RunningServer;
let sdk: RunningServer;
/** A bare route answering with the fast path alone, saying whether it answered. */
let bare: RunningServer;

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  target = await startLocalTarget();
  const urlPolicy = createUrlPolicy({
    allowedPorts: new Set([target.port]),
    allowCidrs: ["127.0.0.0/8"],
  });
  gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: devnet.payTo,
    networks: [devnet.network],
    priceUsdc: "0.05",
    facilitatorUrl: devnet.facilitatorUrl,
    devnet: true,
    supportedRetryMs: 0,
    log: () => {},
  });
  const app = (mcpUnpaidFastPath: boolean) =>
    createApp({
      engine: target.engine,
      urlPolicy,
      payment: gate.route,
      mcpPayment: gate.mcp,
      mcpUnpaidFastPath,
      log: () => {},
    });
  const config = { host: "127.0.0.1", port: 0 };
  fast = await startServer({ config, app: app(true) });
  sdk = await startServer({ config, app: app(false) });
  const path = new McpUnpaidFastPath(urlPolicy, () => gate.mcp.unpaidResult());
  const route = new Hono().post("/mcp", async (c) => {
    const taken = await path.answer(c);
    if ("answer" in taken) return c.json({ fast: true, answer: await taken.answer.text() });
    return c.json({ fast: false, body: taken.body });
  });
  bare = await startServer({ config, app: route });
}, 120_000);

afterAll(async () => {
  await bare?.close(1_000);
  await fast?.close(1_000);
  await sdk?.close(1_000);
  gate?.close();
  await target?.close();
  await devnet?.close();
});

const HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
};

function toolsCall(url: string, id: unknown = 1): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "snapshot", arguments: { url } },
  };
}

interface Asked {
  body: string;
  headers?: Record<string, string | undefined>;
}

function post(server: RunningServer, asked: Asked): Promise<Response> {
  const headers = Object.fromEntries(
    Object.entries({ ...HEADERS, ...asked.headers }).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  return fetch(`${server.url}/mcp`, { method: "POST", headers, body: asked.body });
}

/** A POST whose body is sent chunked (no Content-Length); its answer's body. */
function chunked(server: RunningServer, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${server.url}/mcp`, { method: "POST", headers: HEADERS }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve(text)).on("error", reject);
    });
    req.on("error", reject);
    req.write(body.slice(0, 10));
    req.end(body.slice(10));
  });
}

/** Status, content type and body, as sent. */
async function seen(response: Response): Promise<[number, string | null, string]> {
  return [response.status, response.headers.get("content-type"), await response.text()];
}

/** The unpaid calls the fast path takes. */
function wellFormed(): Asked[] {
  return [
    { body: JSON.stringify(toolsCall(target.url)) },
    { body: JSON.stringify(toolsCall(target.url, "req-7")) },
    { body: JSON.stringify(toolsCall(target.url, 0)) },
    { body: JSON.stringify(toolsCall(target.url, Number.MAX_SAFE_INTEGER)) },
    // A bare host (no scheme), as the tool takes it.
    { body: JSON.stringify(toolsCall(`127.0.0.1:${target.port}`)) },
    { body: ` ${JSON.stringify(toolsCall(target.url, 2), null, 2)}\n` },
    { body: JSON.stringify(toolsCall(target.url)), headers: { "mcp-protocol-version": undefined } },
    {
      body: JSON.stringify(toolsCall(target.url)),
      headers: { "mcp-protocol-version": LATEST_PROTOCOL_VERSION },
    },
    {
      // Keys in another order.
      body: `{"params":{"arguments":{"url":${JSON.stringify(target.url)}},"name":"snapshot"},"method":"tools/call","id":3,"jsonrpc":"2.0"}`,
    },
  ];
}

/** Requests the fast path must leave to the SDK: each is some other answer, or another path. */
function others(): Asked[] {
  const call = toolsCall(target.url);
  const params = call.params as Record<string, unknown>;
  return [
    { body: `{"jsonrpc":"2.0","id":1,` },
    { body: "" },
    { body: JSON.stringify([call]) },
    { body: JSON.stringify({ ...call, jsonrpc: "1.0" }) },
    { body: JSON.stringify({ ...call, id: 1.5 }) },
    { body: JSON.stringify({ ...call, id: null }) },
    { body: JSON.stringify({ ...call, id: true }) },
    { body: JSON.stringify({ ...call, extra: 1 }) },
    { body: JSON.stringify({ jsonrpc: "2.0", method: "tools/call", params }) },
    { body: JSON.stringify({ ...call, method: "tools/list", params: {} }) },
    { body: JSON.stringify({ ...call, params: { ...params, name: "demo_snapshot" } }) },
    { body: JSON.stringify({ ...call, params: { ...params, name: "nope" } }) },
    {
      body: JSON.stringify({
        ...call,
        params: { ...params, arguments: { url: target.url, paymentAuthorization: "x" } },
      }),
    },
    { body: JSON.stringify({ ...call, params: { ...params, arguments: { url: 42 } } }) },
    { body: JSON.stringify({ ...call, params: { ...params, arguments: {} } }) },
    { body: JSON.stringify({ ...call, params: { ...params, _meta: {} } }) },
    { body: JSON.stringify({ ...call, params: { ...params, _meta: { progressToken: 5 } } }) },
    {
      body: JSON.stringify({
        ...call,
        params: { ...params, _meta: { "x402/payment": "not-a-proof" } },
      }),
    },
    { body: JSON.stringify(toolsCall("not a url at all")) },
    { body: JSON.stringify(toolsCall("http://169.254.169.254/latest/meta-data")) },
    { body: JSON.stringify(toolsCall("")) },
    { body: JSON.stringify(call), headers: { accept: "application/json" } },
    { body: JSON.stringify(call), headers: { accept: undefined } },
    { body: JSON.stringify(call), headers: { "content-type": "text/plain" } },
    { body: JSON.stringify(call), headers: { "content-type": "application/json; charset=utf-8" } },
    { body: JSON.stringify(call), headers: { "mcp-protocol-version": "1999-01-01" } },
    // The current revision's: its answers carry resultType and the server's identity.
    modernCall(target.url),
    { body: JSON.stringify(call), headers: MODERN_HEADERS },
  ];
}

const MODERN = "2026-07-28";
const MODERN_HEADERS = {
  "mcp-protocol-version": MODERN,
  "mcp-method": "tools/call",
  "mcp-name": "snapshot",
};

/** The unpaid call in the 2026-07-28 revision: its `_meta` envelope and headers. */
function modernCall(url: string): Asked {
  const call = toolsCall(url);
  const params = call.params as Record<string, unknown>;
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  return {
    body: JSON.stringify({ ...call, params: { ...params, _meta } }),
    headers: MODERN_HEADERS,
  };
}

describe("POST /mcp's unpaid tools/call fast path", () => {
  beforeAll(async () => {
    // The first unpaid call builds the challenge (through the SDK); from then on it is prepared.
    await (await post(sdk, { body: JSON.stringify(toolsCall(target.url)) })).text();
    expect(gate.mcp.unpaidResult()).toBeDefined();
  });

  it("takes the well-formed unpaid snapshot call", async () => {
    for (const asked of wellFormed()) {
      const answer = (await (await post(bare, asked)).json()) as { fast: boolean };
      expect(answer.fast, asked.body).toBe(true);
    }
  });

  it("answers it byte for byte as the SDK's McpServer does", async () => {
    for (const asked of wellFormed()) {
      const viaSdk = await seen(await post(sdk, asked));
      expect(viaSdk[0]).toBe(200);
      expect(viaSdk[2]).toContain("x402/error");
      expect(await seen(await post(fast, asked)), asked.body).toEqual(viaSdk);
      const bareAnswer = (await (await post(bare, asked)).json()) as { answer: string };
      expect(bareAnswer.answer).toBe(viaSdk[2]);
    }
  });

  it("leaves every other request to the SDK, with its body as read", async () => {
    for (const asked of others()) {
      const answer = (await (await post(bare, asked)).json()) as {
        fast: boolean;
        body?: { read: boolean; parsed?: boolean; value?: unknown; text?: string };
      };
      expect(answer.fast, asked.body).toBe(false);
      const { body } = answer;
      if (body?.read && body.parsed) expect(body.value).toEqual(JSON.parse(asked.body));
      if (body?.read && !body.parsed) expect(body.text).toBe(asked.body);
    }
  });

  it("answers every other request exactly as the SDK alone does", async () => {
    for (const asked of others()) {
      const viaSdk = await seen(await post(sdk, asked));
      expect(await seen(await post(fast, asked)), asked.body).toEqual(viaSdk);
    }
  });

  it("leaves the current revision's unpaid call to the SDK, which answers it with resultType", async () => {
    const asked = modernCall(target.url);
    const [status, type, text] = await seen(await post(fast, asked));
    expect([status, type]).toEqual([200, "application/json"]);
    const { result } = JSON.parse(text) as { result: Record<string, unknown> };
    expect(result).toMatchObject({ resultType: "complete", isError: true });
    expect(result.structuredContent).toEqual(gate.mcp.unpaidResult()?.structuredContent);
    expect(await seen(await post(sdk, asked))).toEqual([status, type, text]);
  });

  it("gives an invalid URL the SnapshotError, never a PaymentRequired", async () => {
    const response = await post(fast, { body: JSON.stringify(toolsCall("not a url at all")) });
    const { result } = (await response.json()) as {
      result: { isError: boolean; structuredContent: Record<string, unknown> };
    };
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ error_type: "invalid_url" });
    expect(result.structuredContent).not.toHaveProperty("accepts");
  });

  it("leaves a body it may not read whole (no or a large Content-Length) unread", async () => {
    const big = JSON.stringify({ ...toolsCall(target.url), pad: "x".repeat(20_000) });
    const answer = (await (await post(bare, { body: big })).json()) as {
      fast: boolean;
      body: { read: boolean };
    };
    expect(answer).toEqual({ fast: false, body: { read: false } });
    expect(await seen(await post(fast, { body: big }))).toEqual(
      await seen(await post(sdk, { body: big })),
    );
    // Chunked, no Content-Length: the same well-formed call, left to the SDK unread.
    const body = JSON.stringify(toolsCall(target.url));
    const viaBare = JSON.parse(await chunked(bare, body)) as { fast: boolean };
    expect(viaBare).toEqual({ fast: false, body: { read: false } });
    expect(await chunked(fast, body)).toBe(await chunked(sdk, body));
  });
});
