import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { loadSnapshotConfig } from "../config.js";
import {
  GRADES,
  SEVERITIES,
  SnapshotError,
  createSnapshotEngine,
  createUrlPolicy,
  parseSnapshotTarget,
  type SnapshotEngine,
  type SnapshotResult,
  type UrlPolicy,
} from "../snapshot/index.js";
import { UsageError, type CliOutput, type Command } from "./command.js";
import { formatReport, formatSnapshotError, useColor } from "./format.js";
import { announceLocalMode, withLocalMode } from "./local-mode.js";
import { keepReport, writablePath } from "./pay/receipt.js";
import { reportsOf, type ScanOutcome } from "./scan/outcome.js";

/** Exit code of `scan` when the service would have answered 400 (a SnapshotError). */
export const EXIT_SNAPSHOT_ERROR = 2;
/** Exit code of `scan` when a report is below `--fail-under` or has a finding at `--fail-on`. */
const EXIT_GATE_FAILED = 3;

const FORMATS = ["text", "json", "markdown", "sarif", "html"] as const;
type Format = (typeof FORMATS)[number];

/** Snapshots at once by default: a few, so a CI run is quick without crowding a small runner. */
const DEFAULT_CONCURRENCY = 4;
const MAX_CONCURRENCY = 16;

export const scanCommand: Command = {
  usage: [
    "Usage: secsnap scan <url>... [--local] [--format FORMAT] [--output FILE]",
    "                    [--fail-under GRADE] [--fail-on SEVERITY] [--concurrency N]",
    "",
    "Runs snapshots from this machine with the SNAPSHOT_* settings of the environment, a few at",
    "a time, each URL's progress on stderr when it is a terminal.",
    "",
    "Options:",
    "  --format F         text (the default on a terminal), json (the default otherwise: the",
    "                     exact body the API would send; an array for several URLs), markdown",
    "                     (a pull-request comment), sarif (SARIF 2.1.0), html (one printable page)",
    "  --json             the same as --format json",
    "  --output FILE      write there instead of stdout (checked before any snapshot runs)",
    "  --fail-under GRADE exit 3 when a report grades below GRADE (A+ … F)",
    "  --fail-on SEV      exit 3 when a report has a finding at least SEV (high, medium, low, info)",
    `  --concurrency N    snapshots at once (default ${DEFAULT_CONCURRENCY}, at most ${MAX_CONCURRENCY})`,
    "  --local            a site on your machine or network: loopback and private targets on any",
    "                     port (SNAPSHOT_ALLOW_LOCAL=1); cloud host services stay blocked",
    "",
    "Exit codes: 0 every report printed and no gate failed, 2 a URL was rejected (its",
    "SnapshotError printed with the others), 3 a report failed --fail-under or --fail-on,",
    "1 bad usage or configuration.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const options = parseScanArgs(args);
    const toTerminal = options.output === undefined && Boolean(stdout.isTTY);
    const format: Format = options.format ?? (toTerminal ? "text" : "json");
    // One snapshot ends long before V8's optimizing compile of undici's WebAssembly HTTP parser
    // would pay off, and the process would wait for it at exit: baseline code only
    // (docs/benchmarks.md "Start-up").
    setFlagsFromString("--liftoff-only");
    const config = loadSnapshotConfig(withLocalMode(env, options.local));
    if (config.allowLocal) announceLocalMode(stderr, { serving: false });
    const outcomes = await scanAll(options.urls, {
      policy: createUrlPolicy(config),
      openEngine: () => createSnapshotEngine(config),
      concurrency: options.concurrency,
      progress: stderr.isTTY ? stderr : null,
    });
    const text = await render(format, outcomes, toTerminal && useColor(stdout, env));
    if (options.output === undefined) stdout.write(text);
    else keepReport(text, options.output, stdout, stderr, "scan");
    const gate = gateFailures(reportsOf(outcomes), options);
    for (const line of gate) stderr.write(`secsnap: ${line}\n`);
    if (outcomes.some((o) => "error" in o)) return EXIT_SNAPSHOT_ERROR;
    return gate.length > 0 ? EXIT_GATE_FAILED : 0;
  },
};

interface ScanOptions {
  urls: string[];
  format: Format | undefined;
  output: string | undefined;
  failUnder: string | undefined;
  failOn: (typeof SEVERITIES)[number] | undefined;
  concurrency: number;
  local: boolean;
}

/** `value` when it is one of `allowed` (or not given); a usage error naming `option` otherwise. */
function oneOf<T extends string>(
  value: string | undefined,
  allowed: readonly T[],
  option: string,
): T | undefined {
  if (value === undefined || (allowed as readonly string[]).includes(value)) {
    return value as T | undefined;
  }
  throw new UsageError(`${option} must be one of ${allowed.join(", ")}`);
}

function formatOf(json: boolean, format: string | undefined): Format | undefined {
  if (json && format !== undefined && format !== "json") {
    throw new UsageError("--json and --format name two formats");
  }
  return oneOf(json ? "json" : format, FORMATS, "--format");
}

function concurrencyOf(value: string | undefined): number {
  const concurrency = Number(value ?? DEFAULT_CONCURRENCY);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
    throw new UsageError(`--concurrency must be a whole number from 1 to ${MAX_CONCURRENCY}`);
  }
  return concurrency;
}

