/**
 * GET /ready through its transitions (docs/operations.md, "Readiness and draining"), on a real
 * server whose payment gate talks to a real HTTP /supported that is down at first: 503 naming
 * what is down, 200 once it answers, 503 `draining` once draining. /health keeps its contract
 * all along.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SnapshotAdmission,
  createApp,
  startServer,
  type ReadinessCheck,
  type RunningServer,
} from "../../src/http/index.js";
import { createPaymentGate, type PaymentGate } from "../../src/payment/index.js";
import { createUrlPolicy } from "../../src/snapshot/index.js";
import { startSupportedFacilitator } from "../fixtures/supported-facilitator.js";
import { closedPort } from "../fixtures/targets.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "./helpers.js";
import { MemoryPaymentRecordStore } from "../../src/store/index.js";

const opened: Array<{ close(): Promise<void> }> = [];
afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
});

async function serve(checks: readonly ReadinessCheck[], admission = new SnapshotAdmission()) {
  const app = createApp({
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
      body: { status: "not_ready", down: ["facilitator"] },
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
