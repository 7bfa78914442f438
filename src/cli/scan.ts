import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { loadSnapshotConfig } from "../config.js";
import {
  SnapshotError,
  createSnapshotEngine,
  createUrlPolicy,
  parseInputUrl,
  type SnapshotEngine,
} from "../snapshot/index.js";
import { UsageError, type Command } from "./command.js";
import { formatReport, formatSnapshotError, useColor } from "./format.js";
import { announceLocalMode, withLocalMode } from "./local-mode.js";

/** Exit code of `scan` when the service would have answered 400 (a SnapshotError). */
export const EXIT_SNAPSHOT_ERROR = 2;

export const scanCommand: Command = {
  usage: [
    "Usage: secsnap scan <url> [--json] [--local]",
    "",
    "Runs one snapshot from this machine with the SNAPSHOT_* settings of the environment.",
    "Prints the report as JSON, or as a readable summary when stdout is a terminal.",
    "",
    "Options:",
    "  --json   always print JSON (the exact body the API would send)",
    "  --local  a site on your machine or network: loopback and private targets on any",
    "           port (SNAPSHOT_ALLOW_LOCAL=1); cloud host services stay blocked",
    "",
    "Exit codes: 0 report printed, 2 the URL was rejected (SnapshotError JSON printed),",
    "1 bad usage or configuration.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const { values, positionals } = parseArgs({
      args,
      options: {
        json: { type: "boolean", default: false },
        local: { type: "boolean", default: false },
      },
      allowPositionals: true,
    });
    if (positionals.length !== 1) throw new UsageError("scan needs exactly one <url>");
    const rawUrl = positionals[0] as string;
    const pretty = !values.json && Boolean(stdout.isTTY);
    const color = pretty && useColor(stdout, env);

    // One snapshot ends long before V8's optimizing compile of undici's WebAssembly HTTP parser
    // would pay off, and the process would wait for it at exit: baseline code only
    // (docs/benchmarks.md "Start-up").
    setFlagsFromString("--liftoff-only");
    const config = loadSnapshotConfig(withLocalMode(env, values.local));
    if (config.allowLocal) announceLocalMode(stderr, { serving: false });
    let engine: SnapshotEngine | undefined;
    try {
      // A URL the policy refuses is answered before the engine's heavy parts are loaded.
      parseInputUrl(rawUrl, createUrlPolicy(config));
      engine = createSnapshotEngine(config);
      const result = await engine.snapshot(rawUrl);
      stdout.write(pretty ? formatReport(result, color) : JSON.stringify(result, null, 2) + "\n");
      return 0;
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      // Same body the API answers with 400: requested_url is what was submitted.
      const body = { ...err.toBody(), requested_url: rawUrl };
      stdout.write(
        pretty ? formatSnapshotError(body, color) : JSON.stringify(body, null, 2) + "\n",
      );
      return EXIT_SNAPSHOT_ERROR;
    } finally {
      await engine?.close();
    }
  },
};
