/**
 * The unpaid-challenge fast path must be invisible: every request it takes gets the answer the
 * Hono route would have given, byte for byte apart from Date and header order. Two real servers
 * share one app and one payment gate (against a real HTTP /supported); one has the fast path in
 * front. The same raw requests go to both.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createApp,
  createChallengeFastPath,
  type NodeFront,
  MAX_BODY_BYTES,
  startServer,
  type RunningServer,
} from "../../src/http/index.js";
import { createPaymentGate, type PaymentGate } from "../../src/payment/index.js";
import { createUrlPolicy } from "../../src/snapshot/index.js";
import {
  DEFAULT_PORTS,
  ScriptedEngine,
  rawRequest,
  sampleResult,
  type RawResponse,
} from "./helpers.js";
import { exactKinds } from "../fixtures/supported-facilitator.js";
import { MemoryPaymentRecordStore } from "../../src/store/index.js";

let facilitator: Server;
let gate: PaymentGate;
let engine: ScriptedEngine;
let plain: RunningServer;
let fronted: RunningServer;
/** Requests the fast path answered itself. */
let taken = 0;

beforeAll(async () => {
  facilitator = createServer((req, res) => {
    if (req.url !== "/supported") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        kinds: exactKinds(["eip155:84532"]),
        extensions: [],
        signers: {},
      }),
    );
  });
  await new Promise<void>((resolve) => facilitator.listen(0, "127.0.0.1", resolve));
  gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    networks: ["eip155:84532"],
    priceUsdc: "0.05",
    facilitatorUrl: `http://127.0.0.1:${(facilitator.address() as AddressInfo).port}`,
    // One resource URL for both servers, so their challenges are comparable.
    publicUrl: "https://api.example",
    log: () => {},
  });
  expect(await gate.warmUp()).toBe(true);
  engine = new ScriptedEngine(async (raw) => sampleResult(raw));
  const urlPolicy = createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] });
  const app = createApp({ engine, urlPolicy, payment: gate.route, log: () => {} });
  const fastPath = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });
  const counted: NodeFront = (req, res) => {
    const answered = fastPath(req, res);
    if (answered) taken++;
    return answered;
  };
  const config = { host: "127.0.0.1", port: 0 };
  plain = await startServer({ config, app });
  fronted = await startServer({ config, app, front: counted });
});

afterAll(async () => {
  await Promise.all([plain.close(100), fronted.close(100)]);
  await new Promise<void>((resolve) => facilitator.close(() => resolve()));
});

function post(body: string, headers: Record<string, string> = {}, path = "/v1/snapshot"): string {
  const lines = Object.entries({
    host: "127.0.0.1",
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    ...headers,
  })
    .filter(([, value]) => value !== "")
    .map(([name, value]) => `${name}: ${value}\r\n`);
  return `POST ${path} HTTP/1.1\r\n${lines.join("")}connection: close\r\n\r\n${body}`;
}

/** Status line, headers (lower-case names, sorted, without Date) and body. */
function comparable(response: RawResponse): { head: string[]; body: string } {
  const [statusLine, ...lines] = response.headers.split("\r\n");
  const headers = lines
    .map((line) => {
      const colon = line.indexOf(":");
      return `${line.slice(0, colon).toLowerCase()}:${line.slice(colon + 1).trim()}`;
    })
    .filter((line) => !line.startsWith("date:"))
    .sort();
  return { head: [statusLine!, ...headers], body: response.body };
}

/** Sends the request to both servers; returns both answers and whether the fast path took it. */
async function both(
  request: string,
): Promise<{ viaHono: RawResponse; fronted: RawResponse; fast: boolean }> {
  const viaHono = await rawRequest(plain.port, [request]);
  const before = taken;
  const answer = await rawRequest(fronted.port, [request]);
  return { viaHono, fronted: answer, fast: taken > before };
}

const VALID = JSON.stringify({ url: "https://example.com/" });

