/**
 * The 402 that /openapi.json shows (challengeExample) is the challenge the route really sends:
 * the same offer through the SDK, against a facilitator's /supported.
 */
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import {
  EXAMPLE_OFFER_JWS,
  challengeExample,
} from "../../../src/payment/x402/challenge-example.js";
import { createPaymentGate } from "../../../src/payment/index.js";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { paidRouteHandler } from "../../fixtures/paid-route-handler.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

async function realChallenge(networks: string[], devnet: boolean) {
  const facilitator = await startSupportedFacilitator(networks);
  closers.push(() => facilitator.close());
  const gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: PAY_TO,
    networks: networks as `${string}:${string}`[],
    priceUsdc: "0.05",
    facilitatorUrl: facilitator.url,
    publicUrl: "https://api.example",
    devnet,
    log: () => {},
  });
  expect(await gate.warmUp()).toBe(true);
  const app = new Hono();
  app.post(
    "/v1/snapshot",
    paidRouteHandler(gate.route, () => Promise.resolve({ status: 200, body: {} })),
  );
  const res = await app.request("https://api.example/v1/snapshot", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com" }),
  });
  expect(res.status).toBe(402);
  return { header: res.headers.get("payment-required") ?? "", body: (await res.json()) as unknown };
}

/** The example with each signed offer's JWS (signed per challenge) as any string. */
function anySignature<T>(example: T): T {
  return JSON.parse(JSON.stringify(example), (key, value: unknown) =>
    key === "signature" && value === EXAMPLE_OFFER_JWS ? expect.any(String) : value,
  ) as T;
}

describe("challengeExample", () => {
  it.each([
    [["eip155:84532"], true],
    [["eip155:8453", "eip155:84532"], false],
  ])("is the route's own 402 for %j (devnet %s)", async (networks, devnet) => {
    const real = await realChallenge(networks, devnet);
    const example = challengeExample(
      { payTo: PAY_TO, networks: networks as `${string}:${string}`[], priceUsdc: "0.05", devnet },
      "https://api.example",
    );
    expect(decodePaymentRequiredHeader(real.header)).toEqual(anySignature(example.v2));
    expect(real.body).toEqual(anySignature(example.v1));
  });
});
