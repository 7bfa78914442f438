/**
 * The unpaid challenge's fast path answers with the app's headers in every mode: the same
 * request, answered once by the fast path (Content-Length) and once by the Hono route (a chunked
 * body, which the fast path leaves to Hono), gets the same headers — CORS per the mode's policy
 * (cors.ts: production `*`; devnet and local mode only the service's own origins) — and in devnet
 * mode a Host the app's Host rule refuses never gets the fast path's answer. Real services on the real
 * devnet, over real connections.
 */
import { request } from "node:http";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientRateLimit } from "../../../src/http/index.js";
import {
  devnetGate,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  type CountingTarget,
  type GatedService,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";

const PUBLIC_URL = "http://secsnap.localhost:8080";

let devnet: PaidDevnet;
let target: CountingTarget;
const services: Record<string, GatedService> = {};

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
  for (const mode of ["production", "devnet"] as const) {
    for (const limited of [false, true]) {
      services[`${mode}${limited ? " limited" : ""}`] = await startGatedService({
        engine: target.engine,
        scope: target.scope,
        gate: devnetGate(devnet),
        fastPath: true,
        devnet: mode === "devnet",
        publicUrl: PUBLIC_URL,
        // A budget of one: the request that prepares the challenge spends it.
        ...(limited && {
          rateLimit: new ClientRateLimit(new RateLimiterMemory({ points: 1, duration: 60 })),
        }),
      });
    }
  }
}, 120_000);

afterAll(async () => {
  for (const service of Object.values(services)) await service.close();
  await target?.close();
  await devnet?.close();
});

interface Raw {
  status: number;
  /** Every header but Date, as sent: lower-case name → value, repeats joined. */
  headers: Record<string, string>;
  body: string;
}

function post(
  base: string,
  body: string,
  headers: Record<string, string>,
  chunked: boolean,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const framing = chunked ? { "transfer-encoding": "chunked" } : {};
    const req = request(
      `${base}/v1/snapshot`,
      { method: "POST", headers: { "content-type": "application/json", ...framing, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const sent: Record<string, string> = {};
          for (let i = 0; i < res.rawHeaders.length; i += 2) {
            const name = res.rawHeaders[i]!.toLowerCase();
            if (name === "date") continue;
            const value = res.rawHeaders[i + 1]!;
            sent[name] = sent[name] === undefined ? value : `${sent[name]}, ${value}`;
          }
          resolve({
            status: res.statusCode!,
            headers: sent,
            body: Buffer.concat(chunks).toString(),
          });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * The same request answered by the fast path and by the Hono route, checked to be so by the
 * service's count of the fast path's answers.
 */
async function bothPaths(
  service: GatedService,
  body: string,
  headers: Record<string, string>,
): Promise<{ fast: Raw; route: Raw }> {
  const before = service.fastAnswers;
  const fast = await post(service.url, body, headers, false);
  expect(service.fastAnswers, "answered by the fast path").toBe(before + 1);
  const route = await post(service.url, body, headers, true);
  expect(service.fastAnswers, "answered by the route").toBe(before + 1);
  return { fast, route };
}

const EXPOSED = "PAYMENT-REQUIRED,PAYMENT-RESPONSE,X-PAYMENT-RESPONSE,Retry-After";

/** The CORS headers the mode gives a request from `origin` (docs/contract.md §7.6). */
function corsFor(mode: string, origin: string | undefined, own: boolean): Record<string, string> {
  if (mode === "production") {
    return { "access-control-allow-origin": "*", "access-control-expose-headers": EXPOSED };
  }
  if (origin === undefined || !own) return { vary: "Origin" };
  return {
    vary: "Origin",
    "access-control-allow-origin": origin,
    "access-control-expose-headers": EXPOSED,
  };
}

function cors(raw: Raw): Record<string, string> {
  return Object.fromEntries(
    Object.entries(raw.headers).filter(([name]) => name === "vary" || name.startsWith("access-")),
  );
}

describe.each(["production", "devnet"])("the fast path's answers in %s mode", (mode) => {
  const service = () => services[mode]!;
  const reached = () => new URL(service().url).origin;
  const origins = (): [string, string | undefined, boolean][] => [
    ["no Origin", undefined, false],
    ["the origin it was reached at", reached(), true],
    ["PUBLIC_URL's origin", PUBLIC_URL, true],
    ["another site's origin", "https://elsewhere.example", false],
  ];

  beforeAll(async () => {
    // The first unpaid request prepares the challenge the fast path sends.
    const first = await post(service().url, JSON.stringify({ url: target.url }), {}, false);
    expect(first.status).toBe(402);
  });

  it("402: the route's headers, CORS per the mode, for each origin", async () => {
    for (const [, origin, own] of origins()) {
      const headers: Record<string, string> = origin === undefined ? {} : { origin };
      const { fast, route } = await bothPaths(
        service(),
        JSON.stringify({ url: target.url }),
        headers,
      );
      expect(fast.status).toBe(402);
      expect(fast.headers).toEqual(route.headers);
      expect(fast.body).toBe(route.body);
      expect(cors(fast)).toEqual(corsFor(mode, origin, own));
    }
  });

  it("400: the route's headers, CORS per the mode, for each origin", async () => {
    for (const [, origin, own] of origins()) {
      const headers: Record<string, string> = origin === undefined ? {} : { origin };
      const { fast, route } = await bothPaths(service(), JSON.stringify({ url: "nope" }), headers);
      expect(fast.status).toBe(400);
      expect(fast.headers).toEqual(route.headers);
      expect(cors(fast)).toEqual(corsFor(mode, origin, own));
    }
  });

  it("429: the route's headers past the client's budget, from its own origin", async () => {
    const limited = services[`${mode} limited`]!;
    const body = JSON.stringify({ url: target.url });
    expect((await post(limited.url, body, {}, false)).status).toBe(402);
    const origin = new URL(limited.url).origin;
    const { fast, route } = await bothPaths(limited, body, { origin });
    expect(fast.status).toBe(429);
    expect(fast.headers).toEqual(route.headers);
    expect(cors(fast)).toEqual(corsFor(mode, origin, true));
  });
});

describe("devnet mode's Host rule", () => {
  it("a Host the rule refuses gets the app's 403 every time, never the fast path's 402", async () => {
    const service = services.devnet!;
    const before = service.fastAnswers;
    for (let i = 0; i < 2; i++) {
      const refused = await post(
        service.url,
        JSON.stringify({ url: target.url }),
        { host: "rebound.example" },
        false,
      );
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ error_type: "host_not_allowed" });
    }
    expect(service.fastAnswers).toBe(before);
  });

  it("in production the same Host gets the fast path's 402", async () => {
    const service = services.production!;
    const body = JSON.stringify({ url: target.url });
    // Its challenge is prepared per Host: the route's first answer, then the fast path's.
    await post(service.url, body, { host: "rebound.example" }, false);
    const before = service.fastAnswers;
    const answer = await post(service.url, body, { host: "rebound.example" }, false);
    expect(answer.status).toBe(402);
    expect(service.fastAnswers).toBe(before + 1);
  });
});
