/**
 * The start-up benchmark: whole `secsnap` processes, from spawn to exit, each against a bare
 * `node -e 0` started alternately in the same rounds. Two lines are judged: `secsnap --version`
 * (the bundled CLI's own start-up: bin/secsnap.js, its freshness check of dist/, the dispatch)
 * and `secsnap scan <refused URL>` (everything `scan` does before its network work: the engine's
 * modules, the configuration, the URL rules, which refuse a private address); the others show
 * what a command adds by doing its work. `mcp` is judged too: `secsnap mcp` from spawn to its answer
 * to the first `tools/list` (initialize, initialized, tools/list on stdin, as an MCP host starts a
 * session), which is what a host waits for before it can offer the tools.
 *
 *   tsx bench/startup.ts [version] [main] [scan-help] [scan-refused] [scan] [mcp] [tsx]   (default: all)
 *
 * `scan` runs one real snapshot of a tiny local HTTP site on 127.0.0.2 (allowed through
 * SNAPSHOT_ALLOW_CIDRS / SNAPSHOT_ALLOWED_PORTS, as the CLI tests do). Exits 1 if a judged line
 * misses its target or a command fails.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { chosenNames } from "./lib/args.js";
import { duel } from "./lib/stats.js";
import type { Contender, Duel } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TARGET_ADDRESS = "127.0.0.2";
const WARMUP = 2;
const ROUNDS = 15;
/** Start-up of the bundled CLI and of `scan` against a bare node (docs/benchmarks.md, "Start-up"). */
const STARTUP_TARGET = 2;

interface LineSpec {
  title: string;
  /** Timed to the answer of an MCP `tools/list` on stdout rather than to the exit. */
  mcp?: boolean;
  argv: (targetUrl: string) => string[];
  /** Judged lines fail the run above this ratio; the others are printed for reading. */
  target?: number;
  /** The exit code that means the command did its work (default 0). */
  exitCode?: number;
}

const LINES = {
  version: {
    title: "secsnap --version (bin/secsnap.js, bundled)",
    argv: () => ["bin/secsnap.js", "--version"],
    target: STARTUP_TARGET,
  },
  main: {
    title: "node dist/cli/main.js --version (no freshness check)",
    argv: () => ["dist/cli/main.js", "--version"],
  },
  "scan-help": {
    title: "secsnap scan --help (+ loading the engine)",
    argv: () => ["bin/secsnap.js", "scan", "--help"],
  },
  "scan-refused": {
    title: "secsnap scan http://10.0.0.1/ (scan's start-up: refused before any network)",
    argv: () => ["bin/secsnap.js", "scan", "http://10.0.0.1/"],
    target: STARTUP_TARGET,
    exitCode: 2,
  },
  scan: {
    title: "secsnap scan <local site> --json (+ one snapshot)",
    argv: (url) => ["bin/secsnap.js", "scan", url, "--json"],
  },
  mcp: {
    title: "secsnap mcp, spawn to the first tools/list answer (MCP over stdio)",
    // No service is asked: listing the tools needs none.
    argv: () => ["bin/secsnap.js", "mcp", "--api", "http://127.0.0.1:9"],
    target: STARTUP_TARGET,
    mcp: true,
  },
  tsx: {
    title: "node --import tsx src/cli/main.ts --version (through the loader)",
    argv: () => ["--import", "tsx", "src/cli/main.ts", "--version"],
  },
} satisfies Record<string, LineSpec>;
type LineName = keyof typeof LINES;

/** CPU seconds of this process's reaped children (Linux cutime + cstime), or NaN elsewhere. */
function childrenCpuMs(): number {
  try {
    // Fields after the parenthesised command name; cutime and cstime are the 16th and 17th.
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticksPerSecond = 100; // USER_HZ on Linux
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / ticksPerSecond;
  } catch {
    return Number.NaN;
  }
}

/** What an MCP host writes first: initialize, initialized, then tools/list (id 2). */
const MCP_SESSION_START = [
  {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "bench", version: "1" },
    },
  },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
]
  .map((message) => `${JSON.stringify(message)}\n`)
  .join("");

/**
 * `secsnap mcp` to its `tools/list` answer: wall ms to that line (returned); its stdin is then
 * closed, which ends the session, and its CPU ms to the exit are pushed to cpu.
 */
