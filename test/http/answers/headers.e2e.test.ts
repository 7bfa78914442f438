/**
 * Every header of each kind of answer POST /v1/snapshot gives, as the client receives it over a
 * real connection (node:http's `rawHeaders`, so a value sent twice or joined shows): each name
 * once, each value exact. The service as `serve` wires it (the unpaid challenge's fast path in
 * front), paid on the real devnet; a budget of one free answer for the 429, a draining instance
 * for the 503. The answers the fast path gives (402, 400, 429) are pinned from it and from the
 * Hono route alike: a chunked body is left to the route.
 */
import { request } from "node:http";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientRateLimit, SnapshotAdmission } from "../../../src/http/index.js";
import {
  devnetGate,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  v2ProofFor,
  type CountingTarget,
  type GatedService,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";

let devnet: PaidDevnet;
let target: CountingTarget;
let service: GatedService;
let limited: GatedService;
let drained: GatedService;

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
  const common = { engine: target.engine, scope: target.scope, fastPath: true };
  service = await startGatedService({ ...common, gate: devnetGate(devnet) });
  limited = await startGatedService({
    ...common,
    gate: devnetGate(devnet),
    rateLimit: new ClientRateLimit(new RateLimiterMemory({ points: 1, duration: 60 })),
  });
  const admission = new SnapshotAdmission();
  admission.drain();
  drained = await startGatedService({ ...common, gate: devnetGate(devnet), admission });
}, 120_000);

afterAll(async () => {
  for (const s of [service, limited, drained]) await s?.close();
  await target?.close();
  await devnet?.close();
});

interface Raw {
  status: number;
  headers: [string, string][];
  body: string;
}

/** How the request body is framed: the fast path takes a Content-Length, Hono a chunked one too. */
type Framing = "length" | "chunked";

