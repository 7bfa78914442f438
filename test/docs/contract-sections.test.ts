/**
 * Every `§` citation of docs/contract.md — in the contract itself, the other docs, the README and
 * the code — names a section the contract has, and one about what the citing line speaks of:
 * MCP is §7.10 (`POST /mcp`) and §8.2 (`secsnap mcp`), the command line is §8, the report's
 * `tls`/`dns`/`cross_origin` sections are §9, the configuration is §6. A renumbered or
 * misremembered section sends the reader to the wrong rule.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CONTRACT_FILE = "docs/contract.md";
const CONTRACT = readFileSync(join(ROOT, CONTRACT_FILE), "utf8");

/** The frozen record of how the figures were reached (docs/benchmarks.md's history) cites the contract as it was then. */
const frozen = (file: string): boolean => file.endsWith("-history.md");

/** `1`, `1.2`, … for each `## 1. …` and `### 1.2 …` heading of the contract, with its title. */
const HEADINGS = new Map(
  [...CONTRACT.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? (.+)$/gm)].map((m) => [m[1]!, m[2]!]),
);

/** A `§` that belongs to another document (RFC 9116 §2.5.5, CSP3 §2.3.1, HTML §13.2.6.4…). */
const FOREIGN = /(?:RFC \d+(?:bis)?|CSP3?|HTML|Fetch|SRI|RFC 3339) $/;

interface Citation {
  file: string;
  line: number;
  text: string;
  sections: string[];
}

/** The section numbers a `§…` run names: `§7.3–7.4` and `§7.2–§7.5` are both ends. */
function numbersIn(run: string): string[] {
  return [...run.matchAll(/(\d+(?:\.\d+)?)/g)].map((m) => m[1]!);
}

/**
 * The contract's citations on one line. In the contract a bare `§` is its own; elsewhere the
 * citation starts at `contract.md §` or `contract §` and runs on through `, §…`, `and §…`.
 */
function citationsOfLine(file: string, text: string): string[] {
  const run = /§\d+(?:\.\d+)?(?:\s*[–-]\s*§?\d+(?:\.\d+)?)?/g;
  if (file === CONTRACT_FILE) {
    return [...text.matchAll(run)]
      .filter((m) => !FOREIGN.test(text.slice(0, m.index)))
      .flatMap((m) => numbersIn(m[0]));
  }
  const chained =
    /contract(?:\.md)? (§[\d.]+(?:\s*[–-]\s*§?[\d.]+)?(?:(?:,\s*|\s+and\s+)§[\d.]+)*)/g;
  return [...text.matchAll(chained)].flatMap((m) => numbersIn(m[1]!.replace(/\.$/, "")));
}

/** Every text file under `dir` (relative to the checkout). */
function textFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((file) => !readFileSync(join(ROOT, file)).includes(0));
}

function allCitations(): Citation[] {
  const files = [
    ...["src", "test", "bench", "scripts", "docs"].flatMap(textFiles),
    "README.md",
  ].filter((file) => !frozen(file));
  return files.flatMap((file) =>
    readFileSync(join(ROOT, file), "utf8")
      .split("\n")
      .flatMap((text, i) => {
        const sections = citationsOfLine(file, text);
        return sections.length ? [{ file, line: i + 1, text: text.trim(), sections }] : [];
      }),
  );
}

const where = (c: Citation): string => `${c.file}:${c.line}: ${c.text}`;

/** The contract's lines inside one section (they speak of it, whatever they cite). */
function inSection(c: Citation, number: string): boolean {
  if (c.file !== CONTRACT_FILE) return false;
  const lines = CONTRACT.split("\n");
  for (let i = c.line - 1; i >= 0; i--) {
    const heading = /^#{2,3} (\d+(?:\.\d+)?)\.? /.exec(lines[i]!);
    if (heading) return heading[1] === number;
  }
  return false;
}

/**
 * What a line speaks of, and the sections that say it: a citing line that speaks of it cites one
 * of them (MCP), or a line that cites one of them speaks of it (§8, §6).
 */
const TOPICS = [
  {
    topic: "MCP",
    speaks: /POST \/mcp|secsnap mcp|\bMCP\b/,
    // §10.4: `get_snapshot`, the report again, is the same for `secsnap get` and MCP.
    sections: ["7.10", "8.2", "10.4"],
    rule: "speaks → cites",
  },
  {
    topic: "the command line",
    speaks:
      /secsnap|command|CLI|[Ee]xit code|Ctrl-C|`(?:scan|pay|mcp|serve|get|verify|facilitator)`/,
    sections: ["8"],
    rule: "cites → speaks",
  },
  {
    topic: "the configuration",
    speaks: /config|variable|environment|`[A-Z][A-Z0-9]+_[A-Z0-9_]+`|\b[A-Z]+_[A-Z_]+\b/,
    sections: ["6"],
    rule: "cites → speaks",
  },
] as const;

describe("docs/contract.md § citations", () => {
  const citations = allCitations();

  it("are found across the contract, the docs and the code", () => {
    expect(HEADINGS.size).toBeGreaterThan(50);
    expect(citations.filter((c) => c.file === CONTRACT_FILE).length).toBeGreaterThan(50);
    expect(citations.filter((c) => c.file.startsWith("src/")).length).toBeGreaterThan(10);
  });

  it("name a section the contract has", () => {
    const missing = citations.flatMap((c) =>
      c.sections.filter((s) => !HEADINGS.has(s)).map((s) => `§${s} — ${where(c)}`),
    );
    expect(missing).toEqual([]);
  });

  it("never number the spec's sections, which the repository does not hold", () => {
    const spec = citations.filter((c) => /§[\d.]+ of the spec/.test(c.text));
    expect(spec.map(where)).toEqual([]);
  });

  it("about MCP cite §7.10 or §8.2", () => {
    const { speaks, sections } = TOPICS[0];
    const wrong = citations.filter(
      (c) =>
        speaks.test(c.text) &&
        !sections.some((s) => inSection(c, s)) &&
        !c.sections.some((s) => (sections as readonly string[]).includes(s)),
    );
    expect(wrong.map(where)).toEqual([]);
  });

  it.each(TOPICS.filter((t) => t.rule === "cites → speaks"))(
    "citing the section of $topic speak of it",
    ({ speaks, sections }) => {
      const wrong = citations.filter(
        (c) =>
          c.sections.some((s) => (sections as readonly string[]).includes(s)) &&
          !speaks.test(c.text),
      );
      expect(wrong.map(where)).toEqual([]);
    },
  );
});
