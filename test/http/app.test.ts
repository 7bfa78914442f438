import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DemoSnapshotResultSchema,
  MAX_BODY_BYTES,
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "../../src/http/index.js";
import { SnapshotError } from "../../src/snapshot/result.js";
import { ScriptedEngine, rawRequest, sampleResult, serveApp, type Served } from "./helpers.js";

const engine = new ScriptedEngine(async (raw) => sampleResult(raw));
let served: Served;

beforeAll(async () => {
  served = await serveApp({ engine });
});
afterAll(() => served.stop());

function expectJson(res: Response) {
  expect(res.headers.get("content-type")).toMatch(/^application\/json(;\s*charset=utf-8)?$/i);
}

async function postSnapshot(body: string, contentType = "application/json") {
  return fetch(`${served.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": contentType },
    body,
  });
}

describe("free endpoints", () => {
  it("GET /health answers ok and the version, never cached", async () => {
    const res = await fetch(`${served.url}/health`);
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(await res.json()).toEqual({ status: "ok", version: "1.0.0" });
  });

  it("GET /demo/snapshot is the fixed, cacheable demo report with an ETag", async () => {
    const res = await fetch(`${served.url}/demo/snapshot`);
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    const body: unknown = await res.json();
    const demo = DemoSnapshotResultSchema.parse(body);
    expect(demo._demo).toBe(true);
    expect(demo.reachable).toBe(true);
    expect(demo.https_ok).toBe(true);
    expect(demo.redirect_count).toBe(0);

    const again = await fetch(`${served.url}/demo/snapshot`);
    expect(await again.json()).toEqual(body);
    const etag = res.headers.get("etag");
    expect(etag).toBeTruthy();
    const revalidated = await fetch(`${served.url}/demo/snapshot`, {
      headers: { "if-none-match": etag as string },
    });
    expect(revalidated.status).toBe(304);
  });

  it("GET /openapi.json is cacheable JSON with info.version 1.0.0", async () => {
    const res = await fetch(`${served.url}/openapi.json`);
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    const doc = (await res.json()) as { openapi: string; info: { version: string } };
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.version).toBe("1.0.0");
  });

  it("HEAD on a GET endpoint answers like GET without a body", async () => {
    const res = await fetch(`${served.url}/health`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });
});

describe("unknown paths and methods", () => {
  // "/" is the page for people now (test/http/page/home.test.ts).
  it.each(["/index.html", "/v1", "/v1/snapshot/extra", "/v2/snapshot", "/HEALTH", "/%zz"])(
    "%s is 404 JSON",
    async (path) => {
      const res = await fetch(`${served.url}${path}`);
      expect(res.status).toBe(404);
      expectJson(res);
      expect(await res.json()).toEqual({ error: "not found", code: "not_found" });
    },
  );

  it.each([
    ["GET", "/v1/snapshot", /POST/],
    ["PUT", "/v1/snapshot", /POST/],
    ["DELETE", "/v1/snapshot", /POST/],
    ["POST", "/health", /GET/],
    ["POST", "/demo/snapshot", /GET/],
    ["PATCH", "/openapi.json", /GET/],
  ])("%s %s is 405 JSON with Allow", async (method, path, allow) => {
    const res = await fetch(`${served.url}${path}`, { method });
    expect(res.status).toBe(405);
    expectJson(res);
    expect(res.headers.get("allow")).toMatch(allow);
    const body = (await res.json()) as { error: string };
    expect(body.error).toContain(method);
  });
});

describe("CORS for browser x402 clients", () => {
  it("answers the preflight for POST /v1/snapshot with the payment headers allowed", async () => {
    const res = await fetch(`${served.url}/v1/snapshot`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,payment-signature",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-methods")).toContain("POST");
    const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    for (const header of ["content-type", "payment-signature", "x-payment", "sign-in-with-x"]) {
      expect(allowed.split(",")).toContain(header);
    }
  });

  it("allows every header the official @x402/fetch client sends on its paid retry", async () => {
    // The real client, given a real-shaped challenge, signs locally; the retry it sends is
    // recorded, and its header names are what a browser would ask the preflight for.
    const challenge = {
      x402Version: 2,
      error: "Payment required",
      resource: { url: `${served.url}/v1/snapshot`, mimeType: "application/json" },
      accepts: [
        {
          scheme: "exact",
          network: "eip155:84532",
          amount: "50000",
          asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
          payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
          maxTimeoutSeconds: 300,
          extra: { name: "USDC", version: "2" },
        },
      ],
    };
    const retries: Headers[] = [];
    const recording = async (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      if (request.headers.has("payment-signature")) {
        retries.push(request.headers);
        return new Response("{}", { status: 200 });
      }
      return new Response("{}", {
        status: 402,
        headers: {
          "PAYMENT-REQUIRED": Buffer.from(JSON.stringify(challenge)).toString("base64"),
        },
      });
    };
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(generatePrivateKey()) });
    const paid = await wrapFetchWithPayment(recording, client)(`${served.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: "https://example.com" }),
    });
    expect(paid.status).toBe(200);
    expect(retries).toHaveLength(1);
    const sent = [...retries[0]!.keys()];
    expect(sent).toContain("payment-signature");

    const res = await fetch(`${served.url}/v1/snapshot`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": sent.join(","),
      },
    });
    expect(res.status).toBe(204);
    const allowed = (res.headers.get("access-control-allow-headers") ?? "")
      .toLowerCase()
      .split(",");
    for (const header of sent) expect(allowed).toContain(header);
  });

  it("exposes PAYMENT-REQUIRED and PAYMENT-RESPONSE on real answers", async () => {
    const res = await fetch(`${served.url}/v1/snapshot`, {
      method: "POST",
      headers: { origin: "https://app.example", "content-type": "application/json" },
      body: JSON.stringify({ url: "" }),
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toUpperCase();
    expect(exposed.split(",")).toEqual(
      expect.arrayContaining(["PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "RETRY-AFTER"]),
    );
  });

  it.each([
    ["a bare OPTIONS", {}],
    ["a preflight", { origin: "https://app.example", "access-control-request-method": "POST" }],
  ])("%s on an unknown path is 404 JSON, not a preflight answer", async (_name, headers) => {
    const res = await fetch(`${served.url}/nope`, { method: "OPTIONS", headers });
    expect(res.status).toBe(404);
    expectJson(res);
    expect(await res.json()).toEqual({ error: "not found", code: "not_found" });
  });
});

describe("POST /v1/snapshot input (docs/contract.md §3): always 400, never the engine", () => {
  const long = "https://example.com/" + "a".repeat(2048);
  const cases: Array<[string, string, string, string?]> = [
    // name, body, expected requested_url, content type
    ["malformed JSON", '{"url": "https://example.com/"', ""],
    ["empty body", "", ""],
    ["JSON array", '["https://example.com/"]', ""],
    ["JSON string", '"https://example.com/"', ""],
    ["JSON number", "42", ""],
    ["JSON null", "null", ""],
    ["url missing", '{"href": "https://example.com/"}', ""],
    ["url is a number", '{"url": 42}', ""],
    ["url is an object", '{"url": {"href": "https://example.com/"}}', ""],
    ["url is an array", '{"url": ["https://example.com/"]}', ""],
    ["url is null", '{"url": null}', ""],
    ["url is empty", '{"url": ""}', ""],
    ["url is whitespace", '{"url": "   \\t "}', "   \t "],
    ["url over 2048 characters", JSON.stringify({ url: long }), long],
    ["unicode garbage", '{"url": "💥 not a url"}', "💥 not a url"],
    ["single-label unicode host", '{"url": "💥"}', "💥"],
    ["ftp scheme", '{"url": "ftp://example.com/"}', "ftp://example.com/"],
    ["userinfo", '{"url": "https://user:pw@example.com/"}', "https://user:pw@example.com/"],
    ["gopher to loopback", '{"url": "gopher://127.0.0.1/"}', "gopher://127.0.0.1/"],
    [
      "multipart content type",
      '{"url": "https://example.com/"}',
      "https://example.com/",
      "multipart/form-data; boundary=x",
    ],
    [
      "form content type",
      "url=https%3A%2F%2Fexample.com%2F",
      "",
      "application/x-www-form-urlencoded",
    ],
    [
      "JSON-ish content type",
      '{"url": "https://example.com/"}',
      "https://example.com/",
      "application/jsonx",
    ],
  ];

  it.each(cases)("%s → invalid_url", async (_name, body, requestedUrl, contentType) => {
    const before = engine.calls.length;
    const res = await postSnapshot(body, contentType);
    expect(res.status).toBe(400);
    expectJson(res);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const error = SnapshotErrorBodySchema.parse(await res.json());
    expect(error.error_type).toBe("invalid_url");
    expect(error.requested_url).toBe(requestedUrl);
    expect(error.error.length).toBeGreaterThan(0);
    expect(engine.calls.length).toBe(before);
  });

  it.each([
    "http://127.0.0.1/",
    "localhost",
    "http://foo.localhost./",
    "http://[::1]/",
    "http://10.0.0.1/",
    "https://example.com:22/",
    "http://0x7f000001/",
  ])("%s → ssrf", async (url) => {
    const before = engine.calls.length;
    const res = await postSnapshot(JSON.stringify({ url }));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error_type: "ssrf", requested_url: url });
    expect(engine.calls.length).toBe(before);
  });

  // docs/contract.md §3.1: some x402 clients drop the caller's Content-Type on the paid retry.
  it.each([
    ["text/plain (what fetch sends for a string body)", "text/plain;charset=UTF-8"],
    ["no Content-Type at all", undefined],
  ])("reads the body as JSON with %s", async (_name, contentType) => {
    const before = engine.calls.length;
    const res = await fetch(`${served.url}/v1/snapshot`, {
      method: "POST",
      ...(contentType !== undefined && { headers: { "content-type": contentType } }),
      // Bytes, not a string: fetch labels a string body text/plain, bytes not at all.
      body: new TextEncoder().encode(JSON.stringify({ url: "https://example.com/" })),
    });
    expect(res.status).toBe(200);
    expect(engine.calls.slice(before)).toEqual(["https://example.com/"]);
  });

  it("accepts application/json with a charset and ignores other fields", async () => {
    const before = engine.calls.length;
    const res = await postSnapshot(
      JSON.stringify({ url: "https://bücher.example/", extra: [1, 2, 3] }),
      "Application/JSON; charset=UTF-8",
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const result = SnapshotResultSchema.parse(await res.json());
    // The engine gets the string exactly as submitted; it reports it as requested_url.
    expect(engine.calls.slice(before)).toEqual(["https://bücher.example/"]);
    expect(result.requested_url).toBe("https://bücher.example/");
  });

  it("rejects a body over 16 KiB sent with an honest Content-Length", async () => {
    const body = JSON.stringify({ url: "https://example.com/", pad: "x".repeat(MAX_BODY_BYTES) });
    const res = await postSnapshot(body);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error_type: "invalid_url", requested_url: "" });
  });

  it("accepts a body of exactly 16 KiB", async () => {
    const prefix = '{"url":"https://example.com/","pad":"';
    const body = prefix + "x".repeat(MAX_BODY_BYTES - prefix.length - 2) + '"}';
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    const res = await postSnapshot(body);
    expect(res.status).toBe(200);
  });

  it("rejects a huge Content-Length at once, without waiting for (or buffering) the body", async () => {
    const res = await rawRequest(
      served.port,
      [
        "POST /v1/snapshot HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
          "Content-Length: 1000000000\r\n\r\n" +
          '{"url": "https://example.com/"',
      ],
      true, // the client never sends the promised gigabyte
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ error_type: "invalid_url", requested_url: "" });
  });

  it("rejects an over-long chunked body while it streams (the body never ends)", async () => {
    const chunk = "x".repeat(4096);
    const chunks = [
      "POST /v1/snapshot HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
        "Transfer-Encoding: chunked\r\n\r\n",
    ];
    for (let i = 0; i < 5; i++) chunks.push(`${(4096).toString(16)}\r\n${chunk}\r\n`);
    const res = await rawRequest(served.port, chunks, true);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ error_type: "invalid_url", requested_url: "" });
  });

  it("accepts a small chunked body", async () => {
    const json = JSON.stringify({ url: "https://example.com/" });
    const res = await rawRequest(served.port, [
      "POST /v1/snapshot HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
        "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
      `${Buffer.byteLength(json).toString(16)}\r\n${json}\r\n0\r\n\r\n`,
    ]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ requested_url: "https://example.com/" });
  });

  it("a Content-Length shorter than the data is a 400, never a report", async () => {
    const before = engine.calls.length;
    const res = await rawRequest(served.port, [
      "POST /v1/snapshot HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n" +
        "Content-Length: 5\r\nConnection: close\r\n\r\n" +
        JSON.stringify({ url: "https://example.com/" }),
    ]);
    // Either the app rejects the 5-byte body or Node's parser rejects the trailing bytes first.
    expect(res.status).toBe(400);
    expect(engine.calls.length).toBe(before);
  });
});

