// Bundles the CLI (src/cli/main.ts) with esbuild into an output directory, with esbuild's metafile
// beside it. Run by scripts/build.js, which stamps the result and swaps it in as dist/.
//
//   node scripts/bundle.js <root> <outdir>
//
// Why a bundle: loading modules costs per file and per byte, and the engine's packages are
// hundreds of files; one command's chunks load in far less CPU than the compiled files
// (docs/benchmarks-history.md, "Start-up"). Type checking stays with `npm run typecheck`.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, join, relative, sep } from "node:path";
import { pathToFileURL } from "node:url";

/** esbuild's metafile: which sources each output file holds (test/cli/startup.test.ts reads it). */
const META = "meta.json";

/**
 * Left to Node at run time: packages that find files by path from their own directory
 * (`__dirname`, which an ES module has not): soljson, pino's transports, ioredis's friendly error
 * stacks, ws's optional native addons. Packages read by path only (@scalar/api-reference's
 * standalone bundle, @foundry-rs/anvil's binary) are never imported.
 */
// lmdb and secp256k1 find their native binaries relative to their own packages (a platform
// package beside it, prebuilds/ inside it): bundled, they would look for them beside the bundle.
const EXTERNAL = [
  "solc",
  "pino",
  "pino-pretty",
  "ioredis",
  "lmdb",
  "secp256k1",
  "bufferutil",
  "utf-8-validate",
];

/**
 * undici's HTTP parser is WebAssembly kept as base64 text (145 KB), required on the first
 * connection: left in node_modules, so a command compiles that text only when it connects.
 */
const llhttpOnFirstConnection = {
  name: "llhttp-on-first-connection",
  setup(build) {
    build.onResolve({ filter: /^\.\.\/llhttp\/llhttp(_simd)?-wasm\.js$/ }, (args) =>
      /[\\/]undici[\\/]lib[\\/]dispatcher[\\/]/.test(args.importer)
        ? { path: `undici/lib/llhttp/${basename(args.path)}`, external: true }
        : undefined,
    );
  },
};

/** esbuild, from the project's own dependencies. */
export function loadEsbuild(root) {
  const require = createRequire(join(root, "package.json"));
  try {
    return require("esbuild");
  } catch {
    throw new Error("the esbuild package is not installed (run npm install)");
  }
}

/**
 * How the service's code is bundled, whatever the entry: the CLI here, a benchmark's server
 * (bench/lib/bundled.ts), so both run the code as production does.
 */
export function bundleOptions(root) {
  return {
    absWorkingDir: root,
    bundle: true,
    format: "esm",
    platform: "node",
    target: "node20.18",
    tsconfig: join(root, "tsconfig.build.json"),
    external: EXTERNAL,
    plugins: [llhttpOnFirstConnection],
    // The bundled CommonJS packages require Node's modules and the external ones: an ES module
    // has no `require`, so each output file makes one.
    banner: {
      js: 'import { createRequire as __secsnapCreateRequire } from "node:module";\nconst require = __secsnapCreateRequire(import.meta.url);',
    },
    // Compiling a module costs per byte too: whitespace and syntax minified, names kept so stack
    // traces still say where (and NODE_OPTIONS=--enable-source-maps maps them to src/).
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: "error",
  };
}

async function bundle(root, outdir) {
  const result = await loadEsbuild(root).build({
    ...bundleOptions(root),
    entryPoints: { "cli/main": "src/cli/main.ts" },
    outdir,
    // Each command is a dynamic import (src/cli/run.ts): its own chunks, loaded on use.
    splitting: true,
    // Every output sits two levels below the root, as the compiled files did, so paths made
    // from import.meta.url (src/devnet/compile.ts: the contracts, .cache/) still hold.
    chunkNames: "chunks/[name]-[hash]",
    sourcemap: "linked",
    metafile: true,
  });
  // Output paths as they will be once the directory is dist/ (esbuild's are relative to root).
  const prefix = `${relative(root, outdir).split(sep).join("/")}/`;
  const final = (path) => (path.startsWith(prefix) ? `dist/${path.slice(prefix.length)}` : path);
  const outputs = {};
  for (const [path, output] of Object.entries(result.metafile.outputs)) {
    outputs[final(path)] = {
      ...output,
      imports: output.imports.map((i) => (i.external ? i : { ...i, path: final(i.path) })),
    };
  }
  writeFileSync(join(outdir, META), JSON.stringify({ ...result.metafile, outputs }));
  recordMcpListing(outdir);
}

/**
 * `secsnap mcp`'s first answers (initialize, tools/list), recorded from the SDK by the bundle just
 * built, beside its chunks: the command answers from them while the SDK loads
 * (src/cli/mcp/listing.ts).
 */
function recordMcpListing(outdir) {
  const run = spawnSync(
    process.execPath,
    [join(outdir, "cli", "main.js"), "mcp", "--write-listing", join(outdir, "mcp-listing.json")],
    { encoding: "utf8" },
  );
  if (run.status !== 0) {
    throw new Error(`cannot record the MCP listing:\n${run.stdout}${run.stderr}${run.error ?? ""}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [root, outdir] = process.argv.slice(2);
  if (!root || !outdir) {
    process.stderr.write("usage: node scripts/bundle.js <root> <outdir>\n");
    process.exit(2);
  }
  bundle(root, outdir).catch((err) => {
    // esbuild has printed its messages (logLevel "error"); anything else is said here.
    if (!err.errors) process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}
