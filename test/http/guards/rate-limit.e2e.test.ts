/**
 * The per-client budget of free answers (docs/operations.md, "Rate limits"): real servers with
 * the unpaid-challenge fast path in front of the app and a payment gate against a real HTTP
 * /supported. Over the budget a free answer is 429 `rate_limited` with Retry-After, on both
 * serving paths; the health checks are never counted, a paid request only by its refused proofs; the
 * client is the socket peer, or, from a peer in TRUSTED_PROXIES, the X-Forwarded-For entry it wrote.
 */
import { Redis } from "ioredis";
import {
  RateLimiterMemory,
  RateLimiterRedis,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ClientRateLimit,
  createApp,
  createChallengeFastPath,
  startServer,
  type NodeFront,
  type RunningServer,
} from "../../../src/http/index.js";
import { TrustedProxies, clientAddress } from "../../../src/http/guards/client-ip.js";
import { createPaymentGate, type PaymentGate } from "../../../src/payment/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { redisServerBinary, startRedis } from "../../fixtures/redis.js";
import { closedPort, startSilentServer } from "../../fixtures/targets.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "../helpers.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";

let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>>;
let gate: PaymentGate;
const opened: RunningServer[] = [];

beforeAll(async () => {
  facilitator = await startSupportedFacilitator(["eip155:84532"]);
  gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    networks: ["eip155:84532"],
    priceUsdc: "0.05",
    facilitatorUrl: facilitator.url,
    log: () => {},
  });
  expect(await gate.warmUp()).toBe(true);
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => s.close(100)));
});

afterAll(() => facilitator.close());

interface Limited {
  base: string;
  /** Answers the fast path gave itself (402s and 429s served without Hono). */
  fastAnswers: () => number;
  logged: string[];
}

async function serve(opts: {
  perMinute?: number;
  trustedProxies?: string[];
  limiter?: RateLimiterAbstract;
}): Promise<Limited> {
  const logged: string[] = [];
  const limiter =
    opts.limiter ?? new RateLimiterMemory({ points: opts.perMinute ?? 3, duration: 60 });
  const rateLimit = new ClientRateLimit(limiter, (line) => logged.push(line));
  const trustedProxies = opts.trustedProxies ?? [];
  const urlPolicy = createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] });
  const app = createApp({
    engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
    urlPolicy,
    payment: gate.route,
    mcpPayment: gate.mcp,
    log: () => {},
    rateLimit,
    trustedProxies,
  });
  const fastPath = createChallengeFastPath({
    urlPolicy,
    unpaidChallenge: gate.unpaidChallenge,
    rateLimit,
    trustedProxies,
  });
  let fast = 0;
  const front: NodeFront = (req, res) => {
    const taken = fastPath(req, res);
    if (taken) fast++;
    return taken;
  };
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app, front });
  opened.push(server);
  return { base: server.url, fastAnswers: () => fast, logged };
}

function unpaid(base: string, headers: Record<string, string> = {}, url = "https://example.com") {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url }),
  });
}

/** A forged payment proof (the base64 of "not a proof"). */
const forged = { "payment-signature": "bm90IGEgcHJvb2Y=" };

