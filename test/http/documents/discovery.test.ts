/**
 * Discovery for agents (docs/contract.md §7.9): what /openapi.json says of payment and its
 * examples, /.well-known/x402, /llms.txt and the icon — on servers configured as production
 * (two networks, a public URL) and as devnet mode.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, startServer, type RunningServer } from "../../../src/http/index.js";
import { SnapshotResultSchema } from "../../../src/http/documents/report-schemas.js";
import { createUrlPolicy, demoSnapshot } from "../../../src/snapshot/index.js";
import { DEFAULT_PORTS, ScriptedEngine, rawRequest, sampleResult } from "../helpers.js";

const PAY_TO = "0x1111111111111111111111111111111111111111";
const PUBLIC_URL = "https://api.example/secsnap";
const MAINNET = /eip155:8453(?!2)|0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913|Base `|"base"/i;

type Doc = Record<string, unknown> & {
  info: Record<string, unknown>;
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components: { schemas: Record<string, Record<string, unknown>> };
};

let production: RunningServer;
let devnet: RunningServer;
let local: RunningServer;

async function serve(deps: Partial<Parameters<typeof createApp>[0]>): Promise<RunningServer> {
  const app = createApp({
    engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
    ...deps,
  });
  return startServer({ config: { host: "127.0.0.1", port: 0 }, app });
}

beforeAll(async () => {
  production = await serve({
    priceUsdc: "0.25",
    publicUrl: PUBLIC_URL,
    networks: ["eip155:8453", "eip155:84532"],
    payTo: PAY_TO,
  });
  devnet = await serve({ networks: ["eip155:84532"], devnet: true });
  local = await serve({});
});
afterAll(() => Promise.all([production, devnet, local].map((s) => s.close(1_000))));

async function openApi(server: RunningServer): Promise<Doc> {
  return (await (await fetch(`${server.url}/openapi.json`)).json()) as Doc;
}

/** GET with a Host header of our choosing (fetch does not let one set it). */
async function withHost(server: RunningServer, path: string, host: string) {
  return rawRequest(server.port, [
    `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  ]);
}

describe("GET /openapi.json for agents", () => {
  it("prices the paid operation with x-payment-info, from the configured price", async () => {
    const doc = await openApi(production);
    const post = doc.paths["/v1/snapshot"]!.post!;
    expect(post["x-payment-info"]).toEqual({
      price: { mode: "fixed", currency: "USD", amount: "0.25" },
      protocols: [{ x402: {} }],
    });
    expect((await openApi(local)).paths["/v1/snapshot"]!.post!["x-payment-info"]).toMatchObject({
      price: { amount: "0.05" },
    });
    // It documents its 402, whose header carries a real challenge for this offer.
    const responses = post.responses as Record<
      string,
      { headers: Record<string, { example?: string }> }
    >;
    const header = responses["402"]!.headers["PAYMENT-REQUIRED"]!;
    const decoded = decodePaymentRequiredHeader(header.example ?? "");
    expect(decoded.resource.url).toBe(`${PUBLIC_URL}/v1/snapshot`);
    expect(decoded.accepts.map((a) => [a.network, a.amount, a.payTo])).toEqual([
      ["eip155:8453", "250000", PAY_TO],
      ["eip155:84532", "250000", PAY_TO],
    ]);
  });

  it("declares security: [] on every free operation, and no security scheme on the paid one", async () => {
    const doc = await openApi(production);
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ path, method, op })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(5);
    for (const { path, op } of operations) {
      if (path === "/v1/snapshot") expect(op).not.toHaveProperty("security");
      else expect(op.security).toEqual([]);
    }
    expect(doc).not.toHaveProperty("security");
    expect(doc.components).not.toHaveProperty("securitySchemes");
  });

  it("says in info.x-guidance, in two or three sentences, how an agent uses the service", async () => {
    const guidance = (await openApi(production)).info["x-guidance"] as string;
    const sentences = guidance.split(/(?<=\.)\s+/).filter((s) => s.length > 0);
    expect(sentences.length).toBeGreaterThanOrEqual(2);
    expect(sentences.length).toBeLessThanOrEqual(3);
    for (const word of ["/v1/snapshot", "402", "PAYMENT-SIGNATURE", "0.25 USDC", "400"]) {
      expect(guidance).toContain(word);
    }
  });

  it.each([
    ["production", () => production],
    ["devnet mode", () => devnet],
  ])("gives every schema a realistic example that its schema accepts (%s)", async (_, server) => {
    const doc = await openApi(server());
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addFormat("date-time", (s: string) => !Number.isNaN(Date.parse(s)));
    ajv.addSchema(doc, "openapi.json");
    const { schemas } = doc.components;
    expect(Object.keys(schemas).length).toBeGreaterThanOrEqual(9);
    for (const [name, schema] of Object.entries(schemas)) {
      expect(schema, name).toHaveProperty("example");
      const check = ajv.getSchema(`openapi.json#/components/schemas/${name}`)!;
      expect(check(schema.example), `${name}: ${JSON.stringify(check.errors)}`).toBe(true);
    }
    const { _demo, _note, ...report } = demoSnapshot();
    expect(schemas.SnapshotResult!.example).toEqual(report);
    expect(schemas.DemoSnapshotResult!.example).toEqual(demoSnapshot());
    expect(schemas.SnapshotError!.example).toMatchObject({ error_type: "ssrf" });
    expect(schemas.PaymentRequiredV1!.example).toMatchObject(
      server() === production
        ? {
            x402Version: 1,
            accepts: [
              { network: "base", maxAmountRequired: "250000", payTo: PAY_TO },
              { network: "base-sepolia", maxAmountRequired: "250000", payTo: PAY_TO },
            ],
          }
        : { accepts: [{ network: "base-sepolia", extra: { devnet: true } }] },
    );
    // The checks can fail: a wrong value is refused.
    const check = ajv.getSchema("openapi.json#/components/schemas/SnapshotResult")!;
    expect(check({ ...report, grade: "Z" })).toBe(false);
  });

  it("stays a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(await openApi(production)));
    expect(result.errors).toBeUndefined();
  });

  it("in devnet mode shows only the devnet's network, in every document", async () => {
    const doc = JSON.stringify(await openApi(devnet));
    expect(doc).toContain("eip155:84532");
    expect(doc).toContain("devnet");
    expect(doc).not.toMatch(MAINNET);
    const llms = await (await fetch(`${devnet.url}/llms.txt`)).text();
    expect(llms).toContain("eip155:84532");
    expect(llms).not.toMatch(MAINNET);
    const wellKnown = await (await fetch(`${devnet.url}/.well-known/x402`)).text();
    expect(wellKnown).not.toMatch(MAINNET);
    const page = await (await fetch(`${devnet.url}/`)).text();
    expect(page).toContain("eip155:84532");
    expect(page).not.toMatch(/eip155:8453(?!2)|Base \(/);
    // The production document does name mainnet: the pattern can match.
    expect(JSON.stringify(await openApi(production))).toMatch(MAINNET);
  });
});

