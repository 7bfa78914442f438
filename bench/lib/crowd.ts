/**
 * A crowd at one service: many paid snapshot requests at once against `secsnap serve`, for the
 * trickle benchmark's judged line (bench/trickle.ts).
 */
import { readFileSync } from "node:fs";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { createPublicClient, http } from "viem";
import { compiledBuild } from "./compiled.js";
import { startDevnet } from "../../src/devnet/index.js";
import { fleetEnv, startInstance } from "../../test/fixtures/service-instance.js";
import { usdcBalance } from "../../test/fixtures/usdc.js";
import { request, signProofs } from "./fleet.js";

const PRICE_UNITS = 50_000n;

export interface ServiceResult {
  peakRssMiB: number;
  /** RSS of the idle service before the crowd. */
  startRssMiB: number;
  maxInFlight: string;
  slowestMs: number;
  medianMs: number;
  ended: number;
  /** Answers by status (and error_type for 400s), plus client-side failures. */
  outcomes: Record<string, number>;
  /** The slowest answer of each outcome, ms. */
  slowestByOutcome: Record<string, number>;
  reports: number;
  transfers: bigint;
  /** The service's own timings of the crowd's paid requests, from its metrics (seconds). */
  phases: PhaseTimes;
}

/** Mean seconds of each part of a paid request, as the service's metrics count them. */
export interface PhaseTimes {
  verify: { mean: number; count: number };
  snapshot: { mean: number; count: number };
  settle: { mean: number; count: number };
}

/** Sum over count of the Prometheus series `name` whose labels include `match`. */
function meanOf(metrics: string, name: string, match: string): { mean: number; count: number } {
  let sum = 0;
  let count = 0;
  for (const line of metrics.split("\n")) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || !m[2]?.includes(match)) continue;
    if (m[1] === `${name}_sum`) sum += Number(m[3]);
    if (m[1] === `${name}_count`) count += Number(m[3]);
  }
  return { mean: count > 0 ? sum / count : 0, count };
}

/** VmHWM / VmRSS of a process, MiB. */
function memoryOf(pid: number, field: "VmHWM" | "VmRSS"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1]);
  return kib / 1024;
}

export interface CrowdOptions {
  /** The targets, asked for in turn. */
  urls: string[];
  /** Their ports (443 is added: the HTTPS probe of an http target). */
  ports: number[];
  count: number;
  /** SNAPSHOT_TIMEOUT_MS of the service. */
  timeoutMs: number;
  allowCidrs: string[];
}

/**
 * `count` concurrent paid `POST /v1/snapshot` to one `secsnap serve` (the compiled build, in
 * production mode on a devnet of its own, default SNAPSHOT_MAX_CONCURRENCY), every proof signed
 * before they start: what came back, how long each took, the service's memory and what moved.
 */
export async function measureService(o: CrowdOptions): Promise<ServiceResult> {
  const { urls, ports, count } = o;
  compiledBuild();
  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  const chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  const env = fleetEnv({
    payTo: devnet.payTo,
    facilitatorUrl: devnet.facilitatorUrl,
    rpcUrl: devnet.rpcUrl,
    targetPorts: [...ports, 443],
    allowCidrs: o.allowCidrs,
    extra: { SNAPSHOT_TIMEOUT_MS: String(o.timeoutMs), LOG_LEVEL: "warn" },
  });
  const service = await startInstance({ name: "trickle", env, runner: "build" });
  const pool = new Pool(service.url, { connections: count });
  try {
    await service.start();
    const pid = service.pid as number;
    const post = (url: string) => ({
      path: "/v1/snapshot",
      method: "POST" as const,
      body: JSON.stringify({ url }),
    });
    const proofs = await signProofs(pool, post(urls[0] as string), devnet.payerPrivateKeys, count);
    const before = await usdcBalance(chain, devnet.usdcAddress, devnet.payTo);
    const startRssMiB = memoryOf(pid, "VmRSS");
    const outcomes: Record<string, number> = {};
    const slowestByOutcome: Record<string, number> = {};
    const times: number[] = [];
    let reports = 0;
    await Promise.all(
      proofs.map(async (proof, i) => {
        const t0 = performance.now();
        let outcome: string;
        try {
          const answer = await request(pool, {
            ...post(urls[i % urls.length] as string),
            headers: { "content-type": "application/json", ...proof },
          });
          outcome = `HTTP ${answer.status}`;
          if (answer.status === 200) reports++;
          if (answer.status === 400) {
            outcome += ` ${(JSON.parse(answer.body) as { error_type?: string }).error_type}`;
          }
        } catch (err) {
          outcome = `client error: ${(err as Error).message}`;
        }
        const ms = performance.now() - t0;
        times.push(ms);
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
        slowestByOutcome[outcome] = Math.max(slowestByOutcome[outcome] ?? 0, ms);
      }),
    );
    const peakRssMiB = memoryOf(pid, "VmHWM");
    const metrics = await (await fetch(service.metricsUrl)).text();
    const phases: PhaseTimes = {
      verify: meanOf(metrics, "secsnap_facilitator_request_duration_seconds", 'operation="verify"'),
      snapshot: meanOf(metrics, "secsnap_snapshot_duration_seconds", "outcome="),
      settle: meanOf(metrics, "secsnap_facilitator_request_duration_seconds", 'operation="settle"'),
    };
    const transfers =
      ((await usdcBalance(chain, devnet.usdcAddress, devnet.payTo)) - before) / PRICE_UNITS;
    times.sort((x, y) => x - y);
    return {
      peakRssMiB,
      startRssMiB,
      maxInFlight: `${64 * cpus().length} (64 × ${cpus().length} cores, the default)`,
      slowestMs: times[times.length - 1] ?? 0,
      medianMs: times[Math.floor(times.length / 2)] ?? 0,
      ended: times.length,
      outcomes,
      slowestByOutcome,
      reports,
      transfers,
      phases,
    };
  } finally {
    await pool.close();
    await service.close();
    await devnet.close();
  }
}
