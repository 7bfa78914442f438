/**
 * Every answer of the catalogue (src/payment/answers/catalogue.ts, docs/contract.md §1.3 "Error
 * answers") as a client meets it over a real connection: its status, its `code`, its `error`
 * and the headers the catalogue says it adds. The free ones from the app on loopback; the paid
 * ones from the service with its payment gate on the real devnet (anvil, DevUSDC, the project's
 * facilitator behind a proxy that can hold or lose a settle answer), the payer's balance read
 * on chain. The last test checks that every code of the catalogue was met, but the one nobody
 * can receive.
 */
import { request } from "node:http";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import {
  SIGN_IN_WITH_X,
  createSIWxPayload,
  encodeSIWxHeader,
  type SIWxExtension,
} from "@x402/extensions/sign-in-with-x";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PAYER } from "../../../src/devnet/constants.js";
import {
  ClientRateLimit,
  SnapshotAdmission,
  createApp,
  startServer,
  type RunningServer,
} from "../../../src/http/index.js";
import {
  ANSWER_CATALOGUE,
  createPaymentGate,
  type AnswerCode,
} from "../../../src/payment/index.js";
import { SnapshotError, createUrlPolicy } from "../../../src/snapshot/index.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import {
  PRICE_UNITS,
  devnetGate,
  paidSnapshot,
  postSnapshot as post,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  v2ProofFor,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "../helpers.js";
import { paidRouteHandler } from "../../fixtures/paid-route-handler.js";

/** Nobody receives it: the client left before its answer, whose status is only logged. */
const NEVER_RECEIVED: AnswerCode = "client_gone";

const met = new Set<AnswerCode>();

/** The answer is the catalogue's `code`: its status, its body, its added headers. */
async function expectAnswer(response: Response, code: AnswerCode, status?: number) {
  const entry: { status: number | "4xx"; headers: readonly string[] } = ANSWER_CATALOGUE[code];
  const body = (await response.json()) as Record<string, unknown>;
  expect(response.status, JSON.stringify(body)).toBe(
    entry.status === "4xx" ? status : entry.status,
  );
  expect(body.code).toBe(code);
  // The readiness body says what is down instead of a sentence (docs/contract.md §2.7).
  if (code !== "not_ready") expect(body.error).toEqual(expect.any(String));
  expect(response.headers.get("content-type")).toBe("application/json");
  expect(response.headers.get("cache-control")).toBe("no-store");
  for (const name of entry.headers) expect(response.headers.get(name), name).toMatch(/\S/);
  if (!entry.headers.includes("Retry-After")) {
    expect(response.headers.get("retry-after")).toBeNull();
  }
  met.add(code);
}

const opened: { close(): Promise<void> }[] = [];

async function serve(deps: Partial<Parameters<typeof createApp>[0]>): Promise<string> {
  const app = createApp({
    engine: new ScriptedEngine(async (raw) => {
      if (raw.includes("bug.example")) throw new TypeError("a bug");
      return sampleResult(raw);
    }),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
    ...deps,
  });
  const server: RunningServer = await startServer({
    config: { host: "127.0.0.1", port: 0 },
    app,
  });
  opened.push({ close: () => server.close(1_000) });
  return server.url;
}

function snapshotOf(base: string, url: string, headers: Record<string, string> = {}) {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url }),
  });
}

/** GET `url` under another `Host` (fetch cannot set it), as a Response. */
function getWithHost(url: string, host: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === "string") headers.set(name, value);
        }
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode!, headers }));
      });
    });
    req.on("error", reject);
    req.end();
  });
}

afterAll(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close()));
});