describe("GET /.well-known/x402", () => {
  it("lists the paid resource under PUBLIC_URL, whatever the request's Host", async () => {
    const res = await withHost(production, "/.well-known/x402", "evil.example");
    expect(res.status).toBe(200);
    expect(res.headers).toMatch(/\r\ncontent-type: application\/json/i);
    const body = JSON.parse(res.body) as Record<string, unknown>;
    expect(body).toEqual({
      version: 1,
      resources: [`POST ${PUBLIC_URL}/v1/snapshot`],
      instructions: expect.any(String) as unknown,
    });
    expect(res.body).not.toContain("evil.example");
    expect(body.instructions).toContain("0.25 USDC");
  });

  it("without PUBLIC_URL, names the URL the request was made to, as the 402 does", async () => {
    const res = await withHost(local, "/.well-known/x402", "shop.example:8080");
    expect(JSON.parse(res.body)).toMatchObject({
      resources: ["POST http://shop.example:8080/v1/snapshot"],
    });
    const direct = (await (await fetch(`${local.url}/.well-known/x402`)).json()) as {
      resources: string[];
    };
    expect(direct.resources).toEqual([`POST ${local.url}/v1/snapshot`]);
  });
});

describe("GET /llms.txt", () => {
  it("is plain text saying what it does, the price, the networks, how to pay, input, output and links", async () => {
    const res = await fetch(`${production.url}/llms.txt`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    const text = await res.text();
    expect(text.startsWith("# secsnap\n")).toBe(true);
    for (const fact of [
      "0.25 USDC",
      "eip155:8453",
      "eip155:84532",
      "PAYMENT-REQUIRED",
      "PAYMENT-SIGNATURE",
      "X-PAYMENT",
      `POST ${PUBLIC_URL}/mcp`,
      "secsnap mcp",
      'x402/payment"]',
      '{"url": "https://example.com"}',
      `${PUBLIC_URL}/demo/snapshot`,
      `${PUBLIC_URL}/reference`,
      `${PUBLIC_URL}/openapi.json`,
    ]) {
      expect(text).toContain(fact);
    }
    // Every field of the report, by name.
    for (const field of Object.keys(SnapshotResultSchema.shape)) {
      expect(text).toContain(`- \`${field}\`: `);
    }
  });
});

describe("the icon", () => {
  it("is served by the service itself, as ICO and SVG, cacheable", async () => {
    const ico = await fetch(`${local.url}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get("content-type")).toBe("image/x-icon");
    expect(ico.headers.get("cache-control")).toMatch(/^public, max-age=[1-9]\d*$/);
    const bytes = Buffer.from(await ico.arrayBuffer());
    // ICONDIR: reserved 0, type 1 (icon), one image of 16×16.
    expect([...bytes.subarray(0, 8)]).toEqual([0, 0, 1, 0, 1, 0, 16, 16]);
    expect(bytes.readUInt32LE(14) + 22).toBe(bytes.length);
    expect(bytes.length).toBeLessThan(2_048);
    const svg = await fetch(`${local.url}/favicon.svg`);
    expect(svg.headers.get("content-type")).toBe("image/svg+xml");
    expect(await svg.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect((await fetch(`${local.url}/favicon.ico`, { method: "HEAD" })).status).toBe(200);
    // The page links the SVG.
    expect(await (await fetch(`${local.url}/`)).text()).toContain(
      '<link rel="icon" href="/favicon.svg"',
    );
  });
});