function post(
  base: string,
  body: string,
  headers: Record<string, string> = {},
  framing: Framing = "length",
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const chunked = framing === "chunked" ? { "transfer-encoding": "chunked" } : {};
    const req = request(
      `${base}/v1/snapshot`,
      { method: "POST", headers: { "content-type": "application/json", ...chunked, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const pairs: [string, string][] = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            pairs.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
          resolve({
            status: res.statusCode!,
            headers: pairs,
            body: Buffer.concat(chunks).toString(),
          });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const BROWSER = {
  accept: "text/html,application/xhtml+xml",
  "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0",
};

/** A value pinned exactly, or by its form where it changes per answer (dates, encodings). */
type Pinned = string | RegExp;

const DATE = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Headers every answer carries: CORS, the connection's, and its length. */
function common(answer: Raw): Record<string, Pinned> {
  return {
    "access-control-allow-origin": "*",
    "access-control-expose-headers":
      "PAYMENT-REQUIRED,PAYMENT-RESPONSE,X-PAYMENT-RESPONSE,Retry-After",
    date: DATE,
    connection: "keep-alive",
    "keep-alive": "timeout=5",
    "content-length": String(Buffer.byteLength(answer.body)),
  };
}

/** Each header name exactly once, and exactly these headers with these values. */
function expectHeaders(answer: Raw, status: number, pinned: Record<string, Pinned>): void {
  expect(answer.status, answer.body).toBe(status);
  const names = answer.headers.map(([name]) => name.toLowerCase());
  expect(
    names.filter((name, i) => names.indexOf(name) !== i),
    "names sent twice",
  ).toEqual([]);
  const expected = { ...common(answer), ...pinned };
  expect(names.sort()).toEqual(Object.keys(expected).sort());
  for (const [name, value] of answer.headers) {
    const want = expected[name.toLowerCase()]!;
    if (typeof want === "string") expect(value, name).toBe(want);
    else expect(value, name).toMatch(want);
  }
}

/** The decoded PAYMENT-REQUIRED of an answer (x402 v2). */
/**
 * The same request answered by the fast path and by the Hono route, each checked to be so by the
 * service's count of the fast path's answers (the fast path needs the challenge prepared first).
 */
async function fromBothPaths(
  on: GatedService,
  body: string,
  headers: Record<string, string> = {},
): Promise<Raw[]> {
  const before = on.fastAnswers;
  const fast = await post(on.url, body, headers);
  expect(on.fastAnswers, "answered by the fast path").toBe(before + 1);
  const route = await post(on.url, body, headers, "chunked");
  expect(on.fastAnswers, "answered by the route").toBe(before + 1);
  return [fast, route];
}

function requiredOf(answer: Raw): { x402Version: number; error?: string } {
  const value = answer.headers.find(([name]) => name.toLowerCase() === "payment-required")![1];
  return JSON.parse(Buffer.from(value, "base64").toString("utf8")) as {
    x402Version: number;
    error?: string;
  };
}

const JSON_TYPE = "application/json";
/** An X-PAYMENT (x402 v1) or PAYMENT-SIGNATURE (v2) that is no proof: the base64 of "not a proof". */
const NO_PROOF = "bm90IGEgcHJvb2Y=";

describe("every header of each answer, each name once and each value exact", () => {
  const body = () => JSON.stringify({ url: target.url });

  it("402 without a proof (x402 v2), for a JSON client and for a browser", async () => {
    const first = await post(service.url, body());
    // The route's first answer prepares the challenge; then the fast path's and the route's.
    for (const json of [first, ...(await fromBothPaths(service, body()))]) {
      expectHeaders(json, 402, {
        "cache-control": "no-store",
        "content-type": JSON_TYPE,
        "payment-required": BASE64,
      });
      expect(requiredOf(json)).toMatchObject({ x402Version: 2, error: "Payment required" });
    }
    // A browser gets the same challenge, the x402 v1 JSON body, labelled as JSON.
    const browser = await post(service.url, body(), BROWSER);
    expectHeaders(browser, 402, {
      "cache-control": "no-store",
      "content-type": JSON_TYPE,
      "payment-required": BASE64,
    });
    expect(JSON.parse(browser.body)).toMatchObject({
      x402Version: 1,
      accepts: [expect.anything()],
    });
  });

  it("402 to a proof it cannot read, x402 v1 (X-PAYMENT) and v2, for a JSON client and for a browser", async () => {
    for (const [header, headers] of [
      ["x-payment", {}],
      ["x-payment", BROWSER],
      ["payment-signature", {}],
      ["payment-signature", BROWSER],
    ] as const) {
      const refused = await post(service.url, body(), { [header]: NO_PROOF, ...headers });
      expectHeaders(refused, 402, {
        "cache-control": "no-store",
        "content-type": JSON_TYPE,
        "payment-required": BASE64,
      });
      expect(requiredOf(refused).error).toMatch(/^Unreadable payment proof/);
    }
  });

  it("400 for an invalid URL, from the fast path and from the route", async () => {
    await post(service.url, body());
    for (const invalid of await fromBothPaths(service, JSON.stringify({ url: "not a url" }))) {
      expectHeaders(invalid, 400, { "cache-control": "no-store", "content-type": JSON_TYPE });
    }
  });

  it("200 paid, and 409 for its payment id with another body", async () => {
    const proof = await v2ProofFor(service.url, target.url, devnet.payer(0), generatePaymentId());
    const paid = await post(service.url, body(), proof);
    expectHeaders(paid, 200, {
      "cache-control": "no-store, private",
      "content-type": JSON_TYPE,
      "payment-response": BASE64,
    });
    const conflict = await post(service.url, JSON.stringify({ url: `${target.url}?other` }), proof);
    expectHeaders(conflict, 409, { "cache-control": "no-store", "content-type": JSON_TYPE });
    expect(JSON.parse(conflict.body)).toMatchObject({ code: "payment_id_conflict" });
  });

  it("429 past the client's budget, from the fast path and from the route", async () => {
    expect((await post(limited.url, body())).status).toBe(402);
    for (const over of await fromBothPaths(limited, body())) {
      expectHeaders(over, 429, {
        "cache-control": "no-store",
        "content-type": JSON_TYPE,
        "retry-after": /^[1-9]\d*$/,
      });
      expect(JSON.parse(over.body)).toMatchObject({ code: "rate_limited" });
    }
  });

  it("503 from a draining instance", async () => {
    // A genuine proof: the slot is refused once it verified, nothing settled.
    const proof = await v2ProofFor(drained.url, target.url, devnet.payer(1));
    const draining = await post(drained.url, body(), proof);
    expectHeaders(draining, 503, {
      "cache-control": "no-store",
      "content-type": JSON_TYPE,
      "retry-after": "1",
    });
    expect(JSON.parse(draining.body)).toMatchObject({ code: "draining" });
  });
});
