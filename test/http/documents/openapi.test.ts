import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { ClientRateLimit, createApp, createOpenApiDocument } from "../../../src/http/index.js";
import { ALL_FINDINGS, createUrlPolicy } from "../../../src/snapshot/index.js";
import { connectedMcpClient } from "../../fixtures/mcp-client.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult, serveApp, type Served } from "../helpers.js";

let served: Served;
let doc: Record<string, unknown>;
let ajv: Ajv2020;

beforeAll(async () => {
  served = await serveApp({ engine: new ScriptedEngine(async (raw) => sampleResult(raw)) });
  doc = (await (await fetch(`${served.url}/openapi.json`)).json()) as Record<string, unknown>;
  // OpenAPI adds keywords (example, discriminator…) that plain JSON Schema does not know.
  ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addFormat("date-time", (s: string) => !Number.isNaN(Date.parse(s)));
  ajv.addSchema(doc, "openapi.json");
});
afterAll(() => served.stop());

function validate(component: string, value: unknown) {
  const check = ajv.getSchema(`openapi.json#/components/schemas/${component}`);
  if (!check) throw new Error(`no component ${component}`);
  const ok = check(value);
  return { ok, errors: check.errors };
}

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("is the document the code generates, describing all six endpoints", () => {
    expect(doc).toEqual(createOpenApiDocument());
    expect(Object.keys(doc.paths as object).sort()).toEqual(
      [
        "/demo/snapshot",
        "/health",
        "/openapi.json",
        "/ready",
        "/v1/snapshot",
        "/v1/snapshots/{snapshot_id}",
      ].sort(),
    );
    const post = (doc.paths as Record<string, Record<string, { responses: object }>>)[
      "/v1/snapshot"
    ]?.post;
    expect(Object.keys(post?.responses ?? {})).toEqual(
      expect.arrayContaining(["200", "400", "402", "503"]),
    );
    expect(JSON.stringify(post)).toContain("PAYMENT-REQUIRED");
    // The payment layer's refusal of a payer over its budget of unpaid snapshots.
    expect(Object.keys(post?.responses ?? {})).toContain("429");
    // Paying once (docs/payment.md): a payment id used with another proof or body.
    expect(Object.keys(post?.responses ?? {})).toContain("409");
  });

  it("states the operator's contact only when one is configured", () => {
    expect((doc.info as Record<string, unknown>).contact).toBeUndefined();
    const info = (facts: Parameters<typeof createOpenApiDocument>[0]) =>
      createOpenApiDocument(facts).info as Record<string, unknown>;
    expect(info({ operatorContact: { email: "ops@example.com" } }).contact).toEqual({
      email: "ops@example.com",
    });
    expect(info({ operatorContact: { url: "https://example.com/c" } }).contact).toEqual({
      url: "https://example.com/c",
    });
  });

  it("describes findings (every id), score and grade", () => {
    const result = (doc.components as { schemas: Record<string, Record<string, unknown>> }).schemas
      .SnapshotResult as { properties: Record<string, Record<string, unknown>> };
    const finding = (result.properties.findings as { items: Record<string, unknown> }).items as {
      properties: Record<string, { enum?: string[] }>;
    };
    expect(finding.properties.id?.enum).toEqual(ALL_FINDINGS.map((d) => d.id));
    expect(finding.properties.severity?.enum).toEqual(["high", "medium", "low", "info"]);
    expect(result.properties.score).toMatchObject({ minimum: 0, maximum: 100 });
    expect(result.properties.grade?.enum).toContain("A+");
    const bad = { ...sampleResult("x"), findings: [{ ...ALL_FINDINGS[0], id: "made-up" }] };
    expect(validate("SnapshotResult", bad).ok).toBe(false);
  });

  it("rejects a value that breaks the schema (the validation below can fail)", () => {
    expect(validate("SnapshotResult", { ...sampleResult("x"), checks: {} }).ok).toBe(false);
    expect(
      validate("SnapshotError", { requested_url: "", error: "x", error_type: "nope" }).ok,
    ).toBe(false);
    expect(validate("Health", { status: "down", version: "1.0.0" }).ok).toBe(false);
  });
});

