/**
 * A command loads only what it needs (docs/benchmarks.md, "Start-up"): `scan` the engine, not
 * payment, the devnet, the facilitator or the JWT library; `--version` none of the packages.
 * Checked in real processes, whose every loaded module is recorded.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, cleanEnv } from "./run.js";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const MODULE_LOG = fileURLToPath(new URL("../fixtures/module-log.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "secsnap-modules-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The packages and the src/ folders a `secsnap` process loads for these arguments. */
async function loaded(args: string[]): Promise<{ packages: string[]; folders: string[] }> {
  const log = join(dir, `${args.join("-") || "none"}.log`);
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "--import", MODULE_LOG, MAIN, ...args],
    { cwd: ROOT, env: cleanEnv({ SECSNAP_MODULE_LOG: log }), stdio: "ignore" },
  );
  await new Promise((resolve) => child.on("close", resolve));
  const urls = readFileSync(log, "utf8").split("\n").filter(Boolean);
  const unique = (names: (string | undefined)[]) =>
    [...new Set(names.filter((n): n is string => n !== undefined))].sort();
  return {
    packages: unique(urls.map((u) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u)?.[1])),
    folders: unique(
      urls.map((u) => /\/src\/([^/]+)\//.exec(u)?.[1]).filter((f) => f !== undefined),
    ),
  };
}

describe("what a command loads", () => {
  it("scan: the engine, nothing of payment, the devnet or the facilitator", async () => {
    const { packages, folders } = await loaded(["scan", "--help"]);
    expect(folders).toContain("snapshot");
    for (const folder of ["payment", "devnet", "facilitator", "http"]) {
      expect(folders).not.toContain(folder);
    }
    for (const heavy of ["jose", "viem", "hono", "@hono/node-server", "solc"]) {
      expect(packages).not.toContain(heavy);
    }
    expect(packages.filter((p) => p.startsWith("@x402/"))).toEqual([]);
  });

  it("--version: the command line's own dispatch, no package", async () => {
    const { packages, folders } = await loaded(["--version"]);
    expect(packages).toEqual([]);
    expect(folders).toEqual(["cli"]);
  });
});
