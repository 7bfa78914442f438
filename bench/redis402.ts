/**
 * The unpaid challenge with shared state configured: `secsnap serve` (the compiled build, a
 * real process) with REDIS_URL set to a real redis-server, its 402 (POST /v1/snapshot without
 * payment) beside GET /health on the same instance, in alternating rounds of the same bounded
 * load. The median of the per-round ratios must be ≥ 0.85. Since the shared budget became exact
 * (docs/operations.md, "Rate limits"), each 402 waits for one Redis call, shared by the
 * requests of one client that arrive while it is out: what this measures is that wait's cost.
 * The rate limit is set out of reach here: what is measured is the challenge, not 429s.
 *
 *   tsx bench/redis402.ts
 *
 * Without redis-server it says which Debian package to install and stops (exit 0; under
 * CI=true, exit 1).
 */
import { cpus } from "node:os";
import { Pool, type Dispatcher } from "undici";
import { compiledBuild } from "./lib/compiled.js";
import { startInstance } from "../test/fixtures/service-instance.js";
import { startSupportedFacilitator } from "../test/fixtures/supported-facilitator.js";
import { startRedis } from "../test/fixtures/redis.js";
import { TEST_SIGNING_KEY } from "../test/fixtures/signing-key.js";
import { systemBinary } from "../test/fixtures/system-binary.js";
import { loadFor } from "./lib/fleet.js";
import { summarise } from "./lib/stats.js";

const TARGET_RATIO = 0.85;
const CONNECTIONS = 16;
const ROUND_MS = 1_000;
const ROUNDS = 9;
const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

async function main(): Promise<number> {
  let redisBin: string | null;
  try {
    redisBin = systemBinary("redis-server", "redis-server");
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  }
  if (!redisBin) return 0;
  compiledBuild();
  const redis = await startRedis();
  // The 402 needs only the facilitator's /supported, fetched once.
  const facilitator = await startSupportedFacilitator(["eip155:84532"]);
  const instance = await startInstance({
    name: "a",
    runner: "build",
    env: {
      X402_PAY_TO: PAY_TO,
      X402_NETWORKS: "base-sepolia",
      X402_FACILITATOR_URL: facilitator.url,
      REDIS_URL: redis.url,
      SIGNING_KEY: TEST_SIGNING_KEY,
      RATE_LIMIT_PER_MINUTE: "1000000",
    },
    stdout: "discarded",
  });
  const pool = new Pool(`http://127.0.0.1:${instance.port}`, { connections: CONNECTIONS });
  try {
    await instance.start();
    console.log(
      `secsnap 402-with-Redis benchmark: one instance (compiled build), REDIS_URL ${redis.url}, ${CONNECTIONS} keep-alive connections, ${ROUNDS} alternating rounds of ${ROUND_MS} ms`,
    );
    console.log(
      `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
    );
    const health: Dispatcher.DispatchOptions = { path: "/health", method: "GET" };
    const challenge: Dispatcher.DispatchOptions = {
      path: "/v1/snapshot",
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: "https://example.com/" }),
    };
    // Warm-up (JIT, connections, the prepared challenge), not counted.
    await loadFor(pool, health, CONNECTIONS, ROUND_MS);
    await loadFor(pool, challenge, CONNECTIONS, ROUND_MS);
    const healthRps: number[] = [];
    const challengeRps: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const h = await loadFor(pool, health, CONNECTIONS, ROUND_MS);
      const c = await loadFor(pool, challenge, CONNECTIONS, ROUND_MS);
      if (h.statuses.size !== 1 || !h.statuses.has(200)) {
        throw new Error(`health not all 200: ${JSON.stringify([...h.statuses])}`);
      }
      if (c.statuses.size !== 1 || !c.statuses.has(402)) {
        throw new Error(`challenge not all 402: ${JSON.stringify([...c.statuses])}`);
      }
      healthRps.push(h.rps);
      challengeRps.push(c.rps);
    }
    const h = summarise(healthRps);
    const c = summarise(challengeRps);
    // Paired: each challenge round against the health round just before it.
    const paired = summarise(challengeRps.map((rps, i) => rps / (healthRps[i] as number)));
    const ok = paired.median >= TARGET_RATIO;
    console.log("");
    console.log("| line | median req/s | min | max |");
    console.log("|---|--:|--:|--:|");
    console.log(
      `| GET /health | ${h.median.toFixed(0)} | ${h.min.toFixed(0)} | ${h.max.toFixed(0)} |`,
    );
    console.log(
      `| POST /v1/snapshot unpaid (402), REDIS_URL set | ${c.median.toFixed(0)} | ${c.min.toFixed(0)} | ${c.max.toFixed(0)} |`,
    );
    console.log(
      `\nratio 402/health (paired median): ${paired.median.toFixed(2)} (min ${paired.min.toFixed(2)}, max ${paired.max.toFixed(2)}); target ≥ ${TARGET_RATIO} ${ok ? "PASS" : "FAIL"}`,
    );
    return ok ? 0 : 1;
  } finally {
    await pool.close();
    await instance.close();
    await facilitator.close();
    await redis.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
