/**
 * A benchmark's server process bundled as the CLI is (scripts/bundle.js), so it runs the
 * service's code as production does: one file under .cache/bench/, beside node_modules, where
 * the packages left outside the bundle are found.
 */
import { mkdirSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleOptions, loadEsbuild } from "../../scripts/bundle.js";

export async function bundledServer(entry: string): Promise<string> {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const outdir = join(root, ".cache", "bench");
  mkdirSync(outdir, { recursive: true });
  const outfile = join(outdir, `${basename(entry).replace(/\.[cm]?[jt]s$/, "")}.mjs`);
  await loadEsbuild(root).build({ ...bundleOptions(root), entryPoints: [entry], outfile });
  return outfile;
}
