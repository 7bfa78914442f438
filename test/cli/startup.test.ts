/**
 * A command loads only what it needs (docs/benchmarks.md "Start-up"): `scan` the engine, not
 * payment, the devnet, the facilitator or the JWT library; `--version` none of the packages; and
 * what the engine needs only for some reports (the HTML parser, the public suffix list, undici's
 * fetch and WebSocket) not before its network work, and no full zod (the report's schemas are the
 * HTTP layer's; config.ts reads the environment with zod/mini). Checked in real processes, whose
 * every loaded module is recorded: the sources through tsx, and the bundle bin/secsnap.js runs,
 * whose loaded chunks are mapped back to their sources with esbuild's metafile (dist/meta.json).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build, staleReason } from "../../scripts/build.js";
import { ROOT, cleanEnv } from "./run.js";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/secsnap.js", import.meta.url));
const MODULE_LOG = fileURLToPath(new URL("../fixtures/module-log.ts", import.meta.url));
/** Refused by the address rules before any network work: everything `scan` does up to it. */
const REFUSED = ["scan", "http://10.0.0.1/"];
const dir = mkdtempSync(join(tmpdir(), "secsnap-modules-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Loaded {
  packages: string[];
  folders: string[];
  /** Every file loaded, as a path under node_modules or src/. */
  files: string[];
}

const unique = (names: (string | undefined)[]) =>
  [...new Set(names.filter((n): n is string => n !== undefined))].sort();

function summary(paths: string[]): Loaded {
  return {
    packages: unique(paths.map((p) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p)?.[1])),
    folders: unique(paths.map((p) => /(?:^|\/)src\/([^/]+)\//.exec(p)?.[1])),
    files: unique(paths.map((p) => /(?:node_modules|src)\/.*$/.exec(p)?.[0])),
  };
}

/** The URLs of the modules a process loads with these node arguments. */
async function moduleUrls(name: string, nodeArgs: string[]): Promise<string[]> {
  const log = join(dir, `${name.replace(/[^\w.-]+/g, "_")}.log`);
  const child = spawn(process.execPath, ["--import", "tsx", "--import", MODULE_LOG, ...nodeArgs], {
    cwd: ROOT,
    env: cleanEnv({ SECSNAP_MODULE_LOG: log }),
    stdio: "ignore",
  });
  await new Promise((resolve) => child.on("close", resolve));
  return readFileSync(log, "utf8").split("\n").filter(Boolean);
}

/** What a `secsnap` process running the sources loads for these arguments. */
async function loaded(args: string[]): Promise<Loaded> {
  return summary(await moduleUrls(`src-${args.join("-") || "none"}`, [MAIN, ...args]));
}

interface Metafile {
  outputs: Record<string, { inputs: Record<string, unknown> }>;
}

/** What bin/secsnap.js loads for these arguments: the sources inside the chunks it loaded. */
async function loadedFromBundle(args: string[]): Promise<Loaded & { chunks: string[] }> {
  const urls = await moduleUrls(`dist-${args.join("-") || "none"}`, [BIN, ...args]);
  const meta = JSON.parse(readFileSync(join(ROOT, "dist", "meta.json"), "utf8")) as Metafile;
  const chunks = urls
    .map((u) => /\/(dist\/[^?]+\.js)$/.exec(u)?.[1])
    .filter((p): p is string => p !== undefined);
  const inputs = chunks.flatMap((chunk) => {
    const output = meta.outputs[chunk];
    if (!output) throw new Error(`${chunk} is not in dist/meta.json`);
    return Object.keys(output.inputs);
  });
  // Packages left outside the bundle are loaded from node_modules as they are.
  const external = urls.filter((u) => u.includes("/node_modules/"));
  return { ...summary([...inputs, ...external]), chunks };
}

const HEAVY = ["jose", "viem", "hono", "@hono/node-server", "solc", "ioredis", "pino"];
/** Loaded by the engine only for some reports, after its network work began. */
const ON_DEMAND = ["htmlparser2", "tldts", "tough-cookie"];
/** undici's index (fetch, WebSocket, caches, mocks): the engine takes its parts by path. */
const UNDICI_WHOLE = ["node_modules/undici/index.js", "node_modules/undici/lib/web/fetch/index.js"];
/** Full zod (its classic API), which the report's schemas use; config.ts reads with zod/mini. */
const zodClassic = (files: string[]) =>
  files.filter((f) => /^node_modules\/zod\/(index\.js|v4\/index\.js|v4\/classic\/)/.test(f));
/**
 * zod's files beyond zod/mini, the core it shares and the English messages config.ts gives: the
 * sources load every locale through zod/mini's index, the bundle shakes them off.
 */
const beyondZodMini = (files: string[]) =>
  files.filter(
    (f) =>
      f.startsWith("node_modules/zod/") &&
      !/^node_modules\/zod\/(mini\/|v4\/(mini|core)\/|v4\/locales\/en\.js$)/.test(f),
  );

describe("what a command loads (sources)", () => {
  it("scan: the engine, nothing of payment, the devnet or the facilitator", async () => {
    const { packages, folders } = await loaded(["scan", "--help"]);
    expect(folders).toContain("snapshot");
    for (const folder of ["payment", "devnet", "facilitator", "http"]) {
      expect(folders).not.toContain(folder);
    }
    for (const heavy of HEAVY) expect(packages).not.toContain(heavy);
    expect(packages.filter((p) => p.startsWith("@x402/"))).toEqual([]);
  });

  it("scan up to its network work: undici's parts, not its index; no HTML parser or suffix list", async () => {
    const { packages, files } = await loaded(REFUSED);
    expect(packages).toContain("undici");
    for (const file of UNDICI_WHOLE) expect(files).not.toContain(file);
    for (const lazy of ON_DEMAND) expect(packages).not.toContain(lazy);
    expect(files).toContain("node_modules/zod/v4/mini/schemas.js");
    expect(zodClassic(files)).toEqual([]);
  });

  it("--version: the command line's own dispatch, no package", async () => {
    const { packages, folders } = await loaded(["--version"]);
    expect(packages).toEqual([]);
    expect(folders).toEqual(["cli"]);
  });
});

describe("what a command loads (the bundle bin/secsnap.js runs)", () => {
  beforeAll(() => {
    if (staleReason() !== undefined) build();
  }, 120_000);

  it("scan up to its network work: the engine's chunks only", async () => {
    const { packages, folders, files, chunks } = await loadedFromBundle(REFUSED);
    expect(chunks).toContain("dist/cli/main.js");
    expect(folders).toContain("snapshot");
    for (const folder of ["payment", "devnet", "facilitator", "http"]) {
      expect(folders).not.toContain(folder);
    }
    for (const heavy of HEAVY) expect(packages).not.toContain(heavy);
    expect(packages.filter((p) => p.startsWith("@x402/"))).toEqual([]);
    expect(packages).toContain("undici");
    for (const file of UNDICI_WHOLE) expect(files).not.toContain(file);
    // The WebAssembly HTTP parser is left in node_modules until the first connection.
    expect(files.filter((f) => /llhttp.*-wasm\.js$/.test(f))).toEqual([]);
    for (const lazy of ON_DEMAND) expect(packages).not.toContain(lazy);
    expect(files).toContain("node_modules/zod/v4/mini/schemas.js");
    expect(zodClassic(files)).toEqual([]);
    expect(beyondZodMini(files)).toEqual([]);
  });

  it("--version: the command line's own dispatch, no package", async () => {
    const { packages, files, chunks } = await loadedFromBundle(["--version"]);
    expect(chunks).toContain("dist/cli/main.js");
    expect(packages).toEqual([]);
    for (const file of files) expect(file).toMatch(/^src\/(cli\/|config-error\.ts$|version\.ts$)/);
  });
});
