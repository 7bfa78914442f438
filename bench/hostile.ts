/**
 * The hostile-neighbour benchmark: ten snapshots of hostile targets (a Content-Encoding chain,
 * a host whose SYNs are dropped, a TLS server that renegotiates in a loop) running beside ten
 * snapshots of a healthy target. Judged: the healthy ones take ≤ 1.2× what they take alone
 * (median ratio of alternating rounds, one engine, one process), and the measuring process's
 * peak RSS stays < 250 MiB. Every hostile snapshot must also end by its deadline.
 *
 *   tsx bench/hostile.ts [chain] [blackhole] [reneg]     (default: all three kinds)
 *   tsx bench/hostile.ts healthy                          (control: ten healthy neighbours)
 *
 * The control puts ten snapshots of another healthy HTTPS site beside the measured ones: what any
 * neighbour costs on one event loop, to read the hostile figure against (not judged).
 *
 * Three processes besides the black hole's own: this one serves the healthy target, DNS and the
 * test CA; a second serves the hostile HTTP and TLS targets, at the lowest CPU priority, so their
 * work never delays the healthy target's answers or the measured engine (on the internet they
 * are different machines); a measuring child trusts the CA through NODE_EXTRA_CA_CERTS, as
 * production trusts public CAs.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSnapshotEngine } from "../src/snapshot/index.js";
import type { SnapshotEngine, SnapshotResult } from "../src/snapshot/index.js";
import { startDnsServer } from "../test/fixtures/dns-server.js";
import { startEncodingChainTarget } from "../test/fixtures/hostile-bodies.js";
import { startDroppedSynHost, startRenegotiatingServer } from "../test/fixtures/hostile-network.js";
import { createCa, issueLeaf } from "../test/fixtures/tls.js";
import type { TestLeaf } from "../test/fixtures/tls.js";
import { chosenNames } from "./lib/args.js";
import { runMeasuringChild } from "./lib/child.js";
import { duel, peakRssKib } from "./lib/stats.js";
import type { Duel } from "./lib/stats.js";
import { BENCH_DOMAIN_RECORDS, PAGE_HOST, startBenchTarget } from "./lib/target.js";

const HEALTHY_ADDRESS = "127.0.0.77";
const CHAIN_ADDRESS = "127.0.0.78";
const BLACK_HOLE_ADDRESSES = ["127.0.0.79", "127.0.0.80", "127.0.0.81"];
const RENEGOTIATING_ADDRESS = "127.0.0.82";
const NEIGHBOUR_ADDRESS = "127.0.0.83";
const BLACK_HOLE_HOST = "blackhole.bench.test";
const RENEGOTIATING_HOST = "reneg.bench.test";
const NEIGHBOUR_HOST = "neighbour.bench.test";
/** Every bench address, and never 127.0.0.1. */
const ALLOW_CIDRS = ["127.0.0.64/26"];

const DELAY_MS = 100;
const SNAPSHOTS = 10;
/** The engine's deadline: the black-holed snapshots run this long. */
const TIMEOUT_MS = 3_000;
/** A hostile snapshot that has not ended this long after its deadline is a failure. */
const DEADLINE_MARGIN_MS = 1_000;
const RATIO_TARGET = 1.2;
const RSS_TARGET_MIB = 250;
const WARMUP = 1;
const ROUNDS = 9;
const TIME_LIMIT_MS = 240_000;
const HOSTILE_KINDS = ["chain", "blackhole", "reneg"] as const;
/** Every kind that can be asked for: the hostile ones, and the healthy control. */
const KINDS = [...HOSTILE_KINDS, "healthy"] as const;
type Kind = (typeof KINDS)[number];
const CHILD_ENV = "SECSNAP_BENCH_HOSTILE_CHILD";
const TARGETS_ENV = "SECSNAP_BENCH_HOSTILE_TARGETS";

/** What the hostile-targets process serves on: its ports, sent once over IPC. */
interface HostileTargetPorts {
  chain: number;
  reneg: number;
  neighbour: number;
}

interface ChildSetup {
  dnsServer: string;
  healthyUrl: string;
  hostileUrls: string[];
  ports: number[];
  httpsProbePort: number;
}

interface ChildResult {
  duel: Duel;
  peakRssMiB: number;
  /** Longest any hostile snapshot took, ms. */
  slowestHostileMs: number;
  hostileOutcomes: Record<string, number>;
}

