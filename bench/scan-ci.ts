/**
 * `secsnap scan` of many sites in one run against one run per site (docs/benchmarks.md "Scan in
 * CI"): 20 local sites, `secsnap scan --local <20 URLs>` (one process, one engine, four at a
 * time) beside 20 `secsnap scan --local <URL>` one after the other, in the same alternating
 * rounds. Only the paired ratio is judged (target ≤ 0.6×): what both sides pay alike on a shared
 * machine cancels out.
 *
 *   npm run bench -- scan-ci [--sites N] [--rounds N]
 */
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { duel, type Contender } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TARGET = 0.6;
const WARMUP = 1;

/** One plain-HTTP site on loopback, a page with a few headers. */
async function startSite(): Promise<Server> {
  const site = createServer((req, res) => {
    res.writeHead(req.url === "/" ? 200 : 404, {
      "content-type": "text/html",
      "x-content-type-options": "nosniff",
    });
    res.end("<!doctype html><title>bench</title>");
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  return site;
}

/** One `secsnap` process per entry of `argvs`, one after the other; their total wall ms. */
function processes(name: string, argvs: string[][], env: NodeJS.ProcessEnv): Contender {
  const once = (args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn(process.execPath, ["bin/secsnap.js", ...args], {
        cwd: ROOT,
        env,
        stdio: "ignore",
      });
      child.on("error", reject);
      child.on("exit", (code) =>
        code === 0 ? resolve() : reject(new Error(`${name} exited with ${code}`)),
      );
    });
  return {
    name,
    async run() {
      const started = performance.now();
      for (const args of argvs) await once(args);
      return performance.now() - started;
    },
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { sites: { type: "string", default: "20" }, rounds: { type: "string", default: "5" } },
  });
  const count = Number(values.sites);
  const rounds = Number(values.rounds);
  const sites = await Promise.all(Array.from({ length: count }, startSite));
  const urls = sites.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/`);
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  console.log(
    `secsnap scan in CI: ${count} local sites, one run beside ${count} runs, ${rounds} alternating rounds after ${WARMUP} warm-up`,
  );
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
  );
  try {
    // The first run of bin/secsnap.js builds dist/ when it is missing or stale: not measured.
    await processes("build", [["--version"]], env).run();
    const result = await duel(
      processes("one run", [["scan", "--local", "--json", ...urls]], env),
      processes(
        `${count} runs`,
        urls.map((url) => ["scan", "--local", "--json", url]),
        env,
      ),
      { warmup: WARMUP, rounds },
    );
    // The paired median is the judged figure, as in every part (docs/benchmarks.md).
    const pass = result.pairedRatio <= TARGET;
    console.log(
      "\n| line | one run median ms | runs median ms | ratio of medians | paired | target | verdict |",
    );
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    console.log(
      `| scan of ${count} sites | ${result.a.time.median.toFixed(0)} | ${result.b.time.median.toFixed(0)} | ${result.ratio.toFixed(2)}× | **${result.pairedRatio.toFixed(2)}×** | ≤ ${TARGET}× | ${pass ? "**PASS**" : "**FAIL**"} |`,
    );
    return pass ? 0 : 1;
  } finally {
    await Promise.all(sites.map((s) => new Promise((resolve) => s.close(resolve))));
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
