// Bundles the CLI (src/cli/main.ts) into dist/ with esbuild. Plain JavaScript: it runs before
// anything is compiled (npm's `prepare`, and bin/secsnap.js when dist/ is missing or stale).
//
//   node scripts/build.js   build now (what `npm install` runs)
//
// Why a bundle: loading a module costs per file, not per byte, and the engine's packages are
// hundreds of files; one command's chunks load in about half the CPU of the compiled files
// (docs/benchmarks.md, "Start-up"). Type checking stays with `npm run typecheck`.
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(import.meta.dirname, "..");
/** Written last, with the time the build started: dist/ is complete and covers src/ up to then. */
const STAMP = ".build-stamp";
/** The stamp's first line: a dist/ made by another recipe (the earlier tsc output) is rebuilt. */
const RECIPE = "esbuild bundle 1";
/** Besides src/, these change what the bundler emits. */
const INPUTS = ["tsconfig.json", "tsconfig.build.json"];
/** esbuild's metafile: which sources each output file holds (test/cli/startup.test.ts reads it). */
export const META = "meta.json";

/**
 * Left to Node at run time: packages that find files by path from their own directory
 * (`__dirname`, which an ES module has not): soljson, pino's transports, ioredis's friendly error
 * stacks, ws's optional native addons. Packages read by path only (@scalar/api-reference's
 * standalone bundle, @foundry-rs/anvil's binary) are never imported.
 */
const EXTERNAL = ["solc", "pino", "pino-pretty", "ioredis", "bufferutil", "utf-8-validate"];

/** Newest mtime (ms) under dir, directories included (so an added or deleted file counts). */
function newestMtime(dir) {
  let newest = statSync(dir).mtimeMs;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith(".test.ts")) continue; // not compiled
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

/**
 * Why dist/ under root must be rebuilt, or undefined when it is current. Only stats files and
 * reads the stamp (about a millisecond): bin/secsnap.js asks on every start.
 */
export function staleReason(root = ROOT) {
  let built;
  let recipe;
  try {
    const stamp = join(root, "dist", STAMP);
    built = statSync(stamp).mtimeMs;
    recipe = readFileSync(stamp, "utf8").split("\n", 1)[0];
  } catch {
    return "dist/ has not been built";
  }
  if (recipe !== RECIPE) return "dist/ was built by an older build script";
  const src = join(root, "src");
  if (!existsSync(src)) return undefined; // an installed copy without sources: run what is there
  const inputs = [newestMtime(src), ...INPUTS.map((f) => statSync(join(root, f)).mtimeMs)];
  return inputs.some((mtime) => mtime > built) ? "src/ changed since dist/ was built" : undefined;
}

/** What the stamp says: the recipe, then when the build started. */
export function stampText(started) {
  return `${RECIPE}\n${started.toISOString()}\n`;
}

/**
 * Bundles into a fresh directory and swaps it in, so a failed or interrupted build never
 * leaves a half-written dist/ behind. Throws with esbuild's messages when bundling fails.
 */
export function build(root = ROOT) {
  const started = new Date();
  const require = createRequire(join(root, "package.json"));
  let esbuild;
  try {
    esbuild = require("esbuild");
  } catch {
    throw new Error("cannot build dist/: the esbuild package is not installed (run npm install)");
  }
  const tmp = join(root, ".cache", `dist-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  let result;
  try {
    result = esbuild.buildSync({
      absWorkingDir: root,
      entryPoints: { "cli/main": "src/cli/main.ts" },
      outdir: tmp,
      // Each command is a dynamic import (src/cli/run.ts): its own chunks, loaded on use.
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20.18",
      tsconfig: join(root, "tsconfig.build.json"),
      // Every output sits two levels below the root, as the compiled files did, so paths made
      // from import.meta.url (src/devnet/compile.ts: the contracts, .cache/) still hold.
      chunkNames: "chunks/[name]-[hash]",
      external: EXTERNAL,
      // The bundled CommonJS packages require Node's modules and the external ones: an ES module
      // has no `require`, so each output file makes one.
      banner: {
        js: 'import { createRequire as __secsnapCreateRequire } from "node:module";\nconst require = __secsnapCreateRequire(import.meta.url);',
      },
      metafile: true,
      logLevel: "silent",
    });
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    const messages = (err.errors ?? []).map((m) => {
      const at = m.location ? `${m.location.file}:${m.location.line}: ` : "";
      return `${at}${m.text}`;
    });
    throw new Error(`esbuild failed to build dist/:\n${messages.join("\n") || err.message}`);
  }
  writeFileSync(join(tmp, META), JSON.stringify(result.metafile));
  const stamp = join(tmp, STAMP);
  writeFileSync(stamp, stampText(started));
  utimesSync(stamp, started, started);
  rmSync(join(root, "dist"), { recursive: true, force: true });
  try {
    renameSync(tmp, join(root, "dist"));
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    // Another build finished in between: its dist/ is as good as ours.
    if (staleReason(root) !== undefined) throw err;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    build();
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