function mcpContender(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cpu: number[],
): Contender {
  return {
    name,
    run: () =>
      new Promise((resolve, reject) => {
        const cpuBefore = childrenCpuMs();
        const started = performance.now();
        const child = spawn(process.execPath, args, {
          cwd: ROOT,
          env,
          stdio: ["pipe", "pipe", "ignore"],
        });
        let answeredMs: number | undefined;
        let stdout = "";
        child.on("error", reject);
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString();
          if (answeredMs === undefined && /"id":2[,}]/.test(stdout) && stdout.includes('"tools"')) {
            answeredMs = performance.now() - started;
            child.stdin.end();
          }
        });
        child.on("exit", (code) => {
          cpu.push(childrenCpuMs() - cpuBefore);
          if (code === 0 && answeredMs !== undefined) resolve(answeredMs);
          else
            reject(
              new Error(
                `${name} exited with ${code} (${answeredMs === undefined ? "no tools/list answer" : "answered"})`,
              ),
            );
        });
        child.stdin.write(MCP_SESSION_START);
      }),
  };
}

/** One whole process; its wall ms (returned) and CPU ms (pushed to cpu). */
function processContender(
  name: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cpu: number[],
  exitCode = 0,
): Contender {
  return {
    name,
    run: () =>
      new Promise((resolve, reject) => {
        const cpuBefore = childrenCpuMs();
        const started = performance.now();
        const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: "ignore" });
        child.on("error", reject);
        child.on("exit", (code) => {
          const ms = performance.now() - started;
          cpu.push(childrenCpuMs() - cpuBefore);
          if (code === exitCode) resolve(ms);
          else reject(new Error(`${name} exited with ${code}`));
        });
      }),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

interface LineResult {
  line: LineName;
  duel: Duel;
  cpuA: number;
  cpuB: number;
}

async function main(): Promise<number> {
  const lines = chosenNames(Object.keys(LINES) as LineName[], "line");
  if (!lines) return 2;

  const site = createServer((req, res) => {
    res.writeHead(req.url === "/" ? 200 : 404, { "content-type": "text/html" });
    res.end("<!doctype html><title>bench</title>");
  });
  await new Promise<void>((resolve) => site.listen(0, TARGET_ADDRESS, resolve));
  const port = (site.address() as AddressInfo).port;
  const url = `http://${TARGET_ADDRESS}:${port}/`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SNAPSHOT_ALLOW_CIDRS: `${TARGET_ADDRESS}/32`,
    SNAPSHOT_ALLOWED_PORTS: String(port),
    NO_COLOR: "1",
  };

  console.log(
    `secsnap start-up benchmark: whole processes against \`node -e 0\`, ${ROUNDS} alternating rounds after ${WARMUP} warm-up`,
  );
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
  );

  // The first run of bin/secsnap.js builds dist/ when it is missing or stale: not measured.
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ["bin/secsnap.js", "--version"], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`build failed (${code})`)),
    );
  });

  const results: LineResult[] = [];
  let failed = false;
  try {
    for (const line of lines) {
      const spec: LineSpec = LINES[line];
      const cpuA: number[] = [];
      const cpuB: number[] = [];
      try {
        const result = await duel(
          spec.mcp
            ? mcpContender(line, spec.argv(url), env, cpuA)
            : processContender(line, spec.argv(url), env, cpuA, spec.exitCode),
          processContender("node -e 0", ["-e", "0"], env, cpuB),
          { warmup: WARMUP, rounds: ROUNDS },
        );
        // duel() also measures the warm-up; the CPU of the measured rounds is at the end.
        results.push({
          line,
          duel: result,
          cpuA: median(cpuA.slice(-result.rounds)),
          cpuB: median(cpuB.slice(-result.rounds)),
        });
      } catch (err) {
        failed = true;
        console.error(`${line}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  } finally {
    site.close();
  }

  const rows = [
    "| line | min ms | median ms | max ms | CPU ms | median ratio (wall) | paired | CPU ratio | target | verdict |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|",
  ];
  for (const r of results) {
    const spec: LineSpec = LINES[r.line];
    const { a, b } = r.duel;
    const verdict =
      spec.target === undefined ? "—" : r.duel.ratio <= spec.target ? "**PASS**" : "**FAIL**";
    failed ||= spec.target !== undefined && r.duel.ratio > spec.target;
    rows.push(
      `| ${spec.title} | ${a.time.min.toFixed(0)} | ${a.time.median.toFixed(0)} | ${a.time.max.toFixed(0)} | ${r.cpuA.toFixed(0)} | **${r.duel.ratio.toFixed(2)}×** | ${r.duel.pairedRatio.toFixed(2)}× | ${(r.cpuA / r.cpuB).toFixed(2)}× | ${spec.target === undefined ? "—" : `≤ ${spec.target}×`} | ${verdict} |`,
      `| node -e 0 (same rounds) | ${b.time.min.toFixed(0)} | ${b.time.median.toFixed(0)} | ${b.time.max.toFixed(0)} | ${r.cpuB.toFixed(0)} | | | | | |`,
    );
  }
  console.log("");
  console.log(rows.join("\n"));
  console.log(failed ? "\nstart-up benchmark: FAIL" : "\nstart-up benchmark: PASS");
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
