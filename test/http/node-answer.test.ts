/**
 * sendNodeAnswer hands Node the answer's headers in Node's own header slot, checked once, so
 * the long PAYMENT-REQUIRED value is not checked again on every request; what goes on the wire
 * must be what a plain writeHead would send, Node's connection handling included.
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
const seen: ServerResponse[] = [];
let port: number;
const server = createServer((req, res) => {
  seen.push(res);
  req.resume();
  req.on("end", () => {
    if (req.url === "/preset") res.setHeader("x-preset", "1");
    sendNodeAnswer(res, answer, req.url === "/no-id" ? undefined : "req-1");
  });
});

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
    // The headers went through Node's own slot (where setHeader keeps them), not writeHead's
    // argument, which Node checks character by character on every call.
    expect(seen.at(-1)!.getHeader("payment-required")).toBe(LONG);
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

  it("checks an answer's headers as Node would, once", () => {
    const bad: Answer = { status: 200, headers: { "x-bad": "a\r\nb" }, body: "" };
    const res = { writeHead: () => res, end: () => res } as unknown as ServerResponse;
    expect(() => sendNodeAnswer(res, bad)).toThrow(/Invalid character in header content/);
  });
});