describe("unpaid challenge fast path", () => {
  it("leaves the first unpaid request to Hono, which prepares the challenge, then serves it", async () => {
    // A Host no other test uses: the challenge cache is keyed by the request URL.
    const request = post(VALID, { host: "fresh.example" });
    const before = taken;
    const first = await rawRequest(fronted.port, [request]);
    expect(first.status).toBe(402);
    expect(taken).toBe(before);
    const second = await both(request);
    expect(second.fast).toBe(true);
    expect(second.fronted.status).toBe(402);
    expect(comparable(second.fronted)).toEqual(comparable(second.viaHono));
    expect(second.fronted.headers).toMatch(/\r\npayment-required: \S{100,}/i);
    expect(second.fronted.headers).toMatch(/\r\naccess-control-expose-headers: PAYMENT-REQUIRED/i);
    expect(engine.calls).toEqual([]);
  });

  it("remembers input verdicts per content type and body without mixing them up", async () => {
    const blocked = JSON.stringify({ url: "http://127.0.0.1/" });
    // Each request twice (the second from the remembered verdict), interleaved, and more
    // distinct bodies than are remembered at once: every answer stays the route's own.
    const requests = [
      post(VALID),
      post(blocked),
      post(VALID, { "content-type": "text/plain" }),
      post(blocked, { "content-type": "text/plain" }),
      ...Array.from({ length: 300 }, (_, i) =>
        post(
          JSON.stringify({
            url: i % 2 ? `https://site${i}.example/` : `http://10.0.0.${i % 250}/`,
          }),
        ),
      ),
    ];
    for (const request of [...requests, ...requests.slice(0, 8), ...requests.slice(-8)]) {
      const answers = await both(request);
      expect(answers.fast).toBe(true);
      expect(comparable(answers.fronted)).toEqual(comparable(answers.viaHono));
    }
  }, 60_000);

  // Every docs/contract.md §3 refusal the route gives, given by the fast path identically.
  const refused: Array<[string, string]> = [
    ["a blocked address", post(JSON.stringify({ url: "http://127.0.0.1/" }))],
    ["localhost", post(JSON.stringify({ url: "http://localhost:8080/" }))],
    ["a port that is not allowed", post(JSON.stringify({ url: "https://example.com:22/" }))],
    ["a non-http scheme", post(JSON.stringify({ url: "file:///etc/passwd" }))],
    ["credentials", post(JSON.stringify({ url: "https://a:b@example.com/" }))],
    ["a one-label host", post(JSON.stringify({ url: "https://intranet/" }))],
    ["an empty url", post(JSON.stringify({ url: "  " }))],
    ["a missing url", post(JSON.stringify({ link: "https://example.com/" }))],
    ["a url that is not a string", post(JSON.stringify({ url: 42 }))],
    ["an array body", post(JSON.stringify(["https://example.com/"]))],
    ["invalid JSON", post('{"url": "https://example.com/"')],
    ["an empty body", post("")],
    ["a form body", post(VALID, { "content-type": "application/x-www-form-urlencoded" })],
    [
      "a blocked address in a text/plain body",
      post(JSON.stringify({ url: "http://[::1]/" }), { "content-type": "text/plain" }),
    ],
    [
      "two Content-Types",
      post(VALID, { "content-type": "application/json\r\ncontent-type: text/plain" }),
    ],
    [
      "a url over 2048 characters",
      post(JSON.stringify({ url: `https://example.com/${"a".repeat(2050)}` })),
    ],
  ];
  it.each(refused)("answers %s with the route's own 400", async (_what, request) => {
    await both(post(VALID)); // the challenge is prepared whatever ran before
    const { viaHono, fronted: answer, fast } = await both(request);
    expect(viaHono.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error_type: expect.any(String) });
    expect(comparable(answer)).toEqual(comparable(viaHono));
    expect(fast).toBe(true);
  });

  // docs/contract.md §3.1: a body labelled text/plain, or not labelled, is read as JSON.
  it.each([
    ["text/plain", post(VALID, { "content-type": "text/plain; charset=utf-8" })],
    ["no Content-Type", post(VALID, { "content-type": "" })],
  ])(
    "answers a valid body sent as %s with the challenge, as the route does",
    async (_what, request) => {
      await both(post(VALID));
      const { viaHono, fronted: answer, fast } = await both(request);
      expect(viaHono.status).toBe(402);
      expect(comparable(answer)).toEqual(comparable(viaHono));
      expect(fast).toBe(true);
    },
  );

  it("serves a valid body at exactly the size limit, and leaves a larger declared body to Hono", async () => {
    const prefix = '{"url":"https://example.com/","pad":"';
    const atLimit = prefix + "x".repeat(MAX_BODY_BYTES - prefix.length - 2) + '"}';
    const fits = await both(post(atLimit));
    expect(fits.fast).toBe(true);
    expect(fits.fronted.status).toBe(402);
    const tooLarge = await both(post(atLimit + " "));
    expect(tooLarge.fast).toBe(false);
    expect(tooLarge.fronted.status).toBe(400);
    expect(comparable(tooLarge.fronted)).toEqual(comparable(tooLarge.viaHono));
  });

  // What the fast path must not take: the answer could differ, or it is not the unpaid challenge.
  const passed: Array<[string, string, number]> = [
    ["a payment header", post(VALID, { "payment-signature": "not-a-payment" }), 402],
    ["a v1 payment header", post(VALID, { "x-payment": "not-a-payment" }), 402],
    ["a browser (Accept: text/html)", post(VALID, { accept: "text/html" }), 402],
    ["a query string", post(VALID, {}, "/v1/snapshot?x=1"), 402],
    ["a trailing slash", post(VALID, {}, "/v1/snapshot/"), 404],
    ["an upper-case Host", post(VALID, { host: "LOCALHOST" }), 402],
    [
      "a chunked body",
      `POST /v1/snapshot HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n${VALID.length.toString(16)}\r\n${VALID}\r\n0\r\n\r\n`,
      402,
    ],
  ];
  it.each(passed)("leaves %s to Hono", async (_what, request, status) => {
    await both(post(VALID));
    const { viaHono, fronted: answer, fast } = await both(request);
    expect(fast).toBe(false);
    expect(answer.status).toBe(status);
    expect(comparable(answer)).toEqual(comparable(viaHono));
  });

  /** A proof-shaped PAYMENT-SIGNATURE for the offered requirements, its payload carrying `inner` (raw JSON). */
  async function proofWith(inner: string): Promise<string> {
    const challenge = await rawRequest(plain.port, [post(VALID)]);
    const required = /\r\npayment-required: (\S+)/i.exec(challenge.headers)![1]!;
    const accepted = (
      JSON.parse(Buffer.from(required, "base64").toString("utf8")) as { accepts: unknown[] }
    ).accepts[0];
    const authorization = {
      from: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
      to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      value: "50000",
      validAfter: "0",
      validBefore: "9999999999",
      nonce: `0x${"11".repeat(32)}`,
    };
    const text = JSON.stringify({
      x402Version: 2,
      accepted,
      payload: { signature: `0x${"22".repeat(65)}`, authorization, inner: "@@" },
    }).replace('"@@"', inner);
    return Buffer.from(text).toString("base64");
  }

  // A proof nobody can read is the payer's problem (402 saying why), not the facilitator's (503).
  const unreadable: Array<[string, () => Promise<string>]> = [
    ["garbage", () => Promise.resolve("%%%garbage%%%")],
    ["base64 of non-JSON", () => Promise.resolve(Buffer.from("hello").toString("base64"))],
    [
      "JSON of the wrong shape",
      () => Promise.resolve(Buffer.from('{"x402Version":2,"payload":1}').toString("base64")),
    ],
    ["a proof nesting 5000 levels (13 KB)", () => proofWith("[".repeat(5000) + "]".repeat(5000))],
    ["a proof nesting 500 levels", () => proofWith("[".repeat(500) + "]".repeat(500))],
  ];
  it.each(unreadable)(
    "answers %s with a 402 that says the proof is unreadable",
    async (_what, make) => {
      await both(post(VALID)); // the challenge is prepared, so the fast path is live
      const header = await make();
      const {
        viaHono,
        fronted: answer,
        fast,
      } = await both(post(VALID, { "payment-signature": header }));
      expect(fast).toBe(false);
      for (const response of [viaHono, answer]) {
        expect(response.status).toBe(402);
        expect(JSON.parse(response.body)).toEqual({
          error: expect.stringMatching(/^Unreadable payment proof: /),
        });
      }
      expect(comparable(answer)).toEqual(comparable(viaHono));
      expect(engine.calls).toEqual([]);
    },
  );

  it("answers two PAYMENT-SIGNATURE headers with a 402 that says the proof is unreadable", async () => {
    await both(post(VALID));
    const {
      viaHono,
      fronted: answer,
      fast,
    } = await both(post(VALID, { "payment-signature": "YWJj\r\npayment-signature: ZGVm" }));
    expect(fast).toBe(false);
    expect(answer.status).toBe(402);
    expect(JSON.parse(answer.body)).toEqual({ error: expect.stringMatching(/not base64/) });
    expect(comparable(answer)).toEqual(comparable(viaHono));
  });

  it("leaves GET /health and every other route to Hono", async () => {
    const before = taken;
    const health = await rawRequest(fronted.port, [
      "GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
    ]);
    expect(health.status).toBe(200);
    expect(taken).toBe(before);
  });
});
