#!/usr/bin/env node
// Runs the bundled CLI (dist/), bundling it first when it is missing or older than src/.
import { build, staleReason } from "../scripts/build.js";

const stale = staleReason();
if (stale !== undefined) {
  process.stderr.write(`secsnap: ${stale}; building it (a second or two)\n`);
  try {
    build();
  } catch (err) {
    process.stderr.write(`secsnap: ${err.message}\n`);
    process.exit(1);
  }
}
await import("../dist/cli/main.js");
