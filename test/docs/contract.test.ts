/**
 * docs/contract.md agrees with the code (issue 21): every operation of the OpenAPI document the
 * app serves has its row in §1.2 naming each of its response statuses, and every variable
 * config.ts reads has its row in §6.1. Both lists come from the running code, so a route, status
 * or variable added without its line in the contract fails here.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { ANSWER_CATALOGUE } from "../../src/payment/index.js";
import { variablesRead } from "../fixtures/config-variables.js";
import { ScriptedEngine, sampleResult, serveApp, type Served } from "../http/helpers.js";

const CONTRACT = readFileSync(new URL("../../docs/contract.md", import.meta.url), "utf8");

/** The text of one `### <number> …` section, up to the next heading. */
function section(number: string): string {
  const start = CONTRACT.search(new RegExp(`^### ${number.replace(".", "\\.")} `, "m"));
  if (start < 0) throw new Error(`docs/contract.md has no section ${number}`);
  const rest = CONTRACT.slice(start + 4);
  const end = rest.search(/^#{2,3} /m);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The cells of each table row of a section, header and rule rows left out. */
function tableRows(text: string): string[][] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("|") && !/^\|\s*-/.test(line))
    .slice(1)
    .map((line) =>
      line
        .slice(1, -1)
        .split("|")
        .map((cell) => cell.trim()),
    );
}

/** §1.2's "Answers" cell for each `METHOD /path` its first cell names. */
function endpointAnswers(): Map<string, string> {
  const answers = new Map<string, string>();
  for (const [paths = "", , answer = ""] of tableRows(section("1.2"))) {
    for (const [, operation] of paths.matchAll(/`([A-Z]+ \/[^`]*)`/g)) {
      answers.set(operation as string, answer);
    }
  }
  return answers;
}

/** §1.3's "Error answers" table: each code as `status code [added headers]`. */
function errorAnswerRows(): string[] {
  const text = section("1.3");
  const table = text.slice(text.indexOf("#### Error answers"));
  return tableRows(table).map(([status = "", code = "", , adds = ""]) =>
    [status, code.replaceAll("`", ""), adds.replaceAll("`", "")].join(" ").trim(),
  );
}

/** The catalogue in the same form. */
function catalogueRows(): string[] {
  return Object.entries(ANSWER_CATALOGUE).map(([code, { status, headers }]) =>
    [String(status), code, headers.join(", ")].join(" ").trim(),
  );
}

/** Every variable §6.1's first column names. */
function configurationVariables(): Set<string> {
  const names = new Set<string>();
  for (const [variables = ""] of tableRows(section("6.1"))) {
    for (const [, name] of variables.matchAll(/`([A-Z0-9_]+)`/g)) names.add(name as string);
  }
  return names;
}

let served: Served;
let paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
let schemas: Record<string, Schema>;

interface Schema {
  properties?: Record<string, { enum?: string[]; const?: string }>;
  anyOf?: Schema[];
}

/** The codes a body schema allows, in any of its branches. */
function codesOf(schema: Schema | undefined): string[] {
  if (!schema) return [];
  const code = schema.properties?.code;
  const own = code ? (code.enum ?? (code.const !== undefined ? [code.const] : [])) : [];
  return [...own, ...(schema.anyOf ?? []).flatMap(codesOf)];
}

beforeAll(async () => {
  served = await serveApp({ engine: new ScriptedEngine(async (raw) => sampleResult(raw)) });
  const doc = (await (await fetch(`${served.url}/openapi.json`)).json()) as {
    paths: typeof paths;
    components: { schemas: typeof schemas };
  };
  paths = doc.paths;
  schemas = doc.components.schemas;
});
afterAll(() => served.stop());

describe("docs/contract.md", () => {
  it("§1.2 names every operation of the served OpenAPI document and each of its statuses", () => {
    const answers = endpointAnswers();
    const operations = Object.entries(paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({
        name: `${method.toUpperCase()} ${path}`,
        statuses: Object.keys(operation.responses),
      })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(5);
    const missing: string[] = [];
    for (const { name, statuses } of operations) {
      const answer = answers.get(name);
      if (answer === undefined) {
        missing.push(`${name}: no row`);
        continue;
      }
      for (const status of statuses) {
        if (!new RegExp(`(^|[^0-9])${status}([^0-9]|$)`).test(answer)) {
          missing.push(`${name}: status ${status}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("§1.3's error answers are the catalogue's, row for row: status, code, added headers", () => {
    expect(errorAnswerRows()).toEqual(catalogueRows());
  });

  it("the OpenAPI document's error codes are the catalogue's, and every error answer states one", () => {
    const codes = Object.keys(ANSWER_CATALOGUE);
    expect(schemas.ServiceError?.properties?.code?.enum).toEqual(codes);
    // The other error bodies with a code name one of the catalogue's.
    expect(codes).toContain(schemas.RateLimited?.properties?.code?.const);
    const uncoded: string[] = [];
    for (const [path, methods] of Object.entries(paths)) {
      for (const [method, { responses }] of Object.entries(methods)) {
        for (const [status, response] of Object.entries(responses)) {
          // Reports, 304, the 400 SnapshotError (§2.5) and the 402 (x402's) are not error answers.
          if (["200", "304", "400", "402"].includes(status)) continue;
          const refs = JSON.stringify(response).match(/#\/components\/schemas\/\w+/g) ?? [];
          const named = refs.flatMap((ref) => codesOf(schemas[ref.split("/").pop()!]));
          if (named.length === 0 || !named.every((code) => codes.includes(code))) {
            uncoded.push(`${method.toUpperCase()} ${path} ${status}`);
          }
        }
      }
    }
    expect(uncoded).toEqual([]);
  });

  it("§6.1 has a row for every variable config.ts reads", () => {
    const documented = configurationVariables();
    const read = variablesRead(loadConfig, {});
    expect(read.length).toBeGreaterThan(20);
    expect(read.filter((variable) => !documented.has(variable))).toEqual([]);
  });
});
