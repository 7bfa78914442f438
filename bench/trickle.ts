/**
 * The crowd-of-slow-targets benchmark: 2,000 snapshots asked for at once, every one of a target
 * that trickles its answer — half send their headers and then one body byte every 500 ms, half
 * send the status line and headers themselves one byte every 500 ms.
 *
 * Judged, on the service: 2,000 concurrent paid `POST /v1/snapshot` to one `secsnap serve`
 * (the compiled build, production mode on the devnet, its default SNAPSHOT_MAX_CONCURRENCY).
 * The service's peak RSS stays < 300 MiB; every request ends — a report, a SnapshotError or the
 * back-pressure 503 — by the deadline plus a margin; and money moves only for reports (payTo
 * grows by exactly one price per 200).
 *
 * Judged, on the engine alone: the same 2,000 started in one tick in a measuring child with no
 * admission in front (what one instance would hold if nothing turned the crowd away): peak RSS
 * < 300 MiB and every snapshot ended by the deadline plus the margin.
 *
 *   tsx bench/trickle.ts [snapshots]          (default 2000)
 *
 * This process serves the trickling targets (raw TCP, so the bytes are exactly what is said)
 * and the devnet; the service and the measuring child are processes of their own.
 */
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createSnapshotEngine } from "../src/snapshot/index.js";
import { runMeasuringChild } from "./lib/child.js";
import type { ServiceResult } from "./lib/crowd.js";
import { peakRssKib } from "./lib/stats.js";

const SNAPSHOTS = 2_000;
const TIMEOUT_MS = 5_000;
/** Room past the deadline for 2,000 snapshots' answers on two shared cores. */
const DEADLINE_MARGIN_MS = 3_000;
const RSS_TARGET_MIB = 300;
const TRICKLE_MS = 500;
const BODY_TRICKLE_ADDRESS = "127.0.0.90";
const HEAD_TRICKLE_ADDRESS = "127.0.0.91";
const CLOSED_ADDRESS = "127.0.0.92";
/** Every bench address, and never 127.0.0.1. */
const ALLOW_CIDRS = ["127.0.0.64/26"];
const TIME_LIMIT_MS = 120_000;
const CHILD_ENV = "SECSNAP_BENCH_TRICKLE_CHILD";

interface ChildSetup {
  urls: string[];
  ports: number[];
  httpsProbePort: number;
  snapshots: number;
}

interface ChildResult {
  peakRssMiB: number;
  /** RSS before the snapshots started (the engine and node themselves). */
  startRssMiB: number;
  slowestMs: number;
  medianMs: number;
  ended: number;
  outcomes: Record<string, number>;
}

// ---------------------------------------------------------------- measuring child

async function measure(setup: ChildSetup): Promise<ChildResult> {
  const engine = createSnapshotEngine({
    timeoutMs: TIMEOUT_MS,
    maxRedirects: 10,
    allowedPorts: new Set(setup.ports),
    allowCidrs: ALLOW_CIDRS,
    dnsServers: [],
    httpsProbePort: setup.httpsProbePort,
  });
  const startRssMiB = process.memoryUsage().rss / 1024 / 1024;
  const outcomes: Record<string, number> = {};
  const times: number[] = [];
  try {
    await Promise.all(
      Array.from({ length: setup.snapshots }, async (_, i) => {
        const url = setup.urls[i % setup.urls.length] as string;
        const t0 = performance.now();
        let outcome: string;
        try {
          const r = await engine.snapshot(url);
          outcome = `report (reachable: ${r.reachable})`;
        } catch (err) {
          outcome = `SnapshotError ${(err as { errorType?: string }).errorType ?? String(err)}`;
        }
        times.push(performance.now() - t0);
        const key = `${new URL(url).hostname}: ${outcome}`;
        outcomes[key] = (outcomes[key] ?? 0) + 1;
      }),
    );
  } finally {
    await engine.close();
  }
  times.sort((x, y) => x - y);
  return {
    peakRssMiB: peakRssKib() / 1024,
    startRssMiB,
    slowestMs: times[times.length - 1] ?? 0,
    medianMs: times[Math.floor(times.length / 2)] ?? 0,
    ended: times.length,
    outcomes,
  };
}

