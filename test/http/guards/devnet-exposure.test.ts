/**
 * Devnet and local mode are for this machine (docs/security.md, "Devnet and local mode"): every
 * route refuses a Host the Host rule refuses (a name rebound by DNS to this machine), CORS
 * answers only the service's own origins, and the scan form is posted only from the service's
 * own page — never with an empty or missing Origin. Production keeps any Host and any origin.
 * Real servers on loopback; the Host and Origin headers set as a rebinding page's browser or a
 * LAN client would send them.
 */
import { request, type IncomingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PAYER } from "../../../src/devnet/constants.js";
import { ROUTES, createApp, startServer, type RunningServer } from "../../../src/http/index.js";
import { createUrlPolicy } from "../../../src/snapshot/index.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "../helpers.js";

const PAY_TO = "0x1111111111111111111111111111111111111111";
const ATTACKER = "rebound.evil.example";

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request with the headers given as they are (fetch cannot set Host). */
function ask(
  server: RunningServer,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body = "",
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: server.port, method, path, headers, agent: false },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** How each route is asked: its method, a body where it takes one. */
function routeRequest(path: string): { method: string; body: string; type: string } {
  if (path === "/v1/snapshot") {
    return { method: "POST", body: '{"url":"https://example.com"}', type: "application/json" };
  }
  if (path === "/mcp") {
    return {
      method: "POST",
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      type: "application/json",
    };
  }
  if (path.startsWith("/demo/") && path !== "/demo/snapshot") {
    return {
      method: "POST",
      body: "url=http%3A%2F%2F127.0.0.1%3A9%2Fadmin",
      type: "application/x-www-form-urlencoded",
    };
  }
  return { method: "GET", body: "", type: "text/plain" };
}

const engine = new ScriptedEngine(async (raw) => sampleResult(raw));
let devnet: RunningServer;
let production: RunningServer;

async function serve(deps: Partial<Parameters<typeof createApp>[0]>): Promise<RunningServer> {
  const app = createApp({
    engine,
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
    ...deps,
  });
  return startServer({ config: { host: "127.0.0.1", port: 0 }, app });
}

beforeAll(async () => {
  devnet = await serve({
    networks: ["eip155:84532"],
    devnet: true,
    devnetPayer: DEFAULT_PAYER,
    payTo: PAY_TO,
  });
  production = await serve({ networks: ["eip155:8453"], payTo: PAY_TO });
});
afterAll(() => Promise.all([devnet, production].map((s) => s.close(1_000))));

describe("the Host rule on every route", () => {
  it("devnet mode refuses a name rebound to this machine on every route, before any work", async () => {
    const host = `${ATTACKER}:${devnet.port}`;
    const origin = `http://${host}`;
    for (const path of [...ROUTES, "/no-such-path"]) {
      const { method, body, type } = routeRequest(path);
      const calls = engine.calls.length;
      const res = await ask(devnet, method, path, { host, origin, "content-type": type }, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.headers["access-control-allow-origin"], path).toBeUndefined();
      const answer = JSON.parse(res.body) as { code?: string; error?: { code: number } };
      // POST /mcp answers in JSON-RPC (its own guard); every other route names the refusal.
      if (path === "/mcp") expect(answer.error?.code).toBe(-32000);
      else
        expect(answer, path).toMatchObject({
          code: "host_not_allowed",
          error_type: "host_not_allowed",
        });
      expect(engine.calls.length, `${path} fetched nothing`).toBe(calls);
    }
  });

  it("devnet mode serves localhost, IP literals and a request without Host", async () => {
    for (const host of [`localhost:${devnet.port}`, `127.0.0.1:${devnet.port}`, `[::1]:1`]) {
      expect((await ask(devnet, "GET", "/health", { host })).status, host).toBe(200);
    }
    // HTTP/1.0 without Host (a load balancer's plain check) is given the address it reached.
    const res = await ask(devnet, "GET", "/health", { host: "" });
    expect(res.status).toBe(200);
  });

  it("production serves any Host", async () => {
    const res = await ask(production, "GET", "/health", { host: ATTACKER });
    expect(res.status).toBe(200);
  });
});