describe("the free answers", () => {
  it("not_found, method_not_allowed and internal_error", async () => {
    const base = await serve({});
    await expectAnswer(await fetch(`${base}/no-such-path`), "not_found");
    await expectAnswer(await fetch(`${base}/health`, { method: "PUT" }), "method_not_allowed");
    await expectAnswer(await snapshotOf(base, "https://bug.example/"), "internal_error");
  });

  it("request_refused: a middleware's own status", async () => {
    const base = await serve({
      payment: {
        answer: () => Promise.reject(new HTTPException(422, { message: "malformed payment" })),
      },
    });
    const refused = await snapshotOf(base, "https://example.com/", { "x-payment": "x" });
    await expectAnswer(refused, "request_refused", 422);
  });

  it("rate_limited: past the client's budget of free answers", async () => {
    const base = await serve({
      rateLimit: new ClientRateLimit(new RateLimiterMemory({ points: 1, duration: 60 })),
    });
    expect((await fetch(`${base}/demo/snapshot`)).status).toBe(200);
    const limited = await fetch(`${base}/demo/snapshot`);
    await expectAnswer(limited, "rate_limited");
  });

  it("instance_busy, draining and not_ready", async () => {
    const busy = await serve({ admission: new SnapshotAdmission(0) });
    await expectAnswer(await snapshotOf(busy, "https://example.com/"), "instance_busy");
    const admission = new SnapshotAdmission();
    admission.drain();
    const draining = await serve({ admission });
    await expectAnswer(await snapshotOf(draining, "https://example.com/"), "draining");
    await expectAnswer(await fetch(`${draining}/ready`), "not_ready");
  });

  it("host_not_allowed and foreign_origin, in devnet mode", async () => {
    const base = await serve({
      networks: ["eip155:84532"],
      devnet: true,
      devnetPayer: DEFAULT_PAYER,
      payTo: "0x1111111111111111111111111111111111111111",
    });
    const rebound = await getWithHost(`${base}/health`, "rebound.evil.example");
    await expectAnswer(rebound, "host_not_allowed");
    const foreign = await fetch(`${base}/demo/pay-and-scan`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        origin: "https://evil.example",
      },
      body: "url=https%3A%2F%2Fexample.com",
    });
    await expectAnswer(foreign, "foreign_origin");
  });
});