/** One JSON-RPC request to POST /mcp, as the MCP SDK client sends it. */
function mcp(base: string, method: string, params: object) {
  return fetch(`${base}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
}

function unpaidMcp(base: string) {
  return mcp(base, "tools/call", { name: "snapshot", arguments: { url: "https://example.com" } });
}

function mcpWithProof(base: string) {
  return mcp(base, "tools/call", {
    name: "snapshot",
    arguments: { url: "https://example.com" },
    _meta: { "x402/payment": forged["payment-signature"] },
  });
}

async function expectRateLimited(response: Response): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
  expect(Number(response.headers.get("retry-after"))).toBeLessThanOrEqual(60);
  expect(response.headers.get("access-control-allow-origin")).toBe("*");
  expect(await response.json()).toEqual({
    error: expect.any(String),
    code: "rate_limited",
    error_type: "rate_limited",
  });
}

describe("a budget of N free answers per client and minute", () => {
  it("the N+1st 402 is a 429 with Retry-After, also where the fast path answers", async () => {
    const service = await serve({ perMinute: 3 });
    for (let i = 0; i < 3; i++) expect((await unpaid(service.base)).status).toBe(402);
    // The first 402 came from the route, the next two from the fast path.
    expect(service.fastAnswers()).toBe(2);
    await expectRateLimited(await unpaid(service.base));
    expect(service.fastAnswers()).toBe(3);
  });

  it("400s, the demo and the OpenAPI document draw on the same budget", async () => {
    const service = await serve({ perMinute: 3 });
    expect((await unpaid(service.base, {}, "http://169.254.169.254/")).status).toBe(400);
    expect((await fetch(`${service.base}/demo/snapshot`)).status).toBe(200);
    expect((await fetch(`${service.base}/openapi.json`)).status).toBe(200);
    await expectRateLimited(await fetch(`${service.base}/demo/snapshot`));
    await expectRateLimited(await fetch(`${service.base}/openapi.json`));
    await expectRateLimited(await unpaid(service.base, {}, "http://169.254.169.254/"));
    // A page that is not there yet is limited by path too.
    await expectRateLimited(await fetch(`${service.base}/`));
  });

  it("/health and /ready are never limited and take nothing from the budget", async () => {
    const service = await serve({ perMinute: 1 });
    for (let i = 0; i < 5; i++) {
      expect((await fetch(`${service.base}/health`)).status).toBe(200);
      expect((await fetch(`${service.base}/ready`)).status).toBe(200);
    }
    expect((await fetch(`${service.base}/demo/snapshot`)).status).toBe(200);
    await expectRateLimited(await fetch(`${service.base}/demo/snapshot`));
    expect((await fetch(`${service.base}/health`)).status).toBe(200);
    expect((await fetch(`${service.base}/ready`)).status).toBe(200);
  });

  it("a request carrying a payment proof is not limited: it reaches the payment gate", async () => {
    const service = await serve({ perMinute: 1 });
    expect((await unpaid(service.base)).status).toBe(402);
    await expectRateLimited(await unpaid(service.base));
    // Not a valid proof, so the gate refuses it: a 402 saying why, never a 429.
    const withProof = await unpaid(service.base, { "payment-signature": "bm90IGEgcHJvb2Y=" });
    expect(withProof.status).toBe(402);
    expect(((await withProof.json()) as { error: string }).error).toMatch(/payment proof/i);
  });

  it("refused proofs have a budget of their own: past it, a 429 before the payment gate", async () => {
    const service = await serve({ perMinute: 2 });
    const forged = { "payment-signature": "bm90IGEgcHJvb2Y=" };
    for (let i = 0; i < 2; i++) {
      const refused = await unpaid(service.base, forged);
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as { error: string }).error).toMatch(/payment proof/i);
    }
    // The gate's 402 would name the proof; this answer is given before the gate.
    const limited = await unpaid(service.base, forged);
    await expectRateLimited(limited.clone());
    expect(((await limited.json()) as { error: string }).error).toMatch(/refused payment proofs/);
    // Counted apart: the client's free answers are untouched.
    expect((await unpaid(service.base)).status).toBe(402);
  });

  it("a proof sent to a free route buys nothing: it is counted like any free answer", async () => {
    const service = await serve({ perMinute: 1 });
    const proof = { "x-payment": "bm90IGEgcHJvb2Y=" };
    expect((await fetch(`${service.base}/demo/snapshot`, { headers: proof })).status).toBe(200);
    await expectRateLimited(await fetch(`${service.base}/demo/snapshot`, { headers: proof }));
    await expectRateLimited(await fetch(`${service.base}/openapi.json`, { headers: proof }));
  });

  it("POST /mcp: an unpaid call or any other message is a free answer; a proof reaches the payment", async () => {
    const service = await serve({ perMinute: 2 });
    const listed = await mcp(service.base, "tools/list", {});
    expect(listed.status).toBe(200);
    expect((await unpaidMcp(service.base)).status).toBe(200);
    await expectRateLimited(await unpaidMcp(service.base));
    await expectRateLimited(await mcp(service.base, "tools/list", {}));
    // Not a valid proof, so the payment refuses it: a PaymentRequired saying why, never a 429.
    const refused = await mcpWithProof(service.base);
    expect(refused.status).toBe(200);
    expect(JSON.stringify(await refused.json())).toMatch(/Unreadable payment proof/);
  });

  it("POST /mcp: refused proofs have their own budget, the one of the paid route", async () => {
    const service = await serve({ perMinute: 2 });
    for (let i = 0; i < 2; i++) {
      const refused = await (i === 0 ? mcpWithProof(service.base) : unpaid(service.base, forged));
      expect(refused.status, `refused proof ${i}`).toBe(i === 0 ? 200 : 402);
      await refused.text();
    }
    const limited = await mcpWithProof(service.base);
    await expectRateLimited(limited.clone());
    expect(((await limited.json()) as { error: string }).error).toMatch(/refused payment proofs/);
    // Counted apart: the client's free answers are untouched.
    expect((await unpaidMcp(service.base)).status).toBe(200);
  });

  it("a rate-limit store that fails lets free answers through and says so", async () => {
    // A real Redis client pointed at a port nobody listens on: every command fails at once.
    const redis = new Redis({
      port: await closedPort("127.0.0.1"),
      host: "127.0.0.1",
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    redis.on("error", () => {}); // the failure under test; each command reports it too
    try {
      const limiter = new RateLimiterRedis({ storeClient: redis, points: 1, duration: 60 });
      const service = await serve({ limiter });
      for (let i = 0; i < 3; i++) expect((await unpaid(service.base)).status).toBe(402);
      expect((await fetch(`${service.base}/demo/snapshot`)).status).toBe(200);
      // Counted in the background: its failure is said once the count is sent.
      await until(() => service.logged.some((line) => /rate limit store failed/.test(line)));
    } finally {
      redis.disconnect();
    }
  });

  it("a rate-limit store that accepts and never answers does not hold free answers", async () => {
    // A real listener that takes the connection and never says a word, as a hung store would.
    const silent = await startSilentServer("127.0.0.1");
    const redis = new Redis({ port: silent.port, host: "127.0.0.1", maxRetriesPerRequest: 0 });
    redis.on("error", () => {});
    try {
      const limiter = new RateLimiterRedis({ storeClient: redis, points: 1, duration: 60 });
      const service = await serve({ limiter });
      for (let i = 0; i < 3; i++) expect((await unpaid(service.base)).status).toBe(402);
      expect((await fetch(`${service.base}/demo/snapshot`)).status).toBe(200);
      // Counted in the background: its failure is said once the store's time is up.
      await until(() => service.logged.some((line) => /rate limit store failed/.test(line)));
    } finally {
      redis.disconnect();
      await silent.close();
    }
  });
});

describe.skipIf(!redisServerBinary)("one budget across instances (Redis)", () => {
  it("two instances sharing one Redis count one client together, exactly", async () => {
    const redisServer = await startRedis();
    const clients = [0, 1].map(() => new Redis(redisServer.url, { maxRetriesPerRequest: 1 }));
    try {
      const [a, b] = await Promise.all(
        clients.map((storeClient) =>
          serve({
            limiter: new RateLimiterRedis({
              storeClient,
              keyPrefix: "shared-test",
              points: 4,
              duration: 60,
            }),
          }),
        ),
      );
      if (!a || !b) throw new Error("two instances expected");
      // Four answers spread over both instances use up the one budget …
      for (const base of [a.base, b.base, a.base, b.base]) {
        expect((await unpaid(base)).status).toBe(402);
      }
      const [key] = await redisServer.inspect.keys("shared-test:*");
      expect(Number(await redisServer.inspect.get(key!))).toBe(4);
      // … so the next one is refused on either instance, at once.
      await expectRateLimited(await unpaid(a.base));
      await expectRateLimited(await unpaid(b.base));
      await expectRateLimited(await fetch(`${b.base}/demo/snapshot`));
    } finally {
      for (const c of clients) c.disconnect();
      await redisServer.close();
    }
  });

  it("a burst from one client at two instances: at most the budget is answered, the rest 429", async () => {
    const redisServer = await startRedis();
    const clients = [0, 1].map(() => new Redis(redisServer.url, { maxRetriesPerRequest: 1 }));
    const budget = 25;
    try {
      const instances = await Promise.all(
        clients.map((storeClient) =>
          serve({
            trustedProxies: ["127.0.0.1/32"],
            limiter: new RateLimiterRedis({
              storeClient,
              keyPrefix: "burst",
              points: budget,
              duration: 60,
            }),
          }),
        ),
      );
      // One client behind a proxy, 80 requests at concurrency 20, alternating instances and
      // routes (the fast path's 402 and the app's demo draw on the same budget).
      const statuses: number[] = [];
      let next = 0;
      const worker = async () => {
        while (next < 80) {
          const i = next++;
          const base = instances[i % 2]!.base;
          const headers = { "x-forwarded-for": "203.0.113.7" };
          const answer =
            i % 3 === 0
              ? await fetch(`${base}/demo/snapshot`, { headers })
              : await unpaid(base, headers);
          statuses.push(answer.status);
          await answer.arrayBuffer();
        }
      };
      await Promise.all(Array.from({ length: 20 }, worker));
      const answered = statuses.filter((s) => s !== 429).length;
      expect(statuses.every((s) => s === 402 || s === 200 || s === 429)).toBe(true);
      // One budget: give or take one per instance for requests racing at the same instant.
      expect(answered).toBeLessThanOrEqual(budget + 2);
      expect(answered).toBeGreaterThanOrEqual(budget - 2);
    } finally {
      for (const c of clients) c.disconnect();
      await redisServer.close();
    }
  });

  it("refused proofs are counted in the shared store too, apart from free answers", async () => {
    const redisServer = await startRedis();
    const storeClient = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
    try {
      const limiter = new RateLimiterRedis({
        storeClient,
        keyPrefix: "proofs",
        points: 2,
        duration: 60,
      });
      const service = await serve({ limiter });
      const forged = { "payment-signature": "bm90IGEgcHJvb2Y=" };
      let limited: Response | undefined;
      await until(async () => {
        const answer = await unpaid(service.base, forged);
        if (answer.status === 429) limited = answer;
        else expect(answer.status).toBe(402);
        return limited !== undefined;
      });
      await expectRateLimited(limited!.clone());
      expect(((await limited!.json()) as { error: string }).error).toMatch(
        /refused payment proofs/,
      );
      expect(await redisServer.inspect.keys("proofs:proof|*")).toHaveLength(1);
      expect((await unpaid(service.base)).status).toBe(402);
    } finally {
      storeClient.disconnect();
      await redisServer.close();
    }
  });
});

/** Polls `check` until it holds, for at most 10 s. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("condition not met within 10 s");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("the client behind proxies (TRUSTED_PROXIES)", () => {
  // The test's requests come from 127.0.0.1: that is the proxy when it is trusted.
  const viaProxy = ["127.0.0.0/8"];

  it("from a trusted proxy, clients are counted apart by X-Forwarded-For", async () => {
    const service = await serve({ perMinute: 2, trustedProxies: viaProxy });
    const a = { "x-forwarded-for": "203.0.113.5" };
    const b = { "x-forwarded-for": "203.0.113.6" };
    expect((await unpaid(service.base, a)).status).toBe(402);
    expect((await unpaid(service.base, a)).status).toBe(402);
    await expectRateLimited(await unpaid(service.base, a));
    expect((await unpaid(service.base, b)).status).toBe(402);
    expect((await fetch(`${service.base}/demo/snapshot`, { headers: b })).status).toBe(200);
    await expectRateLimited(await fetch(`${service.base}/demo/snapshot`, { headers: b }));
  });

  it("behind a trusted proxy, a client's own X-Forwarded-For entries never become its key", async () => {
    const service = await serve({ perMinute: 2, trustedProxies: viaProxy });
    // The proxy appends the address it saw (203.0.113.5) to whatever the client sent.
    const spoofing = (i: number) => ({ "x-forwarded-for": `198.51.100.${i}, 203.0.113.5` });
    expect((await unpaid(service.base, spoofing(1))).status).toBe(402);
    expect((await unpaid(service.base, spoofing(2))).status).toBe(402);
    await expectRateLimited(await unpaid(service.base, spoofing(3)));
    await expectRateLimited(await unpaid(service.base, { "x-forwarded-for": "203.0.113.5" }));
  });

  it("a peer outside the trusted ranges cannot spoof X-Forwarded-For: the peer is the client", async () => {
    // Proxies are configured, but this client reaches the instance directly.
    const service = await serve({ perMinute: 2, trustedProxies: ["10.0.0.0/8", "192.0.2.7"] });
    const from = (i: number) => ({ "x-forwarded-for": `198.51.100.${i}` });
    expect((await unpaid(service.base, from(1))).status).toBe(402);
    expect((await unpaid(service.base, from(2))).status).toBe(402);
    await expectRateLimited(await unpaid(service.base, from(3)));
    await expectRateLimited(await fetch(`${service.base}/demo/snapshot`, { headers: from(4) }));
  });

  it("without TRUSTED_PROXIES, X-Forwarded-For is ignored", async () => {
    const service = await serve({ perMinute: 1 });
    expect((await unpaid(service.base, { "x-forwarded-for": "198.51.100.1" })).status).toBe(402);
    await expectRateLimited(await unpaid(service.base, { "x-forwarded-for": "198.51.100.2" }));
  });

  it("the key: the chain walked from the right past trusted hops; IPv4-mapped as IPv4, IPv6 by its /64", () => {
    const proxies = new TrustedProxies(["10.0.0.0/8", "2001:db8:ffff::/48"]);
    const none = new TrustedProxies([]);
    // Peer not trusted: the header is never read.
    expect(clientAddress("127.0.0.1", "1.1.1.1, 2.2.2.2", proxies)).toBe("127.0.0.1");
    expect(clientAddress("10.0.0.1", "1.1.1.1, 2.2.2.2", none)).toBe("10.0.0.1");
    // Peer trusted: the right-most entry that is not a trusted proxy.
    expect(clientAddress("10.0.0.1", "1.1.1.1, 2.2.2.2", proxies)).toBe("2.2.2.2");
    expect(clientAddress("10.0.0.1", "1.1.1.1, 2.2.2.2, 10.9.9.9", proxies)).toBe("2.2.2.2");
    expect(clientAddress("::ffff:10.0.0.1", "2.2.2.2", proxies)).toBe("2.2.2.2");
    expect(clientAddress("2001:db8:ffff::1", "3.3.3.3", proxies)).toBe("3.3.3.3");
    // Every entry a proxy: the left-most there is; no header: the peer.
    expect(clientAddress("10.0.0.1", "10.1.1.1, 10.2.2.2", proxies)).toBe("10.1.1.1");
    expect(clientAddress("10.0.0.1", undefined, proxies)).toBe("10.0.0.1");
    expect(clientAddress("::ffff:10.1.2.3", undefined, none)).toBe("10.1.2.3");
    expect(clientAddress("2001:db8:1:2:aaaa::1", undefined, none)).toBe(
      clientAddress("2001:db8:1:2:bbbb::9", undefined, none),
    );
    expect(clientAddress("2001:db8:1:2::1", undefined, none)).not.toBe(
      clientAddress("2001:db8:1:3::1", undefined, none),
    );
  });
});
