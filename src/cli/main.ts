import { runCli } from "./run.js";

// The `secsnap` process: bin/secsnap.js (compiled, dist/cli/main.js) and the tests that need a
// real process (exit codes, signals) start this file; everything else calls runCli in process.
const exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: process.stdout,
  stderr: process.stderr,
});
process.exitCode = exitCode;
// Let stdout drain normally; exit anyway if some handle (a socket pool, a timer) keeps us alive.
setTimeout(() => process.exit(exitCode), 2_000).unref();
