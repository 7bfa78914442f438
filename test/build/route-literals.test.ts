/**
 * Every public path is written once, in src/routes.ts (docs/http-api.md "Routes"): a static scan
 * of the string, template and regular-expression literals of every other source file under
 * src/, so a path written by hand cannot come back unseen. Comments may name paths.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { MCP_SNAPSHOT_RESOURCE, ROUTE_TABLE } from "../../src/routes.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SRC = join(ROOT, "src");
const TABLE_FILE = "src/routes.ts";

/**
 * Literals that name another service's path which happens to be one of ours: the devnet
 * facilitator's own GET /health, and `secsnap facilitator`'s help that names it; a scanned x402
 * seller's discovery documents, asked of it by the x402 topic and named in its report section.
 */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  "src/facilitator/app.ts": ["/health"],
  "src/cli/facilitator.ts": ["/health"],
  "src/snapshot/rules/x402.ts": ["/.well-known/x402", "/openapi.json"],
  "src/http/documents/report-schemas.ts": ["/.well-known/x402", "/openapi.json"],
};

/** The paths to look for: every path of the table but "/", and the MCP resource. */
const PATHS = [
  ...new Set(ROUTE_TABLE.map((route) => route.path).filter((path) => path !== "/")),
  MCP_SNAPSHOT_RESOURCE,
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(entry.name) ? [path] : [];
  });
}

/** A module's name in an import or export (`./mcp.js` is a file, not the path /mcp). */
function isModuleName(node: ts.Node): boolean {
  const { parent } = node;
  return (
    ts.isImportDeclaration(parent) ||
    ts.isExportDeclaration(parent) ||
    (ts.isCallExpression(parent) && parent.expression.kind === ts.SyntaxKind.ImportKeyword)
  );
}

/**
 * The text of every literal of a source but module names; a regular expression's with `\/`
 * read as `/`.
 */
function literals(text: string): string[] {
  const source = ts.createSourceFile("scanned.ts", text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isRegularExpressionLiteral(node)) found.push(node.text.replaceAll("\\/", "/"));
    else if (ts.isTemplateLiteralToken(node)) found.push(node.text);
    else if (ts.isStringLiteralLike(node) && !isModuleName(node)) found.push(node.text);
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * The table's paths a literal writes: a path anywhere in it (not followed by more of a name), or
 * a path of two segments or more without its leading slash at its start (a URL relative to a
 * base, `v1/snapshot`; a lone `ready` is a word).
 */
function pathsIn(text: string): string[] {
  return PATHS.filter((path) => {
    const relative = /^\/.+\//.test(path) ? `|^${escape(path.slice(1))}` : "";
    return new RegExp(`(?:${escape(path)}${relative})(?![\\w-])`).test(text);
  });
}

/** `file: path` for every table path written as a literal outside the table. */
function pathsWrittenOutsideTable(): string[] {
  return sourceFiles(SRC).flatMap((file) => {
    const name = relative(ROOT, file);
    if (name === TABLE_FILE) return [];
    const allowed = ALLOWED[name] ?? [];
    const paths = new Set(literals(readFileSync(file, "utf8")).flatMap(pathsIn));
    return [...paths].filter((path) => !allowed.includes(path)).map((path) => `${name}: ${path}`);
  });
}

describe("the route table", () => {
  it("is the only place in src/ that writes a public path", () => {
    expect(pathsWrittenOutsideTable()).toEqual([]);
  });

  it("sees a path in each kind of literal, and none in comments", () => {
    expect(pathsIn("/v1/snapshot")).toEqual(["/v1/snapshot"]);
    expect(pathsIn("POST https://x/v1/snapshot: pay")).toEqual(["/v1/snapshot"]);
    expect(pathsIn("v1/snapshot")).toEqual(["/v1/snapshot"]);
    expect(pathsIn('<a href="/openapi.json">')).toEqual(["/openapi.json"]);
    expect(pathsIn("/healthz /references /.well-known/security.txt")).toEqual([]);
    expect(pathsIn("ready")).toEqual([]);
    const source = [
      'import { a } from "./mcp.js";',
      "// GET /llms.txt",
      'const b = ["/health", /\\/v1\\/snapshot\\/?$/, `x${"/ready"}y`, import("./mcp.js")];',
    ].join("\n");
    expect(literals(source)).toEqual(["/health", "//v1/snapshot/?$/", "x", "/ready", "y"]);
  });
});
