/**
 * One scan of the same site by our engine (in-process) and by MDN HTTP Observatory (in-process,
 * its `scan()`), with latency injected: the target delays EVERY response by DELAY_MS, so what
 * the time measures is round trips and how much of them overlap, not loopback CPU. One line:
 * the median ratio of alternating rounds after warm-up, judged against TARGET_RATIO.
 *
 *   tsx bench/observatory.ts
 *
 * Both scanners get the bare name, as Observatory's users give it: ours scans
 * https://<name>/ (its files, the http:// side), Observatory GETs http:// and https://, robots.txt
 * and an OPTIONS for CORS. The site answers on 127.0.21.1:80/443 (Observatory knows no other
 * ports; binding them needs root): `/` is the page with all six headers, http:// redirects to
 * https://, the well-known files are served. Each round uses a fresh engine and a fresh
 * Observatory scan, so neither reuses the previous round's connections.
 *
 * Then the same again through a proxy that adds a round trip (RTT_MS) to every exchange, the
 * TLS handshakes' included (bench/lib/latency-proxy.ts): printed, not judged. It shows how the
 * ratio moves with the latency model: the judged line's model delays answers only.
 *
 * Two processes: this one installs Observatory (once, into a scratch folder, as `npm run
 * compare` does), makes a CA and serves the site and a DNS server; its child runs both scanners
 * with NODE_EXTRA_CA_CERTS pointing at the CA (read by Node only at start-up), so both trust the
 * site as they trust a public one.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSnapshotEngine } from "../src/snapshot/index.js";
import { startDnsServer } from "../test/fixtures/dns-server.js";
import { createCa, issueLeaf } from "../test/fixtures/tls.js";
import {
  OBSERVATORY_VERSION,
  ensureObservatory,
  loadObservatory,
  resolveNamesFor,
} from "./compare/observatory.js";
import { duel } from "./lib/stats.js";
import type { Contender, Duel, PeerCounters } from "./lib/stats.js";
import { startLatencyProxy } from "./lib/latency-proxy.js";
import { freshAgent, plainGet } from "./lib/baseline.js";
import { BENCH_DOMAIN_RECORDS, PAGE_HOST, startBenchTarget } from "./lib/target.js";

/** Away from the test fixtures (127.0.0.x) and from `npm run compare`'s sites (127.0.20.x). */
const TARGET_ADDRESS = "127.0.21.1";
/** The latency proxy's address, in front of TARGET_ADDRESS on the same ports. */
const PROXY_ADDRESS = "127.0.21.2";
/** The proxied measurement's round trip: a site in another region. */
const RTT_MS = 50;
/** The snapshot part's latency (bench/snapshot.ts), so the two parts measure under the same. */
const DELAY_MS = 100;
const TARGET_RATIO = 0.25;
const WARMUP = 2;
const ROUNDS = 9;
const CHILD_ENV = "SECSNAP_BENCH_OBSERVATORY_CHILD";

interface ChildSetup {
  dnsServer: string;
  /** Answers PAGE_HOST with PROXY_ADDRESS. */
  proxiedDnsServer: string;
}

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark sanity check failed: ${what}`);
}

/** Both scanners, and one plain GET beside Observatory, on the site at `address`. */
async function measureAt(
  address: string,
  dnsServer: string,
  names: Map<string, string>,
  scan: Awaited<ReturnType<typeof loadObservatory>>,
  counters?: () => Promise<PeerCounters>,
): Promise<{ result: Duel; floor: Duel }> {
  names.set(PAGE_HOST, address);
  const observatory: Contender = {
    name: "Observatory",
    run: async () => {
      const t0 = performance.now();
      const r = await scan(PAGE_HOST);
      const ms = performance.now() - t0;
      check(typeof r.scan.grade === "string", "Observatory graded the site");
      return ms;
    },
  };
  const result = await duel(
    {
      name: "ours",
      run: async () => {
        const engine = createSnapshotEngine({
          timeoutMs: 10_000,
          maxRedirects: 10,
          allowedPorts: new Set([80, 443]),
          allowCidrs: [`${address}/32`],
          dnsServers: [dnsServer],
        });
        try {
          const t0 = performance.now();
          const r = await engine.snapshot(PAGE_HOST);
          const ms = performance.now() - t0;
          check(
            r.reachable && r.checks.https && r.checks.robots_txt === true && r.dns !== null,
            "our scan saw the site and its domain",
          );
          return ms;
        } finally {
          await engine.close();
        }
      },
    },
    observatory,
    {
      warmup: WARMUP,
      rounds: ROUNDS,
      ...(counters && { peerCounters: counters }),
      onRound: (i, ta, tb) =>
        process.stderr.write(
          `  round ${i + 1}/${ROUNDS}: ours ${ta.toFixed(1)} ms, Observatory ${tb.toFixed(1)} ms\n`,
        ),
    },
  );
  // The floor, in the same run: no scan that fetches the page can take less than one plain GET
  // of it (the resolution, connection and handshake every client makes, and its answer's delay).
  const floor = await duel(
    {
      name: "one plain GET",
      run: async () => {
        const agent = freshAgent([dnsServer]);
        try {
          const t0 = performance.now();
          const r = await plainGet(`https://${PAGE_HOST}/`, agent);
          const ms = performance.now() - t0;
          check(r.status === 200, "the plain GET got the page");
          return ms;
        } finally {
          await agent.close();
        }
      },
    },
    observatory,
    { warmup: 1, rounds: ROUNDS },
  );
  return { result, floor };
}