describe("engine outcomes through the API", () => {
  it("an engine SnapshotError is a 400 naming the submitted URL", async () => {
    const failing = new ScriptedEngine(async () => {
      throw new SnapshotError("timeout", "the target did not answer in time", "ignored");
    });
    const s = await serveApp({ engine: failing });
    try {
      const res = await fetch(`${s.url}/v1/snapshot`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: " example.com " }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        requested_url: " example.com ",
        error: "the target did not answer in time",
        error_type: "timeout",
      });
    } finally {
      await s.stop();
    }
  });

  it("an unexpected engine exception is a logged JSON 500 without a stack", async () => {
    const broken = new ScriptedEngine(async () => {
      throw new TypeError("secret internal detail");
    });
    const s = await serveApp({ engine: broken });
    try {
      const res = await fetch(`${s.url}/v1/snapshot`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: "https://example.com/" }),
      });
      expect(res.status).toBe(500);
      expectJson(res);
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: "internal error", code: "internal_error" });
      expect(text).not.toContain("secret");
      expect(s.logged.map((l) => l.error)).toEqual([expect.any(TypeError)]);
    } finally {
      await s.stop();
    }
  });

  it("a report that drifts from the schema is logged and still answered", async () => {
    const drifting = new ScriptedEngine(async (raw) => ({
      ...sampleResult(raw),
      redirect_count: -1,
    }));
    const s = await serveApp({ engine: drifting });
    try {
      const res = await fetch(`${s.url}/v1/snapshot`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: "https://example.com/" }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ redirect_count: -1 });
      expect(s.logged.map((l) => l.message)).toEqual([
        "response drifted from the SnapshotResult schema",
      ]);
    } finally {
      await s.stop();
    }
  });
});
