/**
 * The payment gate against a scripted facilitator (a real HTTP server whose answers each test
 * chooses), for what the real devnet cannot be made to do on demand: 5xx, hangs, a verify that
 * says "valid" twice for the same proof. The full flow on chain is in devnet.e2e.test.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";
import { Hono } from "hono";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createPaymentGate, type PaymentGateOptions } from "../../src/payment/index.js";
import { demoSnapshot } from "../../src/snapshot/index.js";
import { paidRouteHandler } from "../fixtures/paid-route-handler.js";
import { exactKinds } from "../fixtures/supported-facilitator.js";
import { MemoryPaymentRecordStore, type PaymentState } from "../../src/store/index.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const BASE_SEPOLIA = "eip155:84532";
const BASE = "eip155:8453";

type Handler = (body: unknown) => { status: number; json: unknown } | "hang";

interface ScriptedFacilitator {
  url: string;
  calls: { supported: number; verify: number; settle: number };
  verify: Handler;
  settle: Handler;
  supportedUp: boolean;
  close(): Promise<void>;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let data = "";
    req.on("data", (chunk: Buffer) => (data += chunk.toString()));
    req.on("end", () => resolve(data ? JSON.parse(data) : undefined));
    req.on("error", reject);
  });
}

async function startScriptedFacilitator(networks: string[]): Promise<ScriptedFacilitator> {
  const hanging = new Set<ServerResponse>();
  const state: ScriptedFacilitator = {
    url: "",
    calls: { supported: 0, verify: 0, settle: 0 },
    supportedUp: true,
    verify: () => ({ status: 200, json: { isValid: true, payer: "0xpayer" } }),
    settle: () => ({
      status: 200,
      json: { success: true, transaction: "0x" + "ab".repeat(32), network: BASE_SEPOLIA },
    }),
    close: async () => {},
  };
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, json: unknown) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
    };
    const body = req.method === "POST" ? await readJson(req) : undefined;
    if (req.url === "/supported") {
      state.calls.supported++;
      if (!state.supportedUp) return send(500, { error: "down" });
      return send(200, {
        kinds: exactKinds(networks),
        extensions: [],
        signers: {},
      });
    }
    const handler =
      req.url === "/verify" ? state.verify : req.url === "/settle" ? state.settle : undefined;
    if (!handler) return send(404, {});
    state.calls[req.url === "/verify" ? "verify" : "settle"]++;
    const answer = handler(body);
    if (answer === "hang") {
      hanging.add(res);
      return;
    }
    send(answer.status, answer.json);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise((resolve) => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

interface Service {
  url: string;
  handlerRuns: number;
  close(): Promise<void>;
}

/** A service shaped like the real route: gate, then a handler answering 200 or 400. */
async function startService(options: PaymentGateOptions, handlerDelayMs = 0): Promise<Service> {
  const gate = createPaymentGate({ log: () => {}, ...options });
  const service: Service = { url: "", handlerRuns: 0, close: async () => {} };
  const app = new Hono();
  app.get("/health", (c) => c.json({ status: "ok" }));
  app.post(
    "/v1/snapshot",
    paidRouteHandler(gate.route, async (url) => {
      service.handlerRuns++;
      if (handlerDelayMs) await new Promise((r) => setTimeout(r, handlerDelayMs));
      if (url === "bad") {
        return { status: 400, body: { requested_url: url, error: "x", error_type: "ssrf" } };
      }
      return { status: 200, body: { requested_url: url } };
    }),
  );
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  service.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  service.close = () => new Promise((resolve) => server.close(() => resolve()));
  return service;
}

