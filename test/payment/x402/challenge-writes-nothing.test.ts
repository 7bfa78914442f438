/**
 * The 402 path writes nothing (docs/contract.md §6.1, docs/payment.md "The payment record"): an
 * unpaid request — through the Node fast path or the Hono route, v2 or v1 client, with any
 * Content-Type the route reads — and a refused input (400) never reach the payment record
 * store. Every store method is counted on a real store (the embedded database in a temporary
 * DATA_DIR); a second test shows the count sees a call.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createApp,
  createChallengeFastPath,
  startServer,
  type RunningServer,
} from "../../../src/http/index.js";
import { createPaymentGate } from "../../../src/payment/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { EmbeddedPaymentRecordStore, type PaymentRecordStore } from "../../../src/store/index.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "../../http/helpers.js";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

/** The store, every call counted by method name. */
function counted(store: PaymentRecordStore): {
  store: PaymentRecordStore;
  calls: Map<string, number>;
} {
  const calls = new Map<string, number>();
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function" || typeof name !== "string") return value;
      return (...args: unknown[]) => {
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

describe("the unpaid challenge and refused input write no payment record", () => {
  let dataDir: string;
  let embedded: EmbeddedPaymentRecordStore;
  let calls: Map<string, number>;
  let server: RunningServer;
  let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>>;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "secsnap-402-"));
    embedded = await EmbeddedPaymentRecordStore.open({ dataDir });
    const wrapped = counted(embedded);
    calls = wrapped.calls;
    facilitator = await startSupportedFacilitator(["eip155:84532"]);
    const gate = createPaymentGate({
      store: wrapped.store,
      payTo: PAY_TO,
      networks: ["eip155:84532"],
      priceUsdc: "0.05",
      facilitatorUrl: facilitator.url,
      // The background reconciler reads the store on its own clock: kept out of this count.
      reconcileIntervalMs: 3_600_000,
      log: () => {},
    });
    expect(await gate.warmUp()).toBe(true);
    const urlPolicy = createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] });
    const app = createApp({
      engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
      urlPolicy,
      payment: gate.route,
      log: () => {},
    });
    const front = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });
    server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front });
  });

  afterAll(async () => {
    await server?.close(100);
    await facilitator?.close();
    await embedded?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(`${server.url}/v1/snapshot`, { method: "POST", headers, body });

  it("402s (fast path and route, every readable Content-Type) and 400s leave the store untouched", async () => {
    const body = JSON.stringify({ url: "https://example.com/" });
    const answers = await Promise.all([
      post(body, { "content-type": "application/json" }),
      post(body, { "content-type": "text/plain" }),
      post(body, {}),
      post(body, { "content-type": "application/json; charset=utf-8", accept: "text/html" }),
      post(JSON.stringify({ url: "http://169.254.169.254/" }), {
        "content-type": "application/json",
      }),
      post("not json", { "content-type": "application/json" }),
    ]);
    const statuses = await Promise.all(
      answers.map(async (a) => {
        await a.arrayBuffer();
        return a.status;
      }),
    );
    expect(statuses).toEqual([402, 402, 402, 402, 400, 400]);
    expect(Object.fromEntries(calls)).toEqual({});
    expect(await embedded.unresolved(10)).toEqual([]);
  });

  it("the count itself works: a store call made on purpose is seen", async () => {
    const probe = counted(embedded);
    await probe.store.get("nothing");
    expect(probe.calls.get("get")).toBe(1);
  });
});
