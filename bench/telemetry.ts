/**
 * The telemetry benchmark: what metrics and the request log cost per request. The same app
 * serves GET /health on three listeners of one child process (bench/lib/telemetry-server.mjs,
 * compiled build): without telemetry, with metrics, with metrics and one JSON log line. Each
 * round sends the same number of requests to each, in turn, and reads the server's own CPU time
 * around it: CPU µs per request, not requests per second, because the shared machine's
 * throughput swings several-fold within a minute while a request's CPU cost does not.
 *
 *   tsx bench/telemetry.ts        prints the figures; no target (docs/benchmarks.md, telemetry)
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { bundledServer } from "./lib/bundled.js";
import { summarise } from "./lib/stats.js";

const CONNECTIONS = 16;
const REQUESTS = 5_000;
const ROUNDS = 7;
const KINDS = ["plain", "metrics", "logged"] as const;
type Kind = (typeof KINDS)[number];

function send(pool: Pool): Promise<void> {
  return new Promise((resolve, reject) => {
    pool.dispatch(
      { path: "/health", method: "GET" },
      {
        onConnect() {},
        onHeaders: () => true,
        onData: () => true,
        onComplete: () => resolve(),
        onError: reject,
      },
    );
  });
}

async function requests(pool: Pool, count: number): Promise<void> {
  let sent = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (sent < count) {
        sent++;
        await send(pool);
      }
    }),
  );
}

async function main(): Promise<void> {
  const server = await bundledServer(
    fileURLToPath(new URL("./lib/telemetry-server.mjs", import.meta.url)),
  );
  const child = fork(server, [], { execArgv: [], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  try {
    const urls = await new Promise<Record<Kind, string>>((resolve) =>
      child.once("message", (m) => resolve(m as Record<Kind, string>)),
    );
    const cpu = () =>
      new Promise<number>((resolve) => {
        child.once("message", (m) => resolve((m as { cpu: number }).cpu));
        child.send("cpu");
      });
    const pools = Object.fromEntries(
      KINDS.map((k) => [k, new Pool(urls[k], { connections: CONNECTIONS })]),
    ) as Record<Kind, Pool>;
    for (const kind of KINDS) await requests(pools[kind], 1_000); // warm-up
    const perRequest: Record<Kind, number[]> = { plain: [], metrics: [], logged: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of KINDS) {
        const before = await cpu();
        await requests(pools[kind], REQUESTS);
        perRequest[kind].push(((await cpu()) - before) / REQUESTS);
      }
    }
    await Promise.all(KINDS.map((k) => pools[k].close()));
    console.log(
      `\nGET /health, server CPU per request (${ROUNDS} rounds of ${REQUESTS} requests per listener, ${CONNECTIONS} connections)`,
    );
    const plain = summarise(perRequest.plain).median;
    for (const kind of KINDS) {
      const s = summarise(perRequest[kind]);
      const ratios = summarise(perRequest[kind].map((v, i) => v / perRequest.plain[i]!));
      console.log(
        `  ${kind.padEnd(8)} ${s.median.toFixed(1).padStart(7)} µs  (min ${s.min.toFixed(1)}, max ${s.max.toFixed(1)})  +${(s.median - plain).toFixed(1)} µs, ×${ratios.median.toFixed(2)} paired`,
      );
    }
  } finally {
    child.kill();
  }
}

await main();
