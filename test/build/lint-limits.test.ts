/**
 * src/ is held to limits on function length, file length and branches (eslint.config.js), as
 * errors, so `npm run lint` fails when a function or file outgrows them. The files over a limit
 * when the limits came in are named there one by one, each let off only the limits it exceeds;
 * an exception that no longer lets anything off is stale and must go, so the list only shrinks.
 */
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { ESLint, type Linter } from "eslint";
import { describe, expect, it } from "vitest";

const root = new URL("../..", import.meta.url).pathname;
const LIMITS: Linter.RulesRecord = {
  "max-lines-per-function": ["error", { max: 50, skipBlankLines: true, skipComments: true }],
  "max-lines": ["error", { max: 400, skipBlankLines: true, skipComments: true }],
  complexity: ["error", 15],
};
const isLimit = (ruleId: string | null): ruleId is string => ruleId !== null && ruleId in LIMITS;

/** The limits' errors for `code` linted as the file `filePath`, by the project's config. */
async function limitErrors(code: string, filePath: string): Promise<string[]> {
  const results = await new ESLint({ cwd: root }).lintText(code, { filePath });
  const messages = results.flatMap((result) => result.messages);
  return messages.filter((m) => m.severity === 2 && isLimit(m.ruleId)).map((m) => m.ruleId ?? "");
}

/** A function `lines` lines long, its first and last line included. */
function longFunction(lines: number): string {
  const body = Array.from({ length: lines - 3 }, (_, i) => `  const v${i} = ${i};`).join("\n");
  return `export function f(): number {\n${body}\n  return 0;\n}\n`;
}

/** `file: rule` for each limit the project's config turns off for a src/ file. */
async function exceptions(files: string[]): Promise<string[]> {
  const eslint = new ESLint({ cwd: root });
  const letOff: string[] = [];
  for (const file of files) {
    const { rules = {} } = (await eslint.calculateConfigForFile(file)) as Linter.Config;
    for (const rule of Object.keys(LIMITS)) {
      const setting = rules[rule];
      const severity = Array.isArray(setting) ? setting[0] : setting;
      if (severity === 0 || severity === "off") letOff.push(`${relative(root, file)}: ${rule}`);
    }
  }
  return letOff;
}

describe("lint limits on src/", () => {
  it("refuses a function over 50 lines, a file over 400 and a function of 16 branches", async () => {
    const file = `${root}src/snapshot/new-file.ts`;
    expect(await limitErrors(longFunction(50), file)).toEqual([]);
    expect(await limitErrors(longFunction(51), file)).toEqual(["max-lines-per-function"]);
    const tenLines = (n: number) => `export function f${n}(): number {\n${"  n;\n".repeat(8)}}\n`;
    const longFile = Array.from({ length: 41 }, (_, n) => tenLines(n)).join("");
    expect(await limitErrors(`const n = 1;\n${longFile}`, file)).toContain("max-lines");
    const ifs = Array.from({ length: 15 }, (_, i) => `  if (x === ${i}) return ${i};`).join("\n");
    const branchy = `export function f(x: number): number {\n${ifs}\n  return -1;\n}\n`;
    expect(await limitErrors(branchy, file)).toEqual(["complexity"]);
  });

  it("keeps no size limits on tests", async () => {
    expect(await limitErrors(longFunction(80), `${root}test/snapshot/new.test.ts`)).toEqual([]);
  });

  it("lets a file off a limit only while the file exceeds it", async () => {
    const sources = readdirSync(join(root, "src"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
      .map((entry) => join(entry.parentPath, entry.name));
    const letOff = await exceptions(sources);
    expect(letOff.length).toBeGreaterThan(0);
    // The limits alone, on the files let off one, as if no file were.
    const strict = new ESLint({
      cwd: root,
      overrideConfig: { files: ["src/**/*.ts"], rules: LIMITS },
      ruleFilter: ({ ruleId }) => isLimit(ruleId),
    });
    const excepted = [...new Set(letOff.map((exception) => exception.split(": ")[0] ?? ""))];
    const results = await strict.lintFiles(excepted.map((file) => join(root, file)));
    const exceeded = new Set(
      results.flatMap((r) => r.messages.map((m) => `${relative(root, r.filePath)}: ${m.ruleId}`)),
    );
    expect(letOff.filter((exception) => !exceeded.has(exception))).toEqual([]);
  });
});
