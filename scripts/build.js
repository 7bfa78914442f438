// Builds dist/ (scripts/bundle.js: the CLI bundled by esbuild) when it is missing or stale. Plain
// JavaScript: it runs before anything is built (npm's `prepare`, and bin/secsnap.js).
//
//   node scripts/build.js   build now (what `npm install` runs)
import { spawnSync } from "node:child_process";
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
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(import.meta.dirname, "..");
/** Written last, with the time the build started: dist/ is complete and covers src/ up to then. */
const STAMP = ".build-stamp";
/**
 * The stamp's first line: a dist/ made by another recipe (the earlier tsc output) is rebuilt.
 * Change it with what scripts/bundle.js emits (its file is not among the inputs below).
 */
const RECIPE = "esbuild bundle 1";
/** Besides src/, these change what the bundler emits. */
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
  const tmp = join(root, ".cache", `dist-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  // esbuild's plugins need its asynchronous API; bin/secsnap.js needs this call synchronous.
  const run = spawnSync(process.execPath, [join(import.meta.dirname, "bundle.js"), root, tmp], {
    cwd: root,
    encoding: "utf8",
  });
  if (run.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`cannot build dist/:\n${run.stdout}${run.stderr}${run.error ?? ""}`);
  }
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