describe("CORS", () => {
  const preflight = (server: RunningServer, origin: string) =>
    ask(server, "OPTIONS", "/v1/snapshot", {
      origin,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type,payment-signature",
    });

  it("devnet mode answers no other origin: no wildcard, no preflight, nothing readable", async () => {
    const foreign = "https://any-page.example";
    for (const path of ["/health", "/demo/snapshot", "/openapi.json"]) {
      const res = await ask(devnet, "GET", path, { origin: foreign });
      expect(res.status).toBe(200);
      expect(res.headers["access-control-allow-origin"], path).toBeUndefined();
      expect(res.headers.vary).toMatch(/origin/i);
    }
    const unpaid = await ask(
      devnet,
      "POST",
      "/v1/snapshot",
      { origin: foreign, "content-type": "application/json" },
      '{"url":"https://example.com"}',
    );
    expect(unpaid.headers["access-control-allow-origin"]).toBeUndefined();
    const pre = await preflight(devnet, foreign);
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("devnet mode lets the service's own origin read the payment headers", async () => {
    const own = devnet.url;
    const res = await ask(devnet, "GET", "/health", { origin: own });
    expect(res.headers["access-control-allow-origin"]).toBe(own);
    expect(res.headers["access-control-expose-headers"]).toContain("PAYMENT-RESPONSE");
    const pre = await preflight(devnet, own);
    expect(pre.status).toBe(204);
    expect(pre.headers["access-control-allow-origin"]).toBe(own);
    expect(pre.headers["access-control-allow-headers"]).toContain("PAYMENT-SIGNATURE");
  });

  it("production answers any origin, as browser x402 clients need", async () => {
    const res = await ask(production, "GET", "/health", { origin: "https://any-page.example" });
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    const pre = await preflight(production, "https://any-page.example");
    expect(pre.headers["access-control-allow-origin"]).toBe("*");
  });
});

describe("the scan form's Origin check", () => {
  /** A loopback admin URL, as the rebinding page would ask for. */
  const admin = "url=http%3A%2F%2F127.0.0.1%3A9%2Fadmin";
  const post = (
    server: RunningServer,
    path: string,
    headers: Record<string, string>,
    form = admin,
  ) =>
    ask(
      server,
      "POST",
      path,
      { "content-type": "application/x-www-form-urlencoded", ...headers },
      form,
    );

  it("the paying form refuses an empty Origin, a missing one and another site's, fetching nothing", async () => {
    const calls = engine.calls.length;
    const refusals = [
      await post(devnet, "/demo/pay-and-scan", { origin: "" }),
      await post(devnet, "/demo/pay-and-scan", {}),
      // A LAN client needs no browser: no Origin, and not a form's content type.
      await post(devnet, "/demo/pay-and-scan", { "content-type": "application/json" }),
      await post(devnet, "/demo/pay-and-scan", { origin: "https://evil.example" }),
      await post(devnet, "/demo/pay-and-scan", { origin: "null" }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(403);
      expect(JSON.parse(res.body)).toMatchObject({
        code: "foreign_origin",
        error_type: "foreign_origin",
      });
    }
    expect(engine.calls.length).toBe(calls);
  });

  it("the paying form refuses a page whose origin is the attacker's Host, rebound here", async () => {
    const calls = engine.calls.length;
    const host = `${ATTACKER}:${devnet.port}`;
    const res = await post(devnet, "/demo/pay-and-scan", { host, origin: `http://${host}` });
    expect(res.status).toBe(403);
    expect(engine.calls.length).toBe(calls);
  });

  it("the paying form serves the service's own page", async () => {
    const calls = engine.calls.length;
    for (const own of [devnet.url, `http://localhost:${devnet.port}`]) {
      const host = new URL(own).host;
      const res = await post(
        devnet,
        "/demo/pay-and-scan",
        { host, origin: own },
        "url=https%3A%2F%2Fexample.com",
      );
      expect(res.status, own).toBe(200);
      expect(res.body).toContain('data-outcome="report"');
    }
    expect(engine.calls.length).toBe(calls + 2);
  });

  it("the challenge form refuses an empty or missing Origin in production too", async () => {
    const refused: Array<Record<string, string>> = [
      { origin: "" },
      {},
      { "content-type": "application/json" },
    ];
    for (const headers of refused) {
      expect((await post(production, "/demo/challenge", headers)).status).toBe(403);
    }
    expect((await post(production, "/demo/challenge", { origin: production.url })).status).toBe(
      400,
    );
  });
});