// ---------------------------------------------------------------- measuring child

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark sanity check failed: ${what}`);
}

function checkHealthy(r: SnapshotResult, url: string): void {
  const everything = Object.values(r.checks).every((v) => v === true);
  check(r.reachable && r.final_status_code === 200 && everything, `all checks true for ${url}`);
}

async function measure(setup: ChildSetup): Promise<ChildResult> {
  const engine: SnapshotEngine = createSnapshotEngine({
    timeoutMs: TIMEOUT_MS,
    maxRedirects: 10,
    allowedPorts: new Set(setup.ports),
    allowCidrs: ALLOW_CIDRS,
    dnsServers: [setup.dnsServer],
    httpsProbePort: setup.httpsProbePort,
  });
  let slowestHostileMs = 0;
  const hostileOutcomes: Record<string, number> = {};
  const hostileOne = async (url: string): Promise<void> => {
    const t0 = performance.now();
    let outcome: string;
    try {
      const r = await engine.snapshot(url);
      outcome = r.reachable ? "report, reachable" : "report, not reachable";
    } catch (err) {
      outcome = `400 ${(err as { errorType?: string }).errorType ?? "?"}`;
    }
    slowestHostileMs = Math.max(slowestHostileMs, performance.now() - t0);
    const key = `${new URL(url).hostname}: ${outcome}`;
    hostileOutcomes[key] = (hostileOutcomes[key] ?? 0) + 1;
  };
  const healthyBatch = async (): Promise<number> => {
    const t0 = performance.now();
    const reports = await Promise.all(
      Array.from({ length: SNAPSHOTS }, () => engine.snapshot(setup.healthyUrl)),
    );
    const ms = performance.now() - t0;
    for (const r of reports) checkHealthy(r, setup.healthyUrl);
    return ms;
  };

  try {
    const result = await duel(
      {
        name: `${SNAPSHOTS} healthy beside ${SNAPSHOTS} hostile`,
        run: async () => {
          const hostile = Array.from({ length: SNAPSHOTS }, (_, i) =>
            hostileOne(setup.hostileUrls[i % setup.hostileUrls.length] as string),
          );
          const ms = await healthyBatch();
          // The round ends when the hostile ones have: the next round starts on a quiet engine.
          await Promise.all(hostile);
          return ms;
        },
      },
      { name: `${SNAPSHOTS} healthy alone`, run: healthyBatch },
      {
        warmup: WARMUP,
        rounds: ROUNDS,
        onRound: (i, ta, tb) =>
          process.stderr.write(
            `  round ${i + 1}/${ROUNDS}: beside ${ta.toFixed(1)} ms, alone ${tb.toFixed(1)} ms\n`,
          ),
      },
    );
    return {
      duel: result,
      peakRssMiB: peakRssKib() / 1024,
      slowestHostileMs,
      hostileOutcomes,
    };
  } finally {
    await engine.close();
  }
}

// ---------------------------------------------------------------- hostile targets (own process)

async function serveHostileTargets(leaf: TestLeaf): Promise<void> {
  const chain = await startEncodingChainTarget({ coding: "br", host: CHAIN_ADDRESS });
  const renegotiating = await startRenegotiatingServer({ host: RENEGOTIATING_ADDRESS, cert: leaf });
  const neighbour = await startBenchTarget({
    address: NEIGHBOUR_ADDRESS,
    delayMs: DELAY_MS,
    cert: leaf,
    pageHost: NEIGHBOUR_HOST,
  });
  const ports: HostileTargetPorts = {
    chain: chain.port,
    reneg: renegotiating.port,
    neighbour: neighbour.httpsPort,
  };
  process.send?.(ports);
  // Serves until the parent goes (its IPC channel closes).
  await new Promise<void>((resolve) => process.once("disconnect", resolve));
  await Promise.all([chain.close(), renegotiating.close(), neighbour.close()]);
}

function startHostileTargets(leaf: TestLeaf): Promise<{ ports: HostileTargetPorts; stop(): void }> {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(process.execPath, [...process.execArgv, self], {
    env: { ...process.env, [TARGETS_ENV]: JSON.stringify(leaf) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  // On the internet the hostile servers' CPU is other machines'; here it shares two cores with
  // the measured process, so it runs at the lowest priority (docs/benchmarks-history.md).
  if (child.pid !== undefined) setPriority(child.pid, 19);
  return new Promise((resolve, reject) => {
    child.once("message", (ports: HostileTargetPorts) =>
      resolve({ ports, stop: () => child.disconnect() }),
    );
    child.once("error", reject);
    child.once("exit", (code) => reject(new Error(`hostile targets exited (${code})`)));
  });
}

// ---------------------------------------------------------------- target side (parent)

function runChild(setup: ChildSetup, caPath: string): Promise<ChildResult> {
  return runMeasuringChild<ChildResult>({
    script: fileURLToPath(import.meta.url),
    env: { NODE_EXTRA_CA_CERTS: caPath, [CHILD_ENV]: JSON.stringify(setup) },
    nodeArgs: ["--expose-gc"],
    timeLimitMs: TIME_LIMIT_MS,
    bundled: true,
  });
}

async function main(): Promise<number> {
  const targetsLeaf = process.env[TARGETS_ENV];
  if (targetsLeaf) {
    await serveHostileTargets(JSON.parse(targetsLeaf) as TestLeaf);
    return 0;
  }
  const childSetup = process.env[CHILD_ENV];
  if (childSetup) {
    const result = await measure(JSON.parse(childSetup) as ChildSetup);
    await new Promise<void>((resolve) => process.send?.(result, () => resolve()));
    return 0;
  }

  const asked = chosenNames(KINDS, "kind");
  if (!asked) return 2;
  const kinds: readonly Kind[] = process.argv.slice(2).some((a) => a !== "--")
    ? asked
    : HOSTILE_KINDS;
  const control = kinds.includes("healthy");

  const dir = mkdtempSync(join(tmpdir(), "secsnap-bench-hostile-"));
  const ca = await createCa("secsnap bench CA");
  const caPath = join(dir, "ca.pem");
  writeFileSync(caPath, ca.certPem);
  const leaf = await issueLeaf(ca, { dnsNames: [PAGE_HOST, RENEGOTIATING_HOST, NEIGHBOUR_HOST] });
  const healthy = await startBenchTarget({
    address: HEALTHY_ADDRESS,
    delayMs: DELAY_MS,
    cert: leaf,
  });
  const hostileTargets = await startHostileTargets(leaf);
  const { chain: chainPort, reneg: renegPort, neighbour: neighbourPort } = hostileTargets.ports;
  const blackHole = await startDroppedSynHost(BLACK_HOLE_ADDRESSES);
  const dns = await startDnsServer({
    ...BENCH_DOMAIN_RECORDS,
    [PAGE_HOST]: { A: [HEALTHY_ADDRESS] },
    [BLACK_HOLE_HOST]: { A: [...BLACK_HOLE_ADDRESSES] },
    [RENEGOTIATING_HOST]: { A: [RENEGOTIATING_ADDRESS] },
    [NEIGHBOUR_HOST]: { A: [NEIGHBOUR_ADDRESS] },
  });
  const hostileUrls: Record<Kind, string> = {
    chain: `http://${CHAIN_ADDRESS}:${chainPort}/`,
    blackhole: `http://${BLACK_HOLE_HOST}:${blackHole.port}/`,
    reneg: `https://${RENEGOTIATING_HOST}:${renegPort}/`,
    healthy: `https://${NEIGHBOUR_HOST}:${neighbourPort}/`,
  };
  const setup: ChildSetup = {
    dnsServer: dns.address,
    healthyUrl: `https://${PAGE_HOST}:${healthy.httpsPort}/`,
    hostileUrls: kinds.map((kind) => hostileUrls[kind]),
    ports: [
      healthy.httpPort,
      healthy.httpsPort,
      chainPort,
      blackHole.port,
      renegPort,
      neighbourPort,
    ],
    httpsProbePort: healthy.httpsPort,
  };

  console.log(
    `secsnap hostile-neighbour benchmark: ${SNAPSHOTS} healthy snapshots (${setup.healthyUrl}, every response delayed ${DELAY_MS} ms) alone and beside ${SNAPSHOTS} hostile ones, deadline ${TIMEOUT_MS} ms`,
  );
  console.log(`hostile: ${setup.hostileUrls.join(", ")}`);
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
  );
  let result: ChildResult;
  try {
    result = await runChild(setup, caPath);
  } finally {
    await Promise.all([healthy.close(), blackHole.close(), dns.close()]);
    hostileTargets.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const d = result.duel;
  const ratioOk = d.ratio <= RATIO_TARGET;
  const rssOk = result.peakRssMiB < RSS_TARGET_MIB;
  const deadlineOk = result.slowestHostileMs <= TIMEOUT_MS + DEADLINE_MARGIN_MS;
  const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
  console.log("");
  console.log("| line | side | min ms | median ms | max ms | median ratio | target | verdict |");
  console.log("|---|---|--:|--:|--:|--:|--:|---|");
  console.log(
    `| healthy beside hostile | beside | ${d.a.time.min.toFixed(1)} | ${d.a.time.median.toFixed(1)} | ${d.a.time.max.toFixed(1)} | **${d.ratio.toFixed(2)}×** (paired ${d.pairedRatio.toFixed(2)}×, ${d.rounds} rounds) | ≤ ${RATIO_TARGET}× | **${verdict(ratioOk)}** |`,
  );
  console.log(
    `| | alone | ${d.b.time.min.toFixed(1)} | ${d.b.time.median.toFixed(1)} | ${d.b.time.max.toFixed(1)} | | | |`,
  );
  console.log("");
  console.log(
    `peak RSS of the measuring process: ${result.peakRssMiB.toFixed(0)} MiB (target < ${RSS_TARGET_MIB}) ${verdict(rssOk)}`,
  );
  console.log(
    `slowest hostile snapshot: ${result.slowestHostileMs.toFixed(0)} ms (deadline ${TIMEOUT_MS} + ${DEADLINE_MARGIN_MS} ms) ${verdict(deadlineOk)}`,
  );
  for (const [outcome, count] of Object.entries(result.hostileOutcomes)) {
    console.log(`  ${count} × ${outcome}`);
  }
  if (control) {
    console.log("\nhealthy neighbours asked for: a control figure, not judged");
    return 0;
  }
  const ok = ratioOk && rssOk && deadlineOk;
  console.log(ok ? "\nhostile benchmark: PASS" : "\nhostile benchmark: FAIL");
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