/** Every `description` in a JSON Schema, by the path of property names and keywords to it. */
function descriptionsOf(schema: unknown, path = "", out = new Map<string, string>()) {
  if (typeof schema !== "object" || schema === null) return out;
  for (const [key, value] of Object.entries(schema)) {
    if (key === "description" && typeof value === "string") out.set(path || "(root)", value);
    else if (key !== "example" && key !== "examples") descriptionsOf(value, `${path}/${key}`, out);
  }
  return out;
}

describe("the OpenAPI components carry every description of the schemas", () => {
  it("SnapshotResult, DemoSnapshotResult and the request: the same descriptions as MCP lists", async () => {
    const { client, tools } = await connectedMcpClient(served.url);
    await client.close();
    const components = (doc.components as { schemas: Record<string, unknown> }).schemas;
    const snapshotTool = tools.find((tool) => tool.name === "snapshot");
    const demoTool = tools.find((tool) => tool.name === "demo_snapshot");
    // The snapshot tool's output is anyOf [SnapshotResult, SnapshotError, PaymentRequired].
    const listedResult = (snapshotTool?.outputSchema as unknown as { anyOf: unknown[] }).anyOf[0];
    const pairs = [
      [components.SnapshotResult, listedResult],
      [components.DemoSnapshotResult, demoTool?.outputSchema],
    ] as const;
    for (const [published, listed] of pairs) {
      const fromMcp = descriptionsOf(listed);
      expect(fromMcp.size).toBeGreaterThan(20);
      expect(descriptionsOf(published)).toEqual(fromMcp);
    }
    const urlField = (components.SnapshotRequest as { properties: { url: object } }).properties.url;
    expect(descriptionsOf(urlField).get("(root)")).toBe(
      descriptionsOf(snapshotTool?.inputSchema).get("/properties/url"),
    );
    expect(descriptionsOf(components.SnapshotRequest).get("(root)")).toMatch(/at most \d+ KiB/);
  });
});

describe("real responses match their published schemas", () => {
  it("health", async () => {
    const body: unknown = await (await fetch(`${served.url}/health`)).json();
    expect(validate("Health", body)).toEqual({ ok: true, errors: null });
  });

  it("ready, and not ready", async () => {
    const body: unknown = await (await fetch(`${served.url}/ready`)).json();
    expect(validate("Readiness", body)).toEqual({ ok: true, errors: null });
    const down = { status: "not_ready", down: ["draining", "facilitator"], code: "not_ready" };
    expect(validate("Readiness", down)).toEqual({ ok: true, errors: null });
    expect(validate("Readiness", { status: "not_ready", down: [] }).ok).toBe(false);
  });

  it("429 RateLimited", async () => {
    const app = createApp({
      engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
      urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
      rateLimit: new ClientRateLimit(new RateLimiterMemory({ points: 1, duration: 60 })),
      log: () => {},
    });
    expect((await app.request("/demo/snapshot")).status).toBe(200);
    const limited = await app.request("/demo/snapshot");
    expect(limited.status).toBe(429);
    expect(validate("RateLimited", await limited.json())).toEqual({ ok: true, errors: null });
  });

  it("demo", async () => {
    const body: unknown = await (await fetch(`${served.url}/demo/snapshot`)).json();
    expect(validate("DemoSnapshotResult", body)).toEqual({ ok: true, errors: null });
  });

  it("400 SnapshotError", async () => {
    const res = await fetch(`${served.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1/" }),
    });
    expect(res.status).toBe(400);
    expect(validate("SnapshotError", await res.json())).toEqual({ ok: true, errors: null });
  });

  it("404 and 405 errors", async () => {
    const notFound: unknown = await (await fetch(`${served.url}/nope`)).json();
    expect(validate("ServiceError", notFound)).toEqual({ ok: true, errors: null });
    const notAllowed: unknown = await (
      await fetch(`${served.url}/health`, { method: "PUT" })
    ).json();
    expect(validate("ServiceError", notAllowed)).toEqual({ ok: true, errors: null });
  });
});
