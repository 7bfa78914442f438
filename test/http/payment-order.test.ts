import type { MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AppEnv, SnapshotInput } from "../../src/http/index.js";
import { SnapshotError } from "../../src/snapshot/result.js";
import { ScriptedEngine, sampleResult, serveApp, type Served } from "./helpers.js";

/**
 * The contract the x402 layer relies on: validateInput → payment → snapshot, with the validated
 * input in the context and the final status visible after next().
 */
const seen: Array<{ input: SnapshotInput; statusAfter: number }> = [];
const payment: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header("payment-signature") === "malformed") {
    throw new HTTPException(422, { message: "malformed payment" });
  }
  if (c.req.header("payment-signature") !== "paid") {
    return c.json({}, 402, { "PAYMENT-REQUIRED": "challenge" });
  }
  const input = c.get("snapshotInput");
  await next();
  seen.push({ input, statusAfter: c.res.status });
  if (c.res.status === 200) c.header("PAYMENT-RESPONSE", "settled");
};

const engine = new ScriptedEngine(async (raw) => {
  if (raw.includes("fails")) throw new SnapshotError("unreachable", "no such host", raw);
  return sampleResult(raw);
});
let served: Served;
beforeAll(async () => {
  served = await serveApp({ engine, paymentMiddleware: payment });
});
afterAll(() => served.stop());

const post = (url: unknown, headers: Record<string, string> = {}) =>
  fetch(`${served.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url }),
  });

it("invalid input is answered before payment is asked for", async () => {
  const res = await post("ftp://example.com/");
  expect(res.status).toBe(400);
  expect(res.headers.get("payment-required")).toBeNull();
  expect(seen).toEqual([]);
});

it("valid input without payment gets the challenge and never reaches the engine", async () => {
  const res = await post("https://example.com/");
  expect(res.status).toBe(402);
  expect(res.headers.get("payment-required")).toBe("challenge");
  expect(engine.calls).toEqual([]);
});

it("paid: the middleware sees the parsed input and settles on the 200", async () => {
  const res = await post("Example.COM/path", { "payment-signature": "paid" });
  expect(res.status).toBe(200);
  expect(res.headers.get("payment-response")).toBe("settled");
  expect(engine.calls).toEqual(["Example.COM/path"]);
  const last = seen.at(-1);
  expect(last?.input.raw).toBe("Example.COM/path");
  expect(last?.input.url.href).toBe("https://example.com/path");
  expect(last?.statusAfter).toBe(200);
});

it("paid but the snapshot fails: the middleware sees 400 and does not settle", async () => {
  const res = await post("https://fails.example/", { "payment-signature": "paid" });
  expect(res.status).toBe(400);
  expect(res.headers.get("payment-response")).toBeNull();
  expect(seen.at(-1)?.statusAfter).toBe(400);
});

it("an HTTPException from the payment middleware keeps its status and becomes JSON", async () => {
  const res = await post("https://example.com/", { "payment-signature": "malformed" });
  expect(res.status).toBe(422);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ error: "malformed payment", code: "request_refused" });
});