describe("the paid route's answers, money read on chain", () => {
  let devnet: PaidDevnet;
  let target: CountingTarget;
  let proxy: FacilitatorProxy;

  beforeAll(async () => {
    devnet = await startPaidDevnet();
    target = await startCountingTarget();
    proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(opened.splice(0).map((x) => x.close()));
    await proxy?.close();
    await target?.close();
    await devnet?.close();
  });

  async function startService(
    gate: Partial<ReturnType<typeof devnetGate>> = {},
    engine = target.engine,
  ): Promise<string> {
    const service = await startGatedService({
      engine,
      scope: target.scope,
      gate: { ...devnetGate(devnet, proxy.url), ...gate },
    });
    opened.push(service);
    return service.url;
  }

  it("payment_in_progress while the first settles; the copy moves nothing more", async () => {
    const base = await startService();
    const account = devnet.payer(0);
    const before = await devnet.balanceOf(account.address);
    const proof = await v2ProofFor(base, target.url, account);
    const held = proxy.holdNextSettle();
    const first = post(base, target.url, proof);
    await held.settled;
    await expectAnswer(await post(base, target.url, proof), "payment_in_progress");
    held.release();
    expect((await first).status).toBe(200);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("settlement_unknown, then payment_proof_conflict for the proof with another body", async () => {
    // The chain decides the lost settlement on the retry.
    const base = await startService({ rpcUrls: { [devnet.network]: devnet.rpcUrl } });
    const account = devnet.payer(1);
    const before = await devnet.balanceOf(account.address);
    const proof = await v2ProofFor(base, target.url, account);
    proxy.failNextSettle("settle-then-drop");
    await expectAnswer(await post(base, target.url, proof), "settlement_unknown");
    const other = await post(base, `${target.url}?other`, proof);
    await expectAnswer(other, "payment_proof_conflict");
    // The kept report is still the same request's, paid once.
    expect((await post(base, target.url, proof)).status).toBe(200);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("payment_id_conflict for a paid id with another body", async () => {
    const base = await startService();
    const account = devnet.payer(2);
    const before = await devnet.balanceOf(account.address);
    const proof = await v2ProofFor(base, target.url, account, generatePaymentId());
    expect((await post(base, target.url, proof)).status).toBe(200);
    await expectAnswer(await post(base, `${target.url}?other`, proof), "payment_id_conflict");
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("payer_over_budget once the payer's unpaid snapshots are spent; nothing charged", async () => {
    const refusing = new ScriptedEngine(async (raw) => {
      throw new SnapshotError("unreachable", "the target did not answer", raw);
    });
    const base = await startService({ refusedPerPayerPerMinute: 1 }, refusing);
    const account = devnet.payer(3);
    const before = await devnet.balanceOf(account.address);
    const first = await post(base, target.url, await v2ProofFor(base, target.url, account));
    expect(first.status).toBe(400);
    const over = await post(base, target.url, await v2ProofFor(base, target.url, account));
    await expectAnswer(over, "payer_over_budget");
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });

  it("store_unavailable while the payment record store fails; nothing charged", async () => {
    const store = new MemoryPaymentRecordStore();
    store.acquire = () => Promise.reject(new Error("store down"));
    const base = await startService({ store });
    const account = devnet.payer(4);
    const before = await devnet.balanceOf(account.address);
    const proof = await v2ProofFor(base, target.url, account);
    await expectAnswer(await post(base, target.url, proof), "store_unavailable");
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });

  it("payment_failed: the gate mounted on a route it does not price fails closed", async () => {
    const gate = createPaymentGate(devnetGate(devnet));
    const app = new Hono();
    let ran = false;
    app.post(
      "/unpriced",
      paidRouteHandler(gate.route, () => {
        ran = true;
        return Promise.resolve({ status: 200, body: {} });
      }),
    );
    const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
    opened.push({ close: () => server.close(1_000) }, { close: async () => gate.close() });
    await expectAnswer(await fetch(`${server.url}/unpriced`, { method: "POST" }), "payment_failed");
    expect(ran).toBe(false);
  });

  it("snapshot_not_found, sign_in_malformed, sign_in_refused and not_payer: a report again", async () => {
    const base = await startService();
    await expectAnswer(await fetch(`${base}/v1/snapshots/${"a".repeat(32)}`), "snapshot_not_found");
    const paid = await paidSnapshot(base, target.url, devnet.payer(5));
    const { proof } = (await paid.json()) as { proof: { snapshot_id: string } };
    const url = `${base}/v1/snapshots/${proof.snapshot_id}`;
    const signedIn = (header: string) => fetch(url, { headers: { "sign-in-with-x": header } });
    await expectAnswer(await signedIn("%%%"), "sign_in_malformed");
    // Signed by another wallet than the payer's, then sent again.
    const challenge = await fetch(url);
    const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required")!);
    const { info, supportedChains } = required.extensions![SIGN_IN_WITH_X] as SIWxExtension;
    const complete = { ...info, ...supportedChains[0]!, chainId: supportedChains[0]!.chainId };
    const header = encodeSIWxHeader(await createSIWxPayload(complete, devnet.payer(6), url));
    await expectAnswer(await signedIn(header), "not_payer");
    await expectAnswer(await signedIn(header), "sign_in_refused");
  });

  it("facilitator_unavailable while the facilitator cannot be reached", async () => {
    const gone = await startFacilitatorProxy(devnet.facilitatorUrl);
    const url = gone.url;
    await gone.close();
    const base = await startService({ facilitatorUrl: url });
    await expectAnswer(await post(base, target.url), "facilitator_unavailable");
  });
});

it("met every code of the catalogue over HTTP", () => {
  const expected = Object.keys(ANSWER_CATALOGUE).filter((code) => code !== NEVER_RECEIVED);
  expect([...met].sort()).toEqual(expected.sort());
});
