// Compiles src/ to dist/ with tsc (tsconfig.build.json). Plain JavaScript: it runs before
// anything is compiled (npm's `prepare`, and bin/secsnap.js when dist/ is missing or stale).
//
//   node scripts/build.js   build now (what `npm install` runs)
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
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
/** Besides src/, these change what tsc emits. */
const INPUTS = ["tsconfig.json", "tsconfig.build.json"];

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
 * Why dist/ under root must be rebuilt, or undefined when it is current. Only stats files
 * (about a millisecond): bin/secsnap.js asks on every start.
 */
export function staleReason(root = ROOT) {
  let built;
  try {
    built = statSync(join(root, "dist", STAMP)).mtimeMs;
  } catch {
    return "dist/ has not been built";
  }
  const src = join(root, "src");
  if (!existsSync(src)) return undefined; // an installed copy without sources: run what is there
  const inputs = [newestMtime(src), ...INPUTS.map((f) => statSync(join(root, f)).mtimeMs)];
  return inputs.some((mtime) => mtime > built) ? "src/ changed since dist/ was built" : undefined;
}

/**
 * Compiles into a fresh directory and swaps it in, so a failed or interrupted build never
 * leaves a half-written dist/ behind. Throws with tsc's output when compiling fails.
 */
export function build(root = ROOT) {
  const started = new Date();
  const require = createRequire(join(root, "package.json"));
  let tsc;
  try {
    tsc = require.resolve("typescript/bin/tsc");
  } catch {
    throw new Error(
      "cannot build dist/: the typescript package is not installed (run npm install)",
    );
  }
  const tmp = join(root, ".cache", `dist-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const run = spawnSync(
    process.execPath,
    [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", tmp],
    { cwd: root, encoding: "utf8" },
  );
  if (run.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`tsc failed to build dist/:\n${run.stdout}${run.stderr}${run.error ?? ""}`);
  }
  const stamp = join(tmp, STAMP);
  writeFileSync(stamp, `${started.toISOString()}\n`);
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