// ---------------------------------------------------------------- trickling targets (parent)

/**
 * A raw HTTP server that answers every request with `answer`, `first` bytes at once and then
 * one byte every TRICKLE_MS (one timer for all connections).
 */
async function startTrickleServer(
  host: string,
  answer: string,
  first: number,
): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  const bytes = Buffer.from(answer);
  const sockets = new Map<Socket, number>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.on("error", () => undefined);
    let request = "";
    socket.on("data", (d: Buffer) => {
      if (sockets.has(socket)) return;
      request += d.toString("latin1");
      if (!request.includes("\r\n\r\n")) return;
      socket.write(bytes.subarray(0, first));
      sockets.set(socket, first);
    });
    socket.on("close", () => sockets.delete(socket));
  });
  const timer = setInterval(() => {
    for (const [socket, sent] of sockets) {
      if (sent >= bytes.length) continue; // Content-Length never reached: it hangs there
      socket.write(bytes.subarray(sent, sent + 1));
      sockets.set(socket, sent + 1);
    }
  }, TRICKLE_MS);
  server.listen({ port: 0, host, backlog: 4096 });
  await once(server, "listening");
  return {
    port: (server.address() as { port: number }).port,
    connections: () => connections,
    close: async () => {
      clearInterval(timer);
      for (const socket of sockets.keys()) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

async function closedPort(host: string): Promise<number> {
  const server = createServer();
  server.listen(0, host);
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, "close");
  return port;
}

function runChild(setup: ChildSetup): Promise<ChildResult> {
  return runMeasuringChild<ChildResult>({
    script: fileURLToPath(import.meta.url),
    env: { [CHILD_ENV]: JSON.stringify(setup) },
    timeLimitMs: TIME_LIMIT_MS,
    bundled: true,
  });
}

async function main(): Promise<number> {
  const childSetup = process.env[CHILD_ENV];
  if (childSetup) {
    const result = await measure(JSON.parse(childSetup) as ChildSetup);
    await new Promise<void>((resolve) => process.send?.(result, () => resolve()));
    return 0;
  }
  const arg = process.argv.slice(2).find((a) => a !== "--");
  const snapshots = arg === undefined ? SNAPSHOTS : Number(arg);
  if (!Number.isInteger(snapshots) || snapshots < 1) {
    console.error(`usage: tsx bench/trickle.ts [snapshots]  (got ${JSON.stringify(arg)})`);
    return 2;
  }

  const page = "<!doctype html><title>slow</title>" + "x".repeat(4_000);
  const head = `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: ${page.length}\r\n\r\n`;
  // Headers at once, then the body byte by byte.
  const bodyTrickle = await startTrickleServer(BODY_TRICKLE_ADDRESS, head + page, head.length);
  // The status line and headers byte by byte (its first byte at once).
  const headTrickle = await startTrickleServer(HEAD_TRICKLE_ADDRESS, head + page, 1);
  const probePort = await closedPort(CLOSED_ADDRESS);
  const setup: ChildSetup = {
    urls: [
      `http://${BODY_TRICKLE_ADDRESS}:${bodyTrickle.port}/`,
      `http://${HEAD_TRICKLE_ADDRESS}:${headTrickle.port}/`,
    ],
    ports: [bodyTrickle.port, headTrickle.port, probePort],
    httpsProbePort: probePort,
    snapshots,
  };
  console.log(
    `secsnap trickle benchmark: ${snapshots} concurrent snapshots of targets answering one byte every ${TRICKLE_MS} ms (half after their headers, half from the status line on), deadline ${TIMEOUT_MS} ms`,
  );
  console.log(
    `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
  );
  let service: ServiceResult;
  let engine: ChildResult;
  try {
    // Imported here, not above: the measuring child is this file bundled, and must not load
    // the devnet, viem or the build script (their memory is not the engine's).
    const { measureService } = await import("./lib/crowd.js");
    service = await measureService({
      urls: setup.urls,
      ports: setup.ports,
      count: snapshots,
      timeoutMs: TIMEOUT_MS,
      allowCidrs: ALLOW_CIDRS,
    });
    engine = await runChild(setup);
  } finally {
    await Promise.all([bodyTrickle.close(), headTrickle.close()]);
  }

  const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
  const deadlineLine = (r: { ended: number; medianMs: number; slowestMs: number }, what: string) =>
    `${what} ended: ${r.ended} of ${snapshots}; median ${r.medianMs.toFixed(0)} ms, slowest ${r.slowestMs.toFixed(0)} ms (deadline ${TIMEOUT_MS} + ${DEADLINE_MARGIN_MS} ms)`;
  const inTime = (r: { ended: number; slowestMs: number }) =>
    r.ended === snapshots && r.slowestMs <= TIMEOUT_MS + DEADLINE_MARGIN_MS;

  const serviceRssOk = service.peakRssMiB < RSS_TARGET_MIB;
  const clientErrors = Object.keys(service.outcomes).some((o) => o.startsWith("client error"));
  const paidForReportsOnly = service.transfers === BigInt(service.reports);
  console.log("");
  console.log(
    `the service (judged), SNAPSHOT_MAX_CONCURRENCY ${service.maxInFlight}, ${snapshots} concurrent paid requests:`,
  );
  console.log(
    `  peak RSS of the service: ${service.peakRssMiB.toFixed(0)} MiB (${service.startRssMiB.toFixed(0)} MiB before the crowd; target < ${RSS_TARGET_MIB}) ${verdict(serviceRssOk)}`,
  );
  console.log(
    `  ${deadlineLine(service, "requests")} ${verdict(inTime(service) && !clientErrors)}`,
  );
  for (const [outcome, count] of Object.entries(service.outcomes)) {
    const slowest = service.slowestByOutcome[outcome] ?? 0;
    console.log(`    ${count} × ${outcome} (slowest ${slowest.toFixed(0)} ms)`);
  }
  console.log(
    `  transfers: ${service.transfers} for ${service.reports} reports (nothing else charged) ${verdict(paidForReportsOnly)}`,
  );
  const { verify, snapshot, settle } = service.phases;
  const phase = (p: { mean: number; count: number }) => `${p.mean.toFixed(2)} s × ${p.count}`;
  console.log(
    `  where an admitted request's time goes (the service's metrics, means): verify at the devnet facilitator ${phase(verify)}, snapshot ${phase(snapshot)}, settle ${phase(settle)}`,
  );

  console.log("");
  const engineRssOk = engine.peakRssMiB < RSS_TARGET_MIB;
  console.log(
    `the engine alone (judged), ${snapshots} snapshots started in one tick, nothing in front:`,
  );
  console.log(
    `  peak RSS of the measuring process: ${engine.peakRssMiB.toFixed(0)} MiB (${engine.startRssMiB.toFixed(0)} MiB before the snapshots; target < ${RSS_TARGET_MIB}) ${verdict(engineRssOk)}`,
  );
  console.log(`  ${deadlineLine(engine, "snapshots")} ${verdict(inTime(engine))}`);
  for (const [outcome, count] of Object.entries(engine.outcomes)) {
    console.log(`    ${count} × ${outcome}`);
  }

  const ok =
    serviceRssOk &&
    inTime(service) &&
    !clientErrors &&
    paidForReportsOnly &&
    engineRssOk &&
    inTime(engine);
  console.log(ok ? "\ntrickle benchmark: PASS" : "\ntrickle benchmark: FAIL");
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
