/**
 * The README's API table and docs/contract.md §1.2 name every route the service mounts (the
 * route table, src/routes.ts), and no route it does not: a reader of either sees the whole API.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROUTE_TABLE } from "../../src/routes.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const CONTRACT = readFileSync(new URL("../../docs/contract.md", import.meta.url), "utf8");

/** Each `METHOD /path` the first cells of the first table after `heading` name. */
function operationsAfter(text: string, heading: string): string[] {
  const start = text.indexOf(heading);
  if (start < 0) throw new Error(`no "${heading}"`);
  const lines = text.slice(start).split("\n");
  const table = lines.slice(lines.findIndex((line) => line.startsWith("|")) + 2);
  const rows = table.slice(
    0,
    table.findIndex((line) => !line.startsWith("|")),
  );
  return rows.flatMap((row) =>
    [...(row.split("|")[1] ?? "").matchAll(/`([A-Z]+ \/[^`]*)`/g)].map((m) => m[1]!),
  );
}

const mounted = ROUTE_TABLE.map((route) => `${route.method} ${route.path}`);

describe.each([
  { table: "README.md's API table", text: README, heading: "## API" },
  { table: "docs/contract.md §1.2", text: CONTRACT, heading: "### 1.2 " },
])("$table", ({ text, heading }) => {
  it("names every route the service mounts, and no other", () => {
    const named = operationsAfter(text, heading);
    expect(mounted.length).toBeGreaterThan(10);
    expect(mounted.filter((operation) => !named.includes(operation))).toEqual([]);
    expect(named.filter((operation) => !mounted.includes(operation))).toEqual([]);
  });
});
