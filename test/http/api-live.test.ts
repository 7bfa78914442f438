import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createOpenApiDocument } from "../../src/http/index.js";
import { createSnapshotEngine, type SnapshotEngine } from "../../src/snapshot/index.js";
import { startTarget } from "../fixtures/held-target.js";
import { closedPort } from "../fixtures/targets.js";
import { serveApp, type Served } from "./helpers.js";

let target: Awaited<ReturnType<typeof startTarget>>;
let engine: SnapshotEngine;
let served: Served;
let deadPort: number;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat("date-time", (s: string) => !Number.isNaN(Date.parse(s)));
ajv.addSchema(createOpenApiDocument(), "openapi.json");

beforeAll(async () => {
  target = await startTarget();
  deadPort = await closedPort("127.0.0.1");
  const allowedPorts = new Set([target.port, deadPort]);
  const allowCidrs = ["127.0.0.0/8"];
  engine = createSnapshotEngine({
    timeoutMs: 10_000,
    maxRedirects: 10,
    allowedPorts,
    allowCidrs,
    dnsServers: [],
  });
  served = await serveApp({ engine, allowCidrs, allowedPorts });
});
afterAll(async () => {
  await served.stop();
  await engine.close();
  await target.close();
});

const post = (url: string) =>
  fetch(`${served.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url }),
  });

function matches(component: string, value: unknown): boolean {
  const check = ajv.getSchema(`openapi.json#/components/schemas/${component}`);
  if (!check) throw new Error(`no component ${component}`);
  const ok = check(value);
  if (!ok) console.error(check.errors);
  return ok as boolean;
}

it("a live snapshot through the API is a 200 matching the published SnapshotResult", async () => {
  const res = await post(target.url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json(;\s*charset=utf-8)?$/i);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({
    requested_url: target.url,
    reachable: true,
    final_status_code: 200,
    x_frame_options_present: true,
  });
  expect(matches("SnapshotResult", body)).toBe(true);
  expect(served.logged).toEqual([]);
});

it("an engine-side failure (connection refused) is a 400 unreachable matching SnapshotError", async () => {
  const url = `http://127.0.0.1:${deadPort}/`;
  const res = await post(url);
  expect(res.status).toBe(400);
  expect(res.headers.get("content-type")).toMatch(/^application\/json(;\s*charset=utf-8)?$/i);
  const body: unknown = await res.json();
  expect(body).toEqual({
    requested_url: url,
    error: expect.any(String),
    error_type: "unreachable",
  });
  expect(matches("SnapshotError", body)).toBe(true);
});