async function child(setup: ChildSetup): Promise<number> {
  // Read at each lookup: the second measurement points the name at the proxy.
  const names = new Map<string, string>();
  resolveNamesFor(names);
  const scan = await loadObservatory(ensureObservatory());
  const { result, floor } = await measureAt(
    TARGET_ADDRESS,
    setup.dnsServer,
    names,
    scan,
    targetCounters,
  );
  const side = (name: string, s: typeof result.a) =>
    `${name}: median ${s.time.median.toFixed(1)} ms (min ${s.time.min.toFixed(1)}, max ` +
    `${s.time.max.toFixed(1)}), ${s.peer.requests ?? "?"} requests / ` +
    `${s.peer.connections ?? "?"} connections per scan`;
  console.log(side("ours", result.a));
  console.log(side(`Observatory ${OBSERVATORY_VERSION}`, result.b));
  const pass = result.ratio <= TARGET_RATIO;
  console.log(
    `in-process scan ÷ Observatory ${result.ratio.toFixed(2)} (≤ ${TARGET_RATIO}) ` +
      `${pass ? "PASS" : "FAIL"}   [paired ${result.pairedRatio.toFixed(2)}, ${result.rounds} rounds]`,
  );
  console.log(
    `one plain GET of the page ÷ Observatory ${floor.ratio.toFixed(2)} (printed: the floor of ` +
      `any scan of the page) [paired ${floor.pairedRatio.toFixed(2)}, ${floor.rounds} rounds]; ` +
      `ours ÷ one plain GET ≈ ${(result.ratio / floor.ratio).toFixed(2)}`,
  );
  // The same through a proxy that adds RTT_MS to every exchange, the handshakes' included: what
  // a network does and the judged line leaves out (printed, not judged).
  const net = await measureAt(PROXY_ADDRESS, setup.proxiedDnsServer, names, scan);
  console.log(
    `with a ${RTT_MS} ms round trip on every exchange (handshakes too, through a proxy): ` +
      `ours ${net.result.a.time.median.toFixed(0)} ms, Observatory ` +
      `${net.result.b.time.median.toFixed(0)} ms; ours ÷ Observatory ` +
      `${net.result.ratio.toFixed(2)} [paired ${net.result.pairedRatio.toFixed(2)}]; one plain ` +
      `GET ÷ Observatory ${net.floor.ratio.toFixed(2)}; ours ÷ one plain GET ≈ ` +
      `${(net.result.ratio / net.floor.ratio).toFixed(2)} (printed)`,
  );
  return pass ? 0 : 1;
}

/** Asks the parent (the target side) for the target's counters, over the IPC channel. */
function targetCounters(): Promise<PeerCounters> {
  return new Promise((resolve) => {
    process.once("message", (m: { counters: PeerCounters }) => resolve(m.counters));
    process.send?.({ counters: true });
  });
}

async function parent(): Promise<number> {
  ensureObservatory();
  const dir = mkdtempSync(join(tmpdir(), "secsnap-bench-observatory-"));
  const ca = await createCa("secsnap bench CA");
  const leaf = await issueLeaf(ca, { dnsNames: [PAGE_HOST] });
  const caPath = join(dir, "ca.pem");
  writeFileSync(caPath, ca.certPem);
  // The site and the DNS server run here, the two scanners in the child: the site's CPU
  // (TLS handshakes above all) is not the scanners' time.
  const target = await startBenchTarget({
    address: TARGET_ADDRESS,
    delayMs: DELAY_MS,
    cert: leaf,
    ports: { http: 80, https: 443 },
  });
  const dns = await startDnsServer({
    ...BENCH_DOMAIN_RECORDS,
    [PAGE_HOST]: { A: [TARGET_ADDRESS] },
  });
  const proxiedDns = await startDnsServer({
    ...BENCH_DOMAIN_RECORDS,
    [PAGE_HOST]: { A: [PROXY_ADDRESS] },
  });
  const proxies = await Promise.all(
    [80, 443].map((port) =>
      startLatencyProxy({
        host: PROXY_ADDRESS,
        port,
        upstreamHost: TARGET_ADDRESS,
        upstreamPort: port,
        rttMs: RTT_MS,
      }),
    ),
  );
  try {
    console.log(
      `in-process scan vs MDN HTTP Observatory ${OBSERVATORY_VERSION}: bare name ${PAGE_HOST} ` +
        `on ${TARGET_ADDRESS}:80/443, every response delayed ${DELAY_MS} ms; ratio = ours / ` +
        `Observatory, median of ${ROUNDS} alternating rounds after ${WARMUP} warm-up`,
    );
    const setup: ChildSetup = { dnsServer: dns.address, proxiedDnsServer: proxiedDns.address };
    const proc = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: { ...process.env, [CHILD_ENV]: JSON.stringify(setup), NODE_EXTRA_CA_CERTS: caPath },
    });
    proc.on("message", () => proc.send({ counters: { ...target.counts } }));
    return await new Promise<number>((resolve) => {
      proc.on("error", (error) => {
        console.error(`bench observatory: ${error.message}`);
        resolve(1);
      });
      proc.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    });
  } finally {
    await target.close();
    await Promise.all([dns.close(), proxiedDns.close(), ...proxies.map((p) => p.close())]);
    rmSync(dir, { recursive: true, force: true });
  }
}

const childSetup = process.env[CHILD_ENV];
(childSetup ? child(JSON.parse(childSetup) as ChildSetup) : parent()).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
