/**
 * sendNodeAnswer hands Node the answer's headers as one flat list through the public writeHead;
 * what goes on the wire must be the answer, its CORS headers and request id, with Node's
 * connection handling and its header checks unchanged.
 */
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendNodeAnswer } from "../../src/http/node-answer.js";
import type { Answer } from "../../src/payment/index.js";
import { rawRequest } from "./helpers.js";

const LONG = "A".repeat(3_600);
const answer: Answer = {
  status: 402,
  headers: { "content-type": "application/json", "payment-required": LONG },
  body: '{"error":"Payment required"}',
};
const bad: Answer = { status: 200, headers: { "x-bad": "a\r\nb" }, body: "" };
const OWN_CORS = ["Vary", "Origin", "Access-Control-Allow-Origin", "http://127.0.0.1:8080"];
let port: number;
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    if (req.url === "/preset") res.setHeader("x-preset", "1");
    if (req.url === "/bad") return refuseBad(res);
    if (req.url === "/own-cors") return sendNodeAnswer(res, answer, "req-1", OWN_CORS);
    sendNodeAnswer(res, answer, req.url === "/no-id" ? undefined : "req-1");
  });
});

/** Sends the answer with a header Node refuses, and says what Node threw. */
function refuseBad(res: ServerResponse): void {
  try {
    sendNodeAnswer(res, bad);
  } catch (err) {
    res.writeHead(500).end((err as Error).message);
  }
}

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const get = (path: string, version = "1.1") =>
  rawRequest(port, [`GET ${path} HTTP/${version}\r\nHost: t\r\nConnection: close\r\n\r\n`]);

function headerLines(head: string): Map<string, string> {
  const lines = head.split("\r\n").slice(1);
  return new Map(
    lines.map((line) => {
      const colon = line.indexOf(":");
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
}

describe("sendNodeAnswer", () => {
  it("sends every header, the CORS ones, the request id, Content-Length and the body", async () => {
    const res = await get("/");
    expect(res.status).toBe(402);
    const headers = headerLines(res.headers);
    expect(headers.get("payment-required")).toBe(LONG);
    expect(headers.get("content-type")).toBe("application/json");
    expect(headers.get("x-request-id")).toBe("req-1");
    expect(headers.get("access-control-allow-origin")).toBe("*");
    expect(headers.get("content-length")).toBe(String(answer.body.length));
    expect(headers.get("connection")).toBe("close");
    expect(headers.has("date")).toBe(true);
    expect(res.body).toBe(answer.body);
  });

  it("sends the CORS headers it is given in place of the production ones", async () => {
    const headers = headerLines((await get("/own-cors")).headers);
    expect(headers.get("vary")).toBe("Origin");
    expect(headers.get("access-control-allow-origin")).toBe("http://127.0.0.1:8080");
    expect(headers.has("access-control-expose-headers")).toBe(false);
    expect(headers.get("payment-required")).toBe(LONG);
  });

  it("keeps Node's connection handling: HTTP/1.0 and without a request id", async () => {
    const res = await get("/no-id", "1.0");
    expect(res.status).toBe(402);
    const headers = headerLines(res.headers);
    expect(headers.has("x-request-id")).toBe(false);
    expect(headers.get("payment-required")).toBe(LONG);
    expect(res.body).toBe(answer.body);
  });

  it("leaves headers set before it alone, and still sends the answer's", async () => {
    const res = await get("/preset");
    const headers = headerLines(res.headers);
    expect(headers.get("x-preset")).toBe("1");
    expect(headers.get("payment-required")).toBe(LONG);
    expect(res.body).toBe(answer.body);
  });

  it("leaves the header checks to Node: a header it refuses is never sent", async () => {
    const res = await get("/bad");
    expect(res.status).toBe(500);
    expect(res.body).toMatch(/Invalid character in header content \["x-bad"\]/);
    expect(headerLines(res.headers).has("x-bad")).toBe(false);
  });
});
