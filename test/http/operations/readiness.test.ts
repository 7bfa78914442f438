/**
 * GET /ready through its transitions (docs/operations.md, "Readiness and draining"), on a real
 * server whose payment gate talks to a real HTTP /supported that is down at first: 503 naming
 * what is down, 200 once it answers, 503 `draining` once draining. /health keeps its contract
 * all along.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PeriodicCheck,
  SnapshotAdmission,
  createApp,
  startServer,
  type ReadinessCheck,
  type RunningServer,
} from "../../../src/http/index.js";
import { createPaymentGate, type PaymentGate } from "../../../src/payment/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { closedPort } from "../../fixtures/targets.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "../helpers.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";

const opened: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
});

async function serve(
  checks: readonly ReadinessCheck[],
  admission = new SnapshotAdmission(),
  storeWritable?: () => Promise<boolean>,
) {
  const app = createApp({
    ...(storeWritable && { storeWritable }),
    engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
    readinessChecks: checks,
    admission,
  });
  const server: RunningServer = await startServer({
    config: { host: "127.0.0.1", port: 0 },
    app,
  });
  opened.push({ close: () => server.close(100) });
  return server.url;
}

async function ready(base: string): Promise<{ status: number; body: unknown; type: string }> {
  const response = await fetch(`${base}/ready`);
  return {
    status: response.status,
    type: response.headers.get("content-type") ?? "",
    body: await response.json(),
  };
}

async function expectHealth(base: string): Promise<void> {
  const response = await fetch(`${base}/health`);
  expect(response.status).toBe(200);
  expect(await response.json()).toEqual({ status: "ok", version: "1.0.0" });
}

describe("GET /ready", () => {
  let facilitatorPort: number;
  let gate: PaymentGate;
  let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>> | undefined;

  beforeAll(async () => {
    facilitatorPort = await closedPort("127.0.0.1");
    gate = createPaymentGate({
      store: new MemoryPaymentRecordStore(),
      payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      networks: ["eip155:84532"],
      priceUsdc: "0.05",
      facilitatorUrl: `http://127.0.0.1:${facilitatorPort}`,
      supportedRetryMs: 0,
      log: () => {},
    });
  });
  afterAll(() => facilitator?.close());

  it("facilitator down → 503 naming it; up → 200; draining → 503 draining; /health 200 throughout", async () => {
    // The start-up check found the facilitator unreachable: the service runs on.
    expect(await gate.warmUp()).toBe(false);
    const admission = new SnapshotAdmission();
    const base = await serve(
      [{ name: "facilitator", check: () => gate.facilitatorReady() }],
      admission,
    );

    expect(await ready(base)).toEqual({
      status: 503,
      type: "application/json",
      body: { status: "not_ready", down: ["facilitator"], code: "not_ready" },
    });
    await expectHealth(base);

    facilitator = await startSupportedFacilitator(["eip155:84532"], facilitatorPort);
    expect(await ready(base)).toEqual({
      status: 200,
      type: "application/json",
      body: { status: "ready" },
    });
    await expectHealth(base);

    admission.drain();
    expect(await ready(base)).toMatchObject({
      status: 503,
      body: { status: "not_ready", down: ["draining"] },
    });
    await expectHealth(base);
  });

  it("every failed check is named: one that says no, one that throws, one that never answers", async () => {
    const admission = new SnapshotAdmission();
    admission.drain();
    const base = await serve(
      [
        { name: "ok", check: () => Promise.resolve(true) },
        { name: "store", check: () => Promise.resolve(false) },
        { name: "broken", check: () => Promise.reject(new Error("connection reset")) },
        { name: "hung", check: () => new Promise<boolean>(() => {}) },
      ],
      admission,
    );
    expect(await ready(base)).toMatchObject({
      status: 503,
      body: { status: "not_ready", down: ["draining", "store", "broken", "hung"] },
    });
  });

  it("no checks and not draining: 200; HEAD works, other methods are 405", async () => {
    const base = await serve([]);
    expect(await ready(base)).toMatchObject({ status: 200, body: { status: "ready" } });
    expect((await fetch(`${base}/ready`, { method: "HEAD" })).status).toBe(200);
    const post = await fetch(`${base}/ready`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD, OPTIONS");
  });
});

/** Polls /ready until its status is `status`, for at most 15 s; the last answer. */
async function untilStatus(base: string, status: number) {
  const end = Date.now() + 15_000;
  for (;;) {
    const answer = await ready(base);
    if (answer.status === status || Date.now() > end) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe("/ready follows what it depends on after the start", () => {
  it("a facilitator that goes away after it was known: 503 naming it, 200 once it is back", async () => {
    const port = await closedPort("127.0.0.1");
    let facilitator = await startSupportedFacilitator(["eip155:84532"], port);
    const url = `http://127.0.0.1:${port}`;
    // As serve wires it: a background probe of the facilitator, read by /ready.
    const alive = new PeriodicCheck(
      "facilitator",
      async (signal) => (await fetch(`${url}/supported`, { signal })).status < 500,
      100,
      1_000,
    );
    opened.push({ close: async () => alive.stop() });
    try {
      const base = await serve([alive]);
      expect(await untilStatus(base, 200)).toMatchObject({ status: 200 });
      await facilitator.close();
      expect(await untilStatus(base, 503)).toMatchObject({
        status: 503,
        body: { status: "not_ready", down: ["facilitator"], code: "not_ready" },
      });
      facilitator = await startSupportedFacilitator(["eip155:84532"], port);
      expect(await untilStatus(base, 200)).toMatchObject({
        status: 200,
        body: { status: "ready" },
      });
    } finally {
      await facilitator.close().catch(() => {});
    }
  });

  it("a probe that never answers counts as down, and a new one is not started meanwhile", async () => {
    let started = 0;
    const hung = new PeriodicCheck(
      "devnet",
      (signal) => {
        started++;
        return new Promise<boolean>((_resolve, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason as Error)),
        );
      },
      50,
      60_000,
    );
    opened.push({ close: async () => hung.stop() });
    const base = await serve([hung]);
    expect(await ready(base)).toMatchObject({ status: 503, body: { down: ["devnet"] } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(started).toBe(1);
  });

  it("a store that refuses writes: 503 naming `store`, 200 once it takes them again", async () => {
    let writable = false;
    let asked = 0;
    const base = await serve([], new SnapshotAdmission(), async () => {
      asked++;
      return writable;
    });
    expect(await ready(base)).toMatchObject({
      status: 503,
      body: { status: "not_ready", down: ["store"] },
    });
    // Kept a while: a burst of probes asks the store once.
    for (let i = 0; i < 3; i++) await ready(base);
    expect(asked).toBeLessThan(4);
    writable = true;
    expect(await untilStatus(base, 200)).toMatchObject({ status: 200, body: { status: "ready" } });
  });
});
