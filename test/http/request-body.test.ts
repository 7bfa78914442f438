import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { readBodyText } from "../../src/http/request-body.js";
import { startServer } from "../../src/http/index.js";

/** An app that reports what readBodyText made of the body (limit 16 bytes), its bytes counted. */
function echoApp(): Hono {
  const app = new Hono();
  app.post("/", async (c) => {
    const read = await readBodyText(c, 16);
    return c.json(read.ok ? { ...read, bytes: read.bytes.byteLength } : read);
  });
  return app;
}

const cases: [string, string, unknown][] = [
  ["a body within the limit", "0123456789", { ok: true, text: "0123456789", bytes: 10 }],
  [
    "a body exactly at the limit",
    "0123456789abcdef",
    { ok: true, text: "0123456789abcdef", bytes: 16 },
  ],
  ["a body one byte over", "0123456789abcdefX", { ok: false, reason: "too_large" }],
  ["multi-byte UTF-8", "é€😀", { ok: true, text: "é€😀", bytes: 9 }],
  ["an empty body", "", { ok: true, text: "", bytes: 0 }],
];

// The same rules on both paths: the Node request (the service) and the WHATWG body (elsewhere).
describe("readBodyText on the WHATWG body (app.request)", () => {
  it.each(cases)("%s", async (_name, body, expected) => {
    const res = await echoApp().request("/", { method: "POST", body });
    expect(await res.json()).toEqual(expected);
  });

  it("a streamed body that passes the limit is cut off", async () => {
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode("0123456789")); // never ends by itself
      },
    });
    const res = await echoApp().request("/", {
      method: "POST",
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(await res.json()).toEqual({ ok: false, reason: "too_large" });
  });
});

describe("readBodyText on the Node request (@hono/node-server)", () => {
  it.each(cases)("%s", async (_name, body, expected) => {
    const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app: echoApp() });
    try {
      const res = await fetch(server.url, { method: "POST", body });
      expect(await res.json()).toEqual(expected);
    } finally {
      await server.close(1000);
    }
  });

  it("a declared Content-Length over the limit is refused without reading", async () => {
    const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app: echoApp() });
    try {
      // fetch declares the body's length itself; a second, hand-set Content-Length would be
      // a duplicate header, refused by the undici version loaded beside Node's own.
      const res = await fetch(server.url, { method: "POST", body: "x".repeat(1_000_000) });
      expect(await res.json()).toEqual({ ok: false, reason: "too_large" });
    } finally {
      await server.close(1000);
    }
  });
});
