/**
 * `npm run test:fast` (vitest.fast.config.ts) leaves out the test files named `*.e2e.test.ts` and
 * `*.browser.test.ts`: those that need the devnet (anvil), Redis, HAProxy, Chromium or a network
 * namespace. The name is the rule, so it is checked here: a test file named otherwise must not
 * reach, through its imports and those of the test fixtures it uses, anything that starts one of
 * them. A new slow test then fails here until it is named so, instead of slowing the fast set.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SLOW_NAME = /\.(e2e|browser)\.test\.ts$/;

/** Packages that start or talk to a slow program: anvil, a Redis client, Chromium's driver. */
const SLOW_PACKAGES = ["@foundry-rs/anvil", "ioredis", "playwright-core"];
/** Modules that start one: the devnet, anvil on another chain, the system programs' finder. */
const SLOW_MODULES = [
  "src/devnet/index.ts",
  "src/devnet/devnet.ts",
  "src/devnet/anvil.ts",
  "test/fixtures/other-chain.ts",
  "test/fixtures/system-binary.ts",
];
/** Named imports that start one: `secsnap serve` in devnet mode. */
const SLOW_NAMES = new Map([["test/cli/run.ts", ["devnetServeSettings"]]]);

interface Use {
  specifier: string;
  names: string[];
}

/** What a module imports for its values (type-only imports start nothing), `import()` included. */
function valueImports(file: string): Use[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const uses: Use[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const named =
        bindings && ts.isNamedImports(bindings)
          ? bindings.elements.filter((e) => !e.isTypeOnly).map((e) => e.name.text)
          : [];
      const whole = !bindings || ts.isNamespaceImport(bindings);
      const valued = !clause || (!clause.isTypeOnly && (clause.name || whole || named.length));
      if (valued) uses.push({ specifier: node.moduleSpecifier.text, names: named });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      uses.push({ specifier: node.arguments[0].text, names: [] });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return uses;
}

/** The checkout-relative .ts file a relative specifier names, or the specifier itself. */
function target(from: string, specifier: string): string {
  if (!specifier.startsWith(".")) return specifier;
  return relative(ROOT, resolve(ROOT, dirname(from), specifier)).replace(/\.js$/, ".ts");
}

/** The import path from `file` to the first slow thing it reaches, or undefined. */
function slowPath(file: string, seen = new Set<string>()): string | undefined {
  if (seen.has(file)) return undefined;
  seen.add(file);
  for (const { specifier, names } of valueImports(file)) {
    const to = target(file, specifier);
    const slowPackage = SLOW_PACKAGES.some((p) => to === p || to.startsWith(`${p}/`));
    const slowName = names.find((name) => SLOW_NAMES.get(to)?.includes(name));
    if (slowPackage || SLOW_MODULES.includes(to)) return `${file} → ${to}`;
    if (slowName) return `${file} → ${to} ${slowName}`;
    // Only the test fixtures are followed: src/ is what every test exercises.
    if (to.startsWith("test/") && existsSync(join(ROOT, to))) {
      const further = slowPath(to, seen);
      if (further) return `${file} → ${further}`;
    }
  }
  return undefined;
}

const testFiles = ["src", "test"]
  .flatMap((dir) => readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true }))
  .filter((entry) => entry.isFile() && entry.name.endsWith(".test.ts"))
  .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));

describe("the fast test set", () => {
  it("finds what starts the devnet, Redis, HAProxy, Chromium or a network namespace", () => {
    for (const file of [
      "test/http/operations/metrics.e2e.test.ts",
      "test/store/redis.e2e.test.ts",
      "test/http/server-haproxy.e2e.test.ts",
      "test/http/page/home.browser.test.ts",
      "test/snapshot/cloud-host-services.e2e.test.ts",
      "test/cli/serve/serve.e2e.test.ts",
      "test/cli/pay/pay.e2e.test.ts",
    ]) {
      expect(slowPath(file), file).toBeDefined();
    }
    expect(slowPath("test/cli/run.ts"), "a type import or another name starts nothing").toBe(
      undefined,
    );
  });

  it("holds no test file that reaches one unless it is named *.e2e.test.ts or *.browser.test.ts", () => {
    const fast = testFiles.filter((file) => !SLOW_NAME.test(file));
    expect(fast.length).toBeGreaterThan(50);
    const slow = fast.flatMap((file) => slowPath(file) ?? []);
    expect(slow).toEqual([]);
  });
});