function parseScanArgs(args: string[]): ScanOptions {
  const { values, positionals } = parseArgs({
    args,
    options: {
      json: { type: "boolean", default: false },
      local: { type: "boolean", default: false },
      format: { type: "string" },
      output: { type: "string" },
      "fail-under": { type: "string" },
      "fail-on": { type: "string" },
      concurrency: { type: "string" },
    },
    allowPositionals: true,
  });
  if (positionals.length === 0) throw new UsageError("scan needs at least one <url>");
  return {
    urls: positionals,
    format: formatOf(values.json, values.format),
    // Checked before any snapshot runs, as `pay` and `get` do.
    output: values.output === undefined ? undefined : writablePath(values.output, "--output"),
    failUnder: oneOf(values["fail-under"], GRADES, "--fail-under"),
    failOn: oneOf(values["fail-on"], SEVERITIES, "--fail-on"),
    concurrency: concurrencyOf(values.concurrency),
    local: values.local,
  };
}

interface ScanAllOptions {
  policy: UrlPolicy;
  openEngine: () => SnapshotEngine;
  concurrency: number;
  /** Where each URL's progress line goes (a terminal), or null. */
  progress: CliOutput | null;
}

/**
 * Every URL's outcome, in the order given; `concurrency` snapshots at a time through one engine
 * (one process, one resolver). A URL the policy refuses is answered before the engine's heavy
 * parts are loaded, and the engine is not loaded at all when every URL is refused.
 */
async function scanAll(urls: readonly string[], options: ScanAllOptions): Promise<ScanOutcome[]> {
  const outcomes: ScanOutcome[] = new Array<ScanOutcome>(urls.length);
  let engine: SnapshotEngine | undefined;
  let next = 0;
  let done = 0;
  const one = async (url: string): Promise<ScanOutcome> => {
    try {
      // Parsed once: the engine takes the checked target as it is.
      const target = parseSnapshotTarget(url, options.policy);
      engine ??= options.openEngine();
      return { url, report: await engine.snapshot(target) };
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      // Same body the API answers with 400: requested_url is what was submitted.
      return { url, error: { ...err.toBody(), requested_url: url } };
    }
  };
  const worker = async () => {
    while (next < urls.length) {
      const index = next++;
      const outcome = await one(urls[index] as string);
      outcomes[index] = outcome;
      done++;
      options.progress?.write(progressLine(outcome, done, urls.length));
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(options.concurrency, urls.length) }, worker));
  } finally {
    await engine?.close();
  }
  return outcomes;
}

function progressLine(outcome: ScanOutcome, done: number, total: number): string {
  const what =
    "report" in outcome
      ? `grade ${outcome.report.grade} (score ${outcome.report.score}/100)`
      : `not scanned (${outcome.error.error_type})`;
  return `[${done}/${total}] ${outcome.url}: ${what}\n`;
}

/** The outcomes in `format`; the heavier renderers are loaded only when asked for. */
async function render(format: Format, outcomes: ScanOutcome[], color: boolean): Promise<string> {
  switch (format) {
    case "json": {
      // One URL: the exact body the API would send, as before; several: an array of them.
      const bodies = outcomes.map((o) => ("report" in o ? o.report : o.error));
      return JSON.stringify(bodies.length === 1 ? bodies[0] : bodies, null, 2) + "\n";
    }
    case "text":
      return outcomes
        .map((o) =>
          "report" in o ? formatReport(o.report, color) : formatSnapshotError(o.error, color),
        )
        .join("\n");
    case "markdown":
      return (await import("./scan/markdown.js")).markdownOf(outcomes);
    case "sarif":
      return (await import("./scan/sarif.js")).sarifOf(outcomes);
    case "html": {
      const { renderReportDocument } = await import("../http/index.js");
      const failed = outcomes.flatMap((o) =>
        "error" in o ? [{ url: o.url, errorType: o.error.error_type, message: o.error.error }] : [],
      );
      return renderReportDocument(reportsOf(outcomes), failed, new Date().toISOString());
    }
  }
}

/** One line per gate a report fails (--fail-under, --fail-on); none when all pass. */
function gateFailures(
  reports: readonly SnapshotResult[],
  { failUnder, failOn }: Pick<ScanOptions, "failUnder" | "failOn">,
): string[] {
  const lines: string[] = [];
  if (failUnder !== undefined) {
    const floor = GRADES.indexOf(failUnder as (typeof GRADES)[number]);
    for (const r of reports) {
      if (GRADES.indexOf(r.grade as (typeof GRADES)[number]) > floor) {
        lines.push(`${r.normalized_url} grades ${r.grade}, below ${failUnder} (--fail-under)`);
      }
    }
  }
  if (failOn !== undefined) {
    const at = SEVERITIES.indexOf(failOn);
    for (const r of reports) {
      const hits = r.findings.filter((f) => SEVERITIES.indexOf(f.severity) <= at);
      if (hits.length > 0) {
        const ids = hits.map((f) => f.id).join(", ");
        lines.push(
          `${r.normalized_url} has ${hits.length} finding(s) at least ${failOn}: ${ids} (--fail-on)`,
        );
      }
    }
  }
  return lines;
}
