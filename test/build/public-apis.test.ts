/**
 * The service uses the public APIs of Node and of its dependencies only: no private symbol looked
 * up at run time, no underscore-prefixed field of an object it does not own, no internal binding.
 * A static scan of every source file under src/, so a private internal cannot come back unseen.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SRC = join(ROOT, "src");

/**
 * Underscore-prefixed fields that are public by their protocol: MCP's `_meta` on requests and
 * results (the proof and the settlement of a paid tool call, docs/mcp.md).
 */
const PUBLIC_UNDERSCORE_FIELDS = new Set(["_meta"]);

interface Rule {
  name: string;
  pattern: RegExp;
  /** Whether a match is allowed after all (the public underscore fields). */
  allowed?: (match: string) => boolean;
}

const RULES: readonly Rule[] = [
  // Every private slot of Node (kOutHeaders, …) and of undici is a non-global symbol: reaching
  // one from outside takes a lookup of an object's own symbols.
  { name: "symbol lookup", pattern: /\b(?:getOwnPropertySymbols|ownKeys)\b/g },
  { name: "symbol found by its description", pattern: /\.description\s*[!=]==?\s*["'`]/g },
  {
    name: "someone else's global symbol",
    pattern: /\bSymbol\.for\(\s*["'`](?!secsnap\.)/g,
  },
  { name: "Node's symbol name", pattern: /\bkOutHeaders\b/g },
  { name: "Node's internals", pattern: /\b(?:internalBinding|process\.binding)\b|internal\//g },
  {
    name: "underscore field",
    pattern: /(?:\?\.|\.)\s*_[A-Za-z$][\w$]*|\[\s*["'`]_[\w$]*/g,
    allowed: (match) => PUBLIC_UNDERSCORE_FIELDS.has(match.replace(/^[?.\s[\]"'`]+/, "")),
  },
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.[cm]?[jt]s$/.test(entry.name) ? [path] : [];
  });
}

/** Each rule a text breaks, with the first offending match: `rule: match`. */
function privateUses(text: string): string[] {
  const found: string[] = [];
  for (const rule of RULES) {
    const match = [...text.matchAll(rule.pattern)].find((m) => !rule.allowed?.(m[0]));
    if (match) found.push(`${rule.name}: ${match[0]}`);
  }
  return found;
}

describe("public runtime APIs only", () => {
  it("the scan finds each kind of private use (the patterns it replaced)", () => {
    const uses = privateUses(`
      const OUT_HEADERS = Object.getOwnPropertySymbols(res).find((s) => s.description === "kOutHeaders");
      const q = Reflect.ownKeys(pool);
      const k = Symbol.for("nodejs.rejection");
      const head = res._header ?? res["_headers"]; req.socket?._handle;
      const b = internalBinding("http_parser");
    `);
    expect(uses).toEqual([
      "symbol lookup: getOwnPropertySymbols",
      'symbol found by its description: .description === "',
      "someone else's global symbol: Symbol.for(\"",
      "Node's symbol name: kOutHeaders",
      "Node's internals: internalBinding",
      "underscore field: ._header",
    ]);
    expect(
      privateUses(`params._meta; result["_meta"]; Symbol.for("secsnap.connectPhase")`),
    ).toEqual([]);
  });

  it("no source file under src/ uses a private symbol or field of Node or a dependency", () => {
    const offenders: Record<string, string[]> = {};
    for (const file of sourceFiles(SRC)) {
      const uses = privateUses(readFileSync(file, "utf8"));
      if (uses.length > 0) offenders[relative(SRC, file)] = uses;
    }
    expect(offenders).toEqual({});
  });
});
