/**
 * The route table (src/routes.ts) is what the service serves and documents: the router mounts
 * exactly its paths, with its methods, and answers their other methods 405; the metrics label
 * exactly them; /openapi.json describes exactly its documented operations, free ones without
 * security.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_PAYER } from "../../src/devnet/constants.js";
import { ROUTES, createApp, createOpenApiDocument } from "../../src/http/index.js";
import { ROUTE_TABLE, type Route } from "../../src/routes.js";
import { createUrlPolicy } from "../../src/snapshot/index.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "./helpers.js";

function app(devnet: boolean) {
  return createApp({
    engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
    ...(devnet && { devnet: true, networks: ["eip155:84532"], devnetPayer: DEFAULT_PAYER }),
  });
}

const operation = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

/** A router path in the table's form: `:name` written `{name}`. */
const tableForm = (path: string) => path.replace(/:(\w+)/g, "{$1}");

/**
 * What the router mounts: its GET and POST handlers, without the fallbacks (`ALL`), the
 * middleware (`*`) and the reference's script under its own path (`/reference/:file`).
 */
function mounted(devnet: boolean): string[] {
  const handlers = app(devnet).routes.filter(
    (r) =>
      (r.method === "GET" || r.method === "POST") &&
      r.path !== "*" &&
      !r.path.startsWith("/reference/"),
  );
  return [...new Set(handlers.map((r) => operation({ ...r, path: tableForm(r.path) })))].sort();
}

function tableOperations(keep: (route: Route) => boolean): string[] {
  return ROUTE_TABLE.filter(keep).map(operation).sort();
}

describe("the route table", () => {
  it("is every route the router mounts, the devnet's own only in devnet mode", () => {
    expect(mounted(false)).toEqual(tableOperations((route) => !route.devnetOnly));
    expect(mounted(true)).toEqual(tableOperations(() => true));
  });

  it("is every path whose other methods are answered 405 with Allow", () => {
    const fallbacks = app(true).routes.filter((r) => r.method === "ALL" && !r.path.includes("*"));
    expect([...new Set(fallbacks.map((r) => tableForm(r.path)))].sort()).toEqual(
      [...new Set(ROUTE_TABLE.map((route) => route.path))].sort(),
    );
  });

  it("answers each of its routes with something other than 404", async () => {
    const served = app(true);
    for (const route of ROUTE_TABLE) {
      const res = await served.request(`http://127.0.0.1:8080${route.path}`, {
        method: route.method,
      });
      // A route with a parameter may answer 404 itself (an unknown id), never the router's.
      const body = res.status === 404 ? ((await res.json()) as { code: string }) : undefined;
      expect(body?.code ?? res.status, operation(route)).not.toBe("not_found");
    }
  });

  it("is what the metrics and the request log label", () => {
    expect([...ROUTES].sort()).toEqual(ROUTE_TABLE.map((route) => route.path).sort());
  });

  it("lists exactly the operations /openapi.json documents, and which of them are free", () => {
    const paths = createOpenApiDocument().paths as Record<string, Record<string, object>>;
    const documented = Object.entries(paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, described]) => ({
        path,
        method: method.toUpperCase(),
        free: (described as { security?: unknown[] }).security?.length === 0,
      })),
    );
    expect(documented.map((d) => `${d.method} ${d.path}`).sort()).toEqual(
      tableOperations((route) => route.documented),
    );
    const paid = ROUTE_TABLE.filter((route) => route.paid).map(operation);
    for (const d of documented) {
      expect(d.free, `${d.method} ${d.path}`).toBe(!paid.includes(`${d.method} ${d.path}`));
    }
  });
});
