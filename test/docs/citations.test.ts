/**
 * The repository cites only what it holds: the spec and the service description this project
 * was built from live outside it, so a citation of them is a dead end for every reader; each
 * rule they state that the service keeps is in docs/contract.md, which is what src/, test/,
 * bench/, scripts/, docs/ and the README cite. And the code cites the current docs for its
 * reasons: docs/benchmarks-history.md is the frozen record of how the figures were reached, which
 * docs/benchmarks.md, docs/snapshot-engine.md and the other current docs have replaced.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HISTORY = "docs/benchmarks-history.md";
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

/** Every text file under `dir` (relative to the checkout), this file left out. */
function textFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((file) => file !== SELF && !readFileSync(join(ROOT, file)).includes(0));
}

/** `file:line: text` for each line of `files` that `pattern` matches. */
function citations(files: string[], pattern: RegExp): string[] {
  return files.flatMap((file) =>
    readFileSync(join(ROOT, file), "utf8")
      .split("\n")
      .flatMap((line, i) => (pattern.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
  );
}

describe("citations", () => {
  it("name no file outside the repository", () => {
    const files = [
      ...["src", "test", "bench", "scripts", "docs"].flatMap(textFiles),
      "README.md",
    ].filter((file) => file !== HISTORY);
    expect(files.length).toBeGreaterThan(100);
    expect(citations(files, /\bSPEC(\.md| ?§)|\bSERVICE\.md|\.\.\/shared\//)).toEqual([]);
  });

  it("of the code and the tests point to current docs, not the frozen benchmarks history", () => {
    const files = ["src", "test"].flatMap(textFiles);
    expect(citations(files, /benchmarks-history/)).toEqual([]);
  });

  it("of the current docs and the README quote only TODOs the code still has", () => {
    const docs = [
      ...textFiles("docs").filter((f) => f.endsWith(".md") && f !== HISTORY),
      "README.md",
    ];
    const code = textFiles("src")
      .map((file) => readFileSync(join(ROOT, file), "utf8"))
      .join("\n");
    const quoted = docs.flatMap((doc) =>
      [...readFileSync(join(ROOT, doc), "utf8").matchAll(/TODO\([^)]*\):[^`]*/g)].map(
        (m) => `${doc}: ${m[0]}`,
      ),
    );
    expect(quoted.filter((entry) => !code.includes(entry.split(": ").slice(1).join(": ")))).toEqual(
      [],
    );
  });

  it("of the current docs and the README name source and test files that exist", () => {
    const docs = [
      ...textFiles("docs").filter((f) => f.endsWith(".md") && f !== HISTORY),
      "README.md",
    ];
    const named = docs.flatMap((doc) =>
      [
        ...readFileSync(join(ROOT, doc), "utf8").matchAll(
          /\b((?:src|test|bench)\/[\w./-]+\.ts)\b/g,
        ),
      ].map((m) => `${doc}: ${m[1] as string}`),
    );
    expect(named.length).toBeGreaterThan(50);
    expect(
      named.filter((entry) => !existsSync(join(ROOT, entry.split(": ")[1] as string))),
    ).toEqual([]);
  });
});
