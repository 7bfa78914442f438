import { HTTPException } from "hono/http-exception";
import { afterAll, beforeAll, expect, it } from "vitest";
import { jsonAnswer, toResponse, type PaidRoute, type RouteCall } from "../../src/payment/index.js";
import { SnapshotError } from "../../src/snapshot/result.js";
import { ScriptedEngine, sampleResult, serveApp, type Served } from "./helpers.js";

/**
 * The contract the x402 layer relies on: the input check first, then the paid call handed over
 * typed — the target parsed once, the body's exact bytes, the work to run — with no value passed
 * through the framework's context.
 */
const seen: Array<{ call: RouteCall; ran?: number }> = [];
const payment: PaidRoute = {
  async answer(c, call) {
    const proof = c.req.header("payment-signature");
    if (proof === "malformed") throw new HTTPException(422, { message: "malformed payment" });
    if (proof !== "paid") {
      return toResponse(jsonAnswer(402, {}, { "payment-required": "challenge" }));
    }
    const entry: (typeof seen)[number] = { call };
    seen.push(entry);
    const answer = await call.run(c.req.raw.signal);
    entry.ran = answer.status;
    if (answer.status !== 200) return toResponse(answer);
    return toResponse({ ...answer, headers: { ...answer.headers, "payment-response": "settled" } });
  },
};

const engine = new ScriptedEngine(async (raw) => {
  if (raw.includes("fails")) throw new SnapshotError("unreachable", "no such host", raw);
  return sampleResult(raw);
});
let served: Served;
beforeAll(async () => {
  served = await serveApp({ engine, payment });
});
afterAll(() => served.stop());

const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(`${served.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

it("invalid input is answered before payment is asked for", async () => {
  const res = await post(JSON.stringify({ url: "ftp://example.com/" }));
  expect(res.status).toBe(400);
  expect(res.headers.get("payment-required")).toBeNull();
  expect(seen).toEqual([]);
});

it("valid input without payment gets the challenge and never reaches the engine", async () => {
  const res = await post(JSON.stringify({ url: "https://example.com/" }));
  expect(res.status).toBe(402);
  expect(res.headers.get("payment-required")).toBe("challenge");
  expect(engine.calls).toEqual([]);
});

it("paid: the call carries the parsed target and the body's exact bytes", async () => {
  // Spacing and key order a re-serialisation would lose: the bytes a payment id is bound to.
  const body = '{ "url" :"Example.COM/path",  "note": "é" }';
  const res = await post(body, { "payment-signature": "paid" });
  expect(res.status).toBe(200);
  expect(res.headers.get("payment-response")).toBe("settled");
  expect(engine.calls).toEqual(["Example.COM/path"]);
  const { call, ran } = seen.at(-1)!;
  expect(call.target.raw).toBe("Example.COM/path");
  expect(call.target.url.href).toBe("https://example.com/path");
  expect(Buffer.from(call.body).equals(Buffer.from(body, "utf8"))).toBe(true);
  expect(ran).toBe(200);
});

it("paid but the snapshot fails: the work answers 400 and nothing is settled", async () => {
  const res = await post(JSON.stringify({ url: "https://fails.example/" }), {
    "payment-signature": "paid",
  });
  expect(res.status).toBe(400);
  expect(res.headers.get("payment-response")).toBeNull();
  expect(seen.at(-1)?.ran).toBe(400);
});

it("an HTTPException from the payment keeps its status and becomes JSON", async () => {
  const res = await post(JSON.stringify({ url: "https://example.com/" }), {
    "payment-signature": "malformed",
  });
  expect(res.status).toBe(422);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ error: "malformed payment", code: "request_refused" });
});
