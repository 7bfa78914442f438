/**
 * The two tables of the service's variables — the README's "Configuration" and docs/contract.md
 * §6.1 — agree with the loader: each has a row for every variable config.ts reads and names no
 * other (but Node's own NODE_EXTRA_CA_CERTS), and every default they state as a value is the
 * loader's: setting the variable to it changes nothing.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { variablesRead } from "../fixtures/config-variables.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const CONTRACT = readFileSync(new URL("../../docs/contract.md", import.meta.url), "utf8");

/** Production mode: the defaults of a service selling for real money. */
const PRODUCTION = {
  X402_PAY_TO: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  X402_FACILITATOR_URL: "https://facilitator.example/x402",
};

/** Node's own, listed for the tests' CA; the loader does not read it. */
const NOT_THE_LOADERS = new Set(["NODE_EXTRA_CA_CERTS"]);

interface Row {
  names: string[];
  defaults: string[];
}

/** The rows of the first table after `heading`: the variables of its first cell, its second. */
function tableAfter(text: string, heading: string): Row[] {
  const start = text.indexOf(heading);
  if (start < 0) throw new Error(`no "${heading}"`);
  const lines = text.slice(start).split("\n");
  const first = lines.findIndex((line) => line.startsWith("|"));
  const table = lines.slice(first + 2);
  const rows = table.slice(
    0,
    table.findIndex((line) => !line.startsWith("|")),
  );
  return rows.map((line) => {
    const [names = "", defaults = ""] = line.slice(1, -1).split("|");
    return {
      names: [...names.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!),
      defaults: defaults.split(" / ").map((cell) => cell.trim()),
    };
  });
}

/**
 * A default stated as a value — `8080`, `base (devnet mode: …)`, `./.secsnap` — or undefined for
 * one said in words (`unset: …`, `the system's resolver`, `64 × available cores`).
 */
function statedValue(cell: string): string | undefined {
  const value = /^`?([\w.,/-]+)`?(?=$|\s*\()/.exec(cell)?.[1];
  return value === undefined || /^(unset|none|empty)$/i.test(value) ? undefined : value;
}

const TABLES = [
  { table: "README.md's Configuration", rows: () => tableAfter(README, "## Configuration") },
  { table: "docs/contract.md §6.1", rows: () => tableAfter(CONTRACT, "### 6.1 ") },
];

describe.each(TABLES)("$table", ({ rows }) => {
  const read = variablesRead(loadConfig, PRODUCTION);

  it("has a row for every variable the loader reads, and no other", () => {
    const named = rows().flatMap((row) => row.names);
    expect(read.length).toBeGreaterThan(30);
    expect(read.filter((name) => !named.includes(name))).toEqual([]);
    expect(named.filter((name) => !read.includes(name) && !NOT_THE_LOADERS.has(name))).toEqual([]);
  });

  it("states each default the loader has", () => {
    const differ: string[] = [];
    let stated = 0;
    for (const { names, defaults } of rows()) {
      names.forEach((name, i) => {
        const value = statedValue(defaults[Math.min(i, defaults.length - 1)] ?? "");
        if (value === undefined || NOT_THE_LOADERS.has(name)) return;
        stated++;
        const given = loadConfig({ ...PRODUCTION, [name]: value });
        if (JSON.stringify(given) !== JSON.stringify(loadConfig(PRODUCTION))) {
          differ.push(`${name}=${value}`);
        }
      });
    }
    expect(stated).toBeGreaterThan(20);
    expect(differ).toEqual([]);
  });
});