function post(service: Service, url: string, headers: Record<string, string> = {}) {
  return fetch(`${service.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url }),
  });
}

async function challengeOf(response: Response): Promise<PaymentRequired> {
  const header = response.headers.get("PAYMENT-REQUIRED");
  expect(header).toBeTruthy();
  return decodePaymentRequiredHeader(header!);
}

/** A real signed proof (offline EIP-712 signature) for the first `accepts` entry. */
async function signedHeaders(challenge: PaymentRequired): Promise<Record<string, string>> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(generatePrivateKey()) });
  const payload = await client.createPaymentPayload(challenge);
  return new x402HTTPClient(client).encodePaymentSignatureHeader(payload);
}

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close()));
});

function base(facilitatorUrl: string, extra: Partial<PaymentGateOptions> = {}): PaymentGateOptions {
  return {
    payTo: PAY_TO,
    networks: [BASE_SEPOLIA],
    priceUsdc: "0.05",
    facilitatorUrl,
    store: new MemoryPaymentRecordStore(),
    ...extra,
  };
}

describe("challenge", () => {
  it("offers one exact USDC entry per network, 50000 units, with the Bazaar description", async () => {
    const facilitator = await startScriptedFacilitator([BASE, BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { networks: [BASE, BASE_SEPOLIA] }));
    opened.push(facilitator, service);

    const response = await post(service, "https://example.com");
    expect(response.status).toBe(402);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await response.json()).toHaveProperty("error");
    const challenge = await challengeOf(response);
    expect(challenge.x402Version).toBe(2);
    expect(challenge.resource?.url).toBe(`${service.url}/v1/snapshot`);
    expect(challenge.accepts.map((a) => [a.scheme, a.network, a.amount, a.asset, a.payTo])).toEqual(
      [
        ["exact", BASE, "50000", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PAY_TO],
        ["exact", BASE_SEPOLIA, "50000", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PAY_TO],
      ],
    );
    expect(challenge.accepts.map((a) => a.extra)).toEqual([
      expect.objectContaining({ name: "USD Coin", version: "2" }),
      expect.objectContaining({ name: "USDC", version: "2" }),
    ]);
    const bazaar = challenge.extensions?.bazaar as {
      info: {
        input: { method: string; bodyType: string; body: unknown };
        output: { type: string; format: string };
      };
    };
    expect(bazaar.info.input).toMatchObject({
      method: "POST",
      bodyType: "json",
      body: { url: expect.any(String) },
    });
    expect(bazaar.info.output).toEqual({
      type: "json",
      format: expect.stringContaining("SnapshotResult") as unknown,
      example: expect.objectContaining({ grade: expect.any(String) }) as unknown,
    });
  });

  it("stays under 8 KiB with the output example and signed offers, for one network and for two", async () => {
    const facilitator = await startScriptedFacilitator([BASE, BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { networks: [BASE, BASE_SEPOLIA] }));
    const oneNetwork = await startService(base(facilitator.url));
    opened.push(facilitator, service, oneNetwork);
    // docs/contract.md §7.1: the whole header under 8 KiB, the compact example and a signed
    // offer per network included (docs/payment.md "The output example"); servers commonly cap a
    // header line at 8 KiB.
    const both = (await post(service, "https://example.com")).headers.get("payment-required");
    const one = (await post(oneNetwork, "https://example.com")).headers.get("payment-required");
    const example = (h: string | null) =>
      (decodePaymentRequiredHeader(h ?? "").extensions?.bazaar as { info: { output: object } }).info
        .output;
    expect(example(one)).toHaveProperty("example.findings");
    expect(example(both)).toHaveProperty("example.findings");
    expect(one?.length).toBeGreaterThan(0);
    expect(`payment-required: ${one}`.length).toBeLessThan(8192);
    expect(`payment-required: ${both}`.length).toBeLessThan(8192);
    console.log(`PAYMENT-REQUIRED: ${one?.length} characters (one network), ${both?.length} (two)`);
  });

  it("its Bazaar extension is valid by the SDK's own checks, names the report and shows one", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url));
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    const bazaar = challenge.extensions?.bazaar as Parameters<typeof validateDiscoveryExtension>[0];
    // What a facilitator's catalog runs on the extension before listing the resource.
    expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true });
    expect(validateDiscoveryExtensionSpec({ ...bazaar })).toMatchObject({ valid: true });
    const info = bazaar.info as {
      input: { body: unknown };
      output: { type: string; format: unknown; example: Record<string, unknown> };
    };
    expect(info.output.type).toBe("json");
    expect(info.output.format).toMatch(/^SnapshotResult: schema GET \/openapi\.json /);
    expect(info.input.body).toEqual({ url: expect.any(String) });
    // The example is the demo's report (every field), its findings cut to a few.
    const demo = demoSnapshot();
    expect(Object.keys(info.output.example)).toEqual(
      Object.keys(demo).filter((key) => !key.startsWith("_")),
    );
    expect(info.output.example.grade).toBe(demo.grade);
    expect((info.output.example.findings as unknown[]).length).toBeGreaterThan(0);
    expect((info.output.example.findings as unknown[]).length).toBeLessThan(demo.findings.length);
    // The schema the extension carries checks the output: an example that is not an object is refused.
    const noExample = {
      ...bazaar,
      info: { ...bazaar.info, output: { ...info.output, example: 1 } },
    };
    expect(validateDiscoveryExtension(noExample as unknown as typeof bazaar).valid).toBe(false);
    // The schema the extension carries checks the output too: a wrong type is refused.
    const wrong = { ...bazaar, info: { ...bazaar.info, output: { type: "json", format: 1 } } };
    expect(validateDiscoveryExtension(wrong as unknown as typeof bazaar).valid).toBe(false);
  });

  it("prices from the configured decimal amount", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { priceUsdc: "1.5" }));
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    expect(challenge.accepts[0]?.amount).toBe("1500000");
  });

  it("asks the facilitator for /supported once, not per request", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url));
    opened.push(facilitator, service);
    for (let i = 0; i < 5; i++)
      expect((await post(service, "https://example.com")).status).toBe(402);
    expect(facilitator.calls.supported).toBe(1);
    expect(facilitator.calls.verify).toBe(0);
  });
});

describe("misuse", () => {
  it("fails closed when mounted on a route it does not price", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    opened.push(facilitator);
    const gate = createPaymentGate({ log: () => {}, ...base(facilitator.url) });
    const app = new Hono();
    let ran = false;
    app.post(
      "/other",
      paidRouteHandler(gate.route, () => {
        ran = true;
        return Promise.resolve({ status: 200, body: {} });
      }),
    );
    const response = await app.request("/other", { method: "POST", body: "{}" });
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ code: "payment_failed" });
    expect(ran).toBe(false);
  });
});

describe("facilitator trouble", () => {
  it("answers 503 with Retry-After while /supported fails, and recovers without restart", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    facilitator.supportedUp = false;
    const service = await startService(base(facilitator.url, { supportedRetryMs: 0 }));
    opened.push(facilitator, service);

    const down = await post(service, "https://example.com");
    expect(down.status).toBe(503);
    expect(down.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await down.json()).toEqual({
      error: expect.stringContaining("unavailable"),
      code: "facilitator_unavailable",
    });
    expect((await fetch(`${service.url}/health`)).status).toBe(200);

    facilitator.supportedUp = true;
    expect((await post(service, "https://example.com")).status).toBe(402);
    expect(service.handlerRuns).toBe(0);
  });

  it("does not retry /supported on every request while it is down", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    facilitator.supportedUp = false;
    const service = await startService(base(facilitator.url, { supportedRetryMs: 60_000 }));
    opened.push(facilitator, service);
    for (let i = 0; i < 4; i++)
      expect((await post(service, "https://example.com")).status).toBe(503);
    expect(facilitator.calls.supported).toBe(1);
  });

  it("answers 503 when the facilitator is not listening at all", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const deadUrl = facilitator.url;
    await facilitator.close();
    const service = await startService(base(deadUrl));
    opened.push(service);
    const response = await post(service, "https://example.com");
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBeTruthy();
    expect(await response.json()).toMatchObject({ code: "facilitator_unavailable" });
  });

  it("verify failing with 500 or hanging past the timeout is 503, never the report", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { facilitatorTimeoutMs: 300 }));
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));

    facilitator.verify = () => ({ status: 500, json: { error: "boom" } });
    const failing = await post(service, "https://example.com", await signedHeaders(challenge));
    expect(failing.status).toBe(503);
    expect(await failing.json()).toMatchObject({ code: "facilitator_unavailable" });

    facilitator.verify = () => "hang";
    const slow = await post(service, "https://example.com", await signedHeaders(challenge));
    expect(slow.status).toBe(503);
    expect(slow.headers.get("retry-after")).toBeTruthy();
    expect(service.handlerRuns).toBe(0);
  });

  it("settle hanging past the timeout is 503 without the report, and the proof is freed", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(
      base(facilitator.url, { facilitatorTimeoutMs: 300, facilitatorSettleTimeoutMs: 300 }),
    );
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    const proof = await signedHeaders(challenge);

    facilitator.settle = () => "hang";
    const response = await post(service, "https://example.com", proof);
    expect(response.status).toBe(503);
    expect(await response.json()).not.toHaveProperty("requested_url");

    facilitator.settle = () => ({
      status: 200,
      json: { success: true, transaction: "0x" + "cd".repeat(32), network: BASE_SEPOLIA },
    });
    expect((await post(service, "https://example.com", proof)).status).toBe(200);
  });
});

describe("facilitator failing at settlement", () => {
  it("settle answering 500 or garbage is 503 without the report, and the proof is freed", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url));
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    const proof = await signedHeaders(challenge);

    for (const answer of [
      { status: 500, json: { error: "boom" } },
      { status: 200, json: "not a settle response" },
    ]) {
      facilitator.settle = () => answer;
      const response = await post(service, "https://example.com", proof);
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
      expect(await response.json()).toEqual({
        error: expect.any(String),
        code: "settlement_unknown",
      });
    }

    facilitator.settle = () => ({
      status: 200,
      json: { success: true, transaction: "0x" + "ef".repeat(32), network: BASE_SEPOLIA },
    });
    const paid = await post(service, "https://example.com", proof);
    expect(paid.status).toBe(200);
    expect(decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE")!).transaction).toBe(
      "0x" + "ef".repeat(32),
    );
  });
});

describe("order of work", () => {
  let facilitator: ScriptedFacilitator;
  let service: Service;
  let challenge: PaymentRequired;
  beforeAll(async () => {
    facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    service = await startService(base(facilitator.url), 50);
    challenge = await challengeOf(await post(service, "https://example.com"));
  });
  afterAll(async () => {
    await service.close();
    await facilitator.close();
  });

  it("an invalid payment is 402 and the handler never runs", async () => {
    facilitator.verify = () => ({
      status: 200,
      json: { isValid: false, invalidReason: "invalid_exact_evm_payload_signature" },
    });
    const runs = service.handlerRuns;
    const response = await post(service, "https://example.com", await signedHeaders(challenge));
    expect(response.status).toBe(402);
    expect((await challengeOf(response)).error).toBe("invalid_exact_evm_payload_signature");
    expect(service.handlerRuns).toBe(runs);
    facilitator.verify = () => ({ status: 200, json: { isValid: true, payer: "0xpayer" } });
  });

  it("a 400 answer is not settled and the same proof can be used again", async () => {
    const proof = await signedHeaders(challenge);
    const settles = facilitator.calls.settle;
    const rejected = await post(service, "bad", proof);
    expect(rejected.status).toBe(400);
    expect(rejected.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect(facilitator.calls.settle).toBe(settles);

    const paid = await post(service, "https://example.com", proof);
    expect(paid.status).toBe(200);
    expect(facilitator.calls.settle).toBe(settles + 1);
    const settlement = decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE")!);
    expect(settlement).toMatchObject({ success: true, transaction: "0x" + "ab".repeat(32) });
    expect(paid.headers.get("cache-control")).toContain("private");
  });

  it("a proof is served once, even when the facilitator would verify it again", async () => {
    const proof = await signedHeaders(challenge);
    expect((await post(service, "https://example.com", proof)).status).toBe(200);
    const again = await post(service, "https://example.com", proof);
    expect(again.status).toBe(402);
    expect((await challengeOf(again)).error).toBe("payment_already_used");
  });

  it("ten simultaneous copies of one proof: one 200, one settlement", async () => {
    const proof = await signedHeaders(challenge);
    const settles = facilitator.calls.settle;
    const statuses = await Promise.all(
      Array.from({ length: 10 }, () =>
        post(service, "https://example.com", proof).then((r) => r.status),
      ),
    );
    // The others found it in progress (409, retry) or already served (402).
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409 || s === 402)).toHaveLength(9);
    expect(facilitator.calls.settle).toBe(settles + 1);
    const again = await post(service, "https://example.com", proof);
    expect(again.status).toBe(402);
    expect((await challengeOf(again)).error).toBe("payment_already_used");
  });

  it("a settlement refused before any send answers 402, not the report", async () => {
    facilitator.settle = () => ({
      status: 200,
      json: {
        success: false,
        errorReason: "invalid_exact_evm_insufficient_balance",
        transaction: "",
        network: BASE_SEPOLIA,
      },
    });
    const response = await post(service, "https://example.com", await signedHeaders(challenge));
    expect(response.status).toBe(402);
    expect(await response.json()).toEqual({
      error: expect.stringContaining("invalid_exact_evm_insufficient_balance"),
    });
  });

  it("a failed send (no hash) or a duplicate settle answers 503, not 402: the transfer may land", async () => {
    for (const [status, errorReason] of [
      [200, "invalid_exact_evm_transaction_failed"],
      [409, "duplicate_settlement"],
    ] as const) {
      facilitator.settle = () => ({
        status,
        json: { success: false, errorReason, transaction: "", network: BASE_SEPOLIA },
      });
      const response = await post(service, "https://example.com", await signedHeaders(challenge));
      expect(response.status, errorReason).toBe(503);
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
      expect(await response.json()).toMatchObject({ code: "settlement_unknown" });
    }
  });
});

/** A memory store whose writes of `state` fail while `down()` says so. */
function storeFailingWrites(state: PaymentState, down: () => boolean): MemoryPaymentRecordStore {
  const store = new MemoryPaymentRecordStore();
  const write = store.write.bind(store);
  store.write = (key, owner, record, ttlMs) =>
    record.state === state && down()
      ? Promise.reject(new Error("store down"))
      : write(key, owner, record, ttlMs);
  return store;
}

describe("a settled payment always gets its report", () => {
  it("even when the store fails to record the settlement", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const store = storeFailingWrites("settled", () => true);
    const service = await startService(base(facilitator.url, { store }));
    try {
      const challenge = await challengeOf(await post(service, "https://example.com"));
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: privateKeyToAccount(generatePrivateKey()) });
      const payload = await client.createPaymentPayload(challenge);
      payload.extensions = {
        ...payload.extensions,
        "payment-identifier": { info: { required: false, id: "pay_0123456789abcdef" } },
      };
      const headers = new x402HTTPClient(client).encodePaymentSignatureHeader(payload);
      const paid = await post(service, "https://example.com", headers);
      expect(paid.status).toBe(200);
      // The report as the work made it, and the proof of its payment after it.
      expect(await paid.json()).toEqual({
        requested_url: "https://example.com",
        proof: expect.objectContaining({ transaction: expect.any(String) }),
      });
      expect(decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE")!)).toMatchObject({
        success: true,
      });
    } finally {
      await service.close();
      await facilitator.close();
    }
  });
});

describe("the payment record store failing", () => {
  it("before verify: 503 with Retry-After, nothing verified or settled; the same proof works after", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const store = new MemoryPaymentRecordStore();
    const acquire = store.acquire.bind(store);
    let down = true;
    store.acquire = (...args) =>
      down ? Promise.reject(new Error("store down")) : acquire(...args);
    const service = await startService(base(facilitator.url, { store }));
    try {
      const challenge = await challengeOf(await post(service, "https://example.com"));
      const headers = await signedHeaders(challenge);
      const [verifies, settles] = [facilitator.calls.verify, facilitator.calls.settle];
      const refused = await post(service, "https://example.com", headers);
      expect(refused.status).toBe(503);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await refused.json()).toEqual({
        error: expect.stringContaining("payment state store unavailable"),
        code: "store_unavailable",
      });
      expect(facilitator.calls.verify).toBe(verifies);
      expect(facilitator.calls.settle).toBe(settles);
      down = false;
      expect((await post(service, "https://example.com", headers)).status).toBe(200);
    } finally {
      await service.close();
      await facilitator.close();
    }
  });

  it("after verify (the verified write fails): 503, not a 402, and no snapshot, nothing settled", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const store = storeFailingWrites("verified", () => true);
    const service = await startService(base(facilitator.url, { store }));
    try {
      const challenge = await challengeOf(await post(service, "https://example.com"));
      const settles = facilitator.calls.settle;
      const refused = await post(service, "https://example.com", await signedHeaders(challenge));
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBeTruthy();
      expect(await refused.json()).toEqual({
        error: expect.stringContaining("payment state store unavailable"),
        code: "store_unavailable",
      });
      expect(service.handlerRuns).toBe(0);
      expect(facilitator.calls.settle).toBe(settles);
    } finally {
      await service.close();
      await facilitator.close();
    }
  });

  it("before settle (the settling write fails): 503, nothing settled; the retry settles the kept report", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    let down = true;
    const store = storeFailingWrites("settling", () => down);
    const service = await startService(base(facilitator.url, { store }));
    try {
      const challenge = await challengeOf(await post(service, "https://example.com"));
      const proof = await signedHeaders(challenge);
      const settles = facilitator.calls.settle;
      const refused = await post(service, "https://example.com", proof);
      expect(refused.status).toBe(503);
      expect(await refused.json()).not.toHaveProperty("requested_url");
      expect(facilitator.calls.settle).toBe(settles);
      expect(service.handlerRuns).toBe(1);

      down = false;
      const paid = await post(service, "https://example.com", proof);
      expect(paid.status).toBe(200);
      // The report as the work made it, and the proof of its payment after it.
      expect(await paid.json()).toEqual({
        requested_url: "https://example.com",
        proof: expect.objectContaining({ transaction: expect.any(String) }),
      });
      // The kept report, settled once: the snapshot did not run again.
      expect(service.handlerRuns).toBe(1);
      expect(facilitator.calls.settle).toBe(settles + 1);
    } finally {
      await service.close();
      await facilitator.close();
    }
  });
});

/** A proof signed by `account` (a fresh nonce each time). */
async function signedBy(
  account: ReturnType<typeof privateKeyToAccount>,
  challenge: PaymentRequired,
): Promise<Record<string, string>> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  return new x402HTTPClient(client).encodePaymentSignatureHeader(
    await client.createPaymentPayload(challenge),
  );
}

describe("unreadable proofs are a 402 that says why, never a 503 or 500", () => {
  let facilitator: ScriptedFacilitator;
  let service: Service;
  let challenge: PaymentRequired;
  /** A real proof, decoded: the base the malformed ones are made from. */
  let real: Record<string, unknown>;
  beforeAll(async () => {
    facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    service = await startService(base(facilitator.url));
    challenge = await challengeOf(await post(service, "https://example.com"));
    const header = Object.values(await signedHeaders(challenge))[0]!;
    real = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as Record<string, unknown>;
  });
  afterAll(async () => {
    await service.close();
    await facilitator.close();
  });

  const b64 = (text: string | Buffer) => Buffer.from(text).toString("base64");
  /** `depth` nested arrays as JSON text (built as text: encoding them would overflow here too). */
  const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
  /** The real proof with its EIP-3009 payload carrying `extra` (and nothing it does not need). */
  const withPayload = (extra: Record<string, string>, rawJson: Record<string, string> = {}) => {
    const marked = Object.fromEntries(Object.keys(rawJson).map((k) => [k, `@@${k}@@`]));
    let text = JSON.stringify({
      x402Version: 2,
      accepted: real.accepted,
      payload: { ...(real.payload as object), ...extra, ...marked },
    });
    for (const [k, json] of Object.entries(rawJson)) text = text.replace(`"@@${k}@@"`, json);
    return b64(text);
  };

  const cases: Array<[string, () => string, RegExp]> = [
    ["not base64", () => "%%% not base64 %%%", /not base64/],
    ["base64 of text that is not JSON", () => b64("hello, facilitator"), /not decode to JSON/],
    ["base64 of bytes that are not UTF-8", () => b64(Buffer.from([0xff, 0xfe, 0xfd])), /UTF-8/],
    ["JSON of the wrong shape", () => b64(JSON.stringify({ x402Version: 2 })), /PaymentPayload/],
    ["a JSON array", () => b64("[1,2,3]"), /PaymentPayload/],
    [
      "an x402 v1 payload",
      () => b64(JSON.stringify({ ...real, x402Version: 1 })),
      /PaymentPayload/,
    ],
    [
      "no EIP-3009 authorization",
      () => b64(JSON.stringify({ ...real, payload: { signature: "0x00" } })),
      /authorization/,
    ],
    // The reported case: 5000 levels, 13-14 KB, once a 503 from a stack overflow while encoding
    // the proof for the facilitator.
    ["nesting 5000 levels", () => withPayload({}, { deep: nested(5000) }), /at most 8192/],
    ["nesting 1000 levels in under 8 KiB", () => withPayload({}, { deep: nested(1000) }), /deeper/],
    ["over 8 KiB", () => withPayload({ padding: "x".repeat(9_000) }), /at most 8192/],
  ];

  it.each(cases)("%s", async (_name, make, why) => {
    const header = make();
    const verifies = facilitator.calls.verify;
    const runs = service.handlerRuns;
    const response = await post(service, "https://example.com", { "PAYMENT-SIGNATURE": header });
    expect(response.status).toBe(402);
    const body = (await response.json()) as { error: string };
    expect(body.error).toMatch(/^Unreadable payment proof: /);
    expect(body.error).toMatch(why);
    // Still a complete challenge, so the client can sign a proper proof.
    const fresh = await challengeOf(response);
    expect(fresh.error).toBe(body.error);
    expect(fresh.accepts).toEqual(challenge.accepts);
    expect(facilitator.calls.verify).toBe(verifies);
    expect(service.handlerRuns).toBe(runs);
  });

  it("a real proof is far inside both bounds", async () => {
    const header = Object.values(await signedHeaders(challenge))[0]!;
    // The official client echoes the challenge's extensions, its signed offers too.
    expect(header.length).toBeLessThan(6 * 1024);
    const response = await post(service, "https://example.com", { "PAYMENT-SIGNATURE": header });
    expect(response.status).toBe(200);
  });
});

describe("unpaid work per proof and per payer", () => {
  it("a proof released proofReleases times is refused with a 402 that says why", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { proofReleases: 1 }));
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    const proof = await signedHeaders(challenge);
    expect((await post(service, "bad", proof)).status).toBe(400);
    const again = await post(service, "https://example.com", proof);
    expect(again.status).toBe(402);
    expect((await challengeOf(again)).error).toBe("payment_proof_exhausted");
    expect(await again.json()).toEqual({
      error:
        "Payment rejected (payment_proof_exhausted): this payment proof was already used for 1 refused snapshots; sign a new one",
    });
    expect(service.handlerRuns).toBe(1);
    expect(facilitator.calls.settle).toBe(0);
  });

  it("concurrent refused snapshots of one payer stop at the budget, before the handler", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { refusedPerPayerPerMinute: 3 }), 50);
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    const account = privateKeyToAccount(generatePrivateKey());
    const proofs = await Promise.all(Array.from({ length: 8 }, () => signedBy(account, challenge)));
    const responses = await Promise.all(proofs.map((proof) => post(service, "bad", proof)));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([400, 400, 400, 429, 429, 429, 429, 429]);
    expect(service.handlerRuns).toBe(3);
    const over = responses.find((r) => r.status === 429)!;
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await over.json()) as { code: string }).code).toBe("payer_over_budget");
    expect(facilitator.calls.settle).toBe(0);

    // A 429 burns nothing: that proof was not counted as a release.
    const other = await startService(base(facilitator.url, { proofReleases: 0 }));
    opened.push(other);
    expect((await post(other, "https://example.com", proofs[proofs.length - 1]!)).status).toBe(200);
  });

  it("paid snapshots do not count: only unpaid ones use the budget", async () => {
    const facilitator = await startScriptedFacilitator([BASE_SEPOLIA]);
    const service = await startService(base(facilitator.url, { refusedPerPayerPerMinute: 2 }));
    opened.push(facilitator, service);
    const challenge = await challengeOf(await post(service, "https://example.com"));
    const account = privateKeyToAccount(generatePrivateKey());
    for (let i = 0; i < 5; i++) {
      const paid = await post(service, "https://example.com", await signedBy(account, challenge));
      expect(paid.status).toBe(200);
    }
    expect((await post(service, "bad", await signedBy(account, challenge))).status).toBe(400);
    expect((await post(service, "bad", await signedBy(account, challenge))).status).toBe(400);
    expect((await post(service, "bad", await signedBy(account, challenge))).status).toBe(429);
  });
});
