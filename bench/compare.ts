/**
 * `npm run compare`: our grade side by side with MDN HTTP Observatory's on the same local sites
 * (bench/compare/scenarios.ts). A report, not a test: it exits 0 unless something breaks, or,
 * with `--check`, 1 when a scenario both scanners judge alike differs by more than one step.
 *
 *   npm run compare [-- --check] [scenario ids…]
 *
 * Two processes: this one installs Observatory (once, into a scratch folder) and makes a test
 * CA, then runs itself again with NODE_EXTRA_CA_CERTS pointing at that CA (Node reads it only
 * at start-up), so both scanners trust the sites as they trust a public CA. The child serves
 * the sites on 127.0.20.<n>:80/443 (root needed), a DNS server for our engine, and runs both
 * scanners in-process, one site after the other.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { GRADES, SnapshotError, createSnapshotEngine } from "../src/snapshot/index.js";
import type { SnapshotEngine, SnapshotResult } from "../src/snapshot/index.js";
import { startDnsServer } from "../test/fixtures/dns-server.js";
import type { HostRecords } from "../test/fixtures/dns-server.js";
import { chosenNames } from "./lib/args.js";
import { TEST_CA_CERT_ENV, TEST_CA_KEY_ENV, createCa, loadTestCa } from "../test/fixtures/tls.js";
import {
  OBSERVATORY_VERSION,
  ensureObservatory,
  loadObservatory,
  resolveNamesFor,
} from "./compare/observatory.js";
import type { ObservatoryScan } from "./compare/observatory.js";
import { SCENARIOS } from "./compare/scenarios.js";
import type { Scenario } from "./compare/scenarios.js";
import { SITE_CIDR, startSites } from "./compare/sites.js";
import type { Site } from "./compare/sites.js";

const CHILD_ENV = "SECSNAP_COMPARE_CHILD";
const CHECK_FLAG = "--check";

interface Side {
  grade: string;
  score: number;
  ms: number;
  /** What took points off, for the details table. */
  lost: string[];
  /** Set when the scan was of something other than the bare name (or failed). */
  remark?: string;
}

interface Row {
  site: Site;
  ours: Side | string;
  theirs: Side | string;
}

/** Letter steps: the position on the scale both scanners share (A+ … D- F, 13 letters). */
function stepOf(grade: string): number | undefined {
  const i = (GRADES as readonly string[]).indexOf(grade);
  return i < 0 ? undefined : i;
}

/** Positive: our grade is that many steps worse (stricter) than Observatory's. */
function stepsApart(row: Row): number | undefined {
  if (typeof row.ours === "string" || typeof row.theirs === "string") return undefined;
  const ours = stepOf(row.ours.grade);
  const theirs = stepOf(row.theirs.grade);
  return ours === undefined || theirs === undefined ? undefined : ours - theirs;
}

// ---------------------------------------------------------------- the two scanners

function scoredFindings(r: SnapshotResult): string[] {
  return r.findings.filter((f) => f.severity !== "info").map((f) => `${f.id} (${f.severity})`);
}

/**
 * Our engine on the bare name, as Observatory is given it. A bare name whose https:// is refused
 * falls back to http:// (docs/contract.md §3.2 rule 2); one that is still a SnapshotError is then
 * scanned as http://<name>/ and the row says so.
 */
async function scanOurs(engine: SnapshotEngine, name: string): Promise<Side | string> {
  const t0 = performance.now();
  let report: SnapshotResult;
  let remark: string | undefined;
  try {
    report = await engine.snapshot(name);
  } catch (error) {
    if (!(error instanceof SnapshotError)) throw error;
    remark = `bare name: ${error.errorType}; scanned http://${name}/`;
    try {
      report = await engine.snapshot(`http://${name}/`);
    } catch (again) {
      if (!(again instanceof SnapshotError)) throw again;
      return `error: ${again.errorType}`;
    }
  }
  const ms = performance.now() - t0;
  return {
    grade: report.grade,
    score: report.score,
    ms,
    lost: scoredFindings(report),
    ...(remark ? { remark } : {}),
  };
}

async function scanTheirs(
  scan: (host: string) => Promise<ObservatoryScan>,
  name: string,
): Promise<Side | string> {
  const t0 = performance.now();
  try {
    const result = await scan(name);
    const ms = performance.now() - t0;
    const lost = Object.entries(result.tests)
      .filter(([, t]) => t.scoreModifier < 0)
      .map(([, t]) => `${t.result} (${t.scoreModifier})`);
    return { grade: result.scan.grade, score: result.scan.score, ms, lost };
  } catch (error) {
    return `error: ${error instanceof Error ? error.message : String(error)}`;
  }
}

// ---------------------------------------------------------------- the report

const cell = (side: Side | string): string =>
  typeof side === "string" ? side : `${side.grade} (${side.score})`;

function printTables(rows: readonly Row[]): void {
  console.log(
    "\n| scenario | what the site does | overlap | ours | Observatory | steps | >1 |\n" +
      "| --- | --- | --- | --- | --- | --- | --- |",
  );
  for (const row of rows) {
    const s = row.site.scenario;
    const d = stepsApart(row);
    const steps = d === undefined ? "n/a" : d > 0 ? `+${d}` : String(d);
    const flag = d !== undefined && Math.abs(d) > 1 ? "✗" : "";
    const overlap = s.overlap === "same" ? "same" : "we judge more";
    console.log(
      `| ${s.id} | ${s.what} | ${overlap} | ${cell(row.ours)} | ${cell(row.theirs)} | ${steps} | ${flag} |`,
    );
  }
  console.log(
    "\n| scenario | our scored findings | Observatory's deductions | why we judge more |\n" +
      "| --- | --- | --- | --- |",
  );
  for (const row of rows) {
    const lost = (side: Side | string) =>
      typeof side === "string"
        ? side
        : [side.remark, ...side.lost].filter(Boolean).join(", ") || "none";
    const s = row.site.scenario;
    console.log(`| ${s.id} | ${lost(row.ours)} | ${lost(row.theirs)} | ${s.why ?? ""} |`);
  }
}

/** Prints the summary; returns how many overlapping scenarios differ by more than one step. */
function printSummary(rows: readonly Row[]): number {
  const diffs = rows.map((r) => ({ row: r, d: stepsApart(r) }));
  const known = diffs.filter((x): x is { row: Row; d: number } => x.d !== undefined);
  const far = known.filter((x) => Math.abs(x.d) > 1);
  const farSame = far.filter((x) => x.row.site.scenario.overlap === "same");
  const maxDiff = Math.max(0, ...known.map((x) => Math.abs(x.d)));
  const lenientWhereMore = known.filter((x) => x.row.site.scenario.overlap === "more" && x.d < 0);
  const total = (pick: (r: Row) => Side | string) =>
    rows.reduce((sum, r) => {
      const side = pick(r);
      return sum + (typeof side === "string" ? 0 : side.ms);
    }, 0);
  console.log(
    `\nsummary: ${rows.length} scenarios, ${known.length} graded by both; max difference ` +
      `${maxDiff} step(s); ${far.length} differ by more than one step, ${farSame.length} of ` +
      `them where both judge the same thing${farSame.length ? ` (${farSame.map((x) => x.row.site.scenario.id).join(", ")})` : ""}; ` +
      `${lenientWhereMore.length} where we judge more but grade more leniently` +
      `${lenientWhereMore.length ? ` (${lenientWhereMore.map((x) => x.row.site.scenario.id).join(", ")})` : ""}.`,
  );
  console.log(
    `time: ours ${Math.round(total((r) => r.ours))} ms, Observatory ${OBSERVATORY_VERSION} ` +
      `${Math.round(total((r) => r.theirs))} ms (sequential scans over loopback).`,
  );
  const unknownErrors = rows
    .filter((r) => stepsApart(r) === undefined)
    .map((r) => r.site.scenario.id);
  if (unknownErrors.length)
    console.log(`not compared (a scan failed): ${unknownErrors.join(", ")}`);
  return farSame.length;
}

// ---------------------------------------------------------------- processes

/** The scenarios named on the command line (all when none); undefined after naming unknown ones. */
function chosenScenarios(args: readonly string[]): Scenario[] | undefined {
  const ids = SCENARIOS.map((s) => s.id);
  const chosen = chosenNames(
    ids,
    "scenario",
    args.filter((a) => a !== CHECK_FLAG),
  );
  return chosen && SCENARIOS.filter((s) => chosen.includes(s.id));
}

async function child(args: readonly string[]): Promise<number> {
  const scenarios = chosenScenarios(args);
  if (!scenarios) return 2;
  const ca = await loadTestCa();
  const { sites, close: closeSites } = await startSites(ca, scenarios);
  const names = new Map<string, string>();
  for (const site of sites) {
    names.set(site.name, site.address);
    names.set(`www.${site.name}`, site.address);
  }
  const records: HostRecords = Object.fromEntries(
    [...names].map(([name, address]) => [name, { A: [address] }]),
  );
  const dns = await startDnsServer(records);
  resolveNamesFor(names);
  const scan = await loadObservatory(ensureObservatory());
  const engine = createSnapshotEngine({
    timeoutMs: 10_000,
    maxRedirects: 10,
    allowedPorts: new Set([80, 443]),
    allowCidrs: [SITE_CIDR],
    dnsServers: [dns.address],
  });
  const rows: Row[] = [];
  try {
    for (const site of sites) {
      const ours = await scanOurs(engine, site.name);
      const theirs = await scanTheirs(scan, site.name);
      rows.push({ site, ours, theirs });
      process.stderr.write(`  ${site.scenario.id}: ${cell(ours)} / ${cell(theirs)}\n`);
    }
  } finally {
    await engine.close();
    await dns.close();
    await closeSites();
  }
  printTables(rows);
  const farSame = printSummary(rows);
  return args.includes(CHECK_FLAG) && farSame > 0 ? 1 : 0;
}

async function parent(args: readonly string[]): Promise<number> {
  if (!chosenScenarios(args)) return 2;
  ensureObservatory();
  const dir = mkdtempSync(join(tmpdir(), "secsnap-compare-ca-"));
  try {
    const ca = await createCa("secsnap compare CA");
    const certPath = join(dir, "ca.pem");
    const keyPath = join(dir, "ca.key");
    writeFileSync(certPath, ca.certPem);
    writeFileSync(keyPath, ca.keyPem);
    const proc = spawn(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), ...args],
      {
        stdio: "inherit",
        env: {
          ...process.env,
          [CHILD_ENV]: "1",
          NODE_EXTRA_CA_CERTS: certPath,
          [TEST_CA_CERT_ENV]: certPath,
          [TEST_CA_KEY_ENV]: keyPath,
        },
      },
    );
    return await new Promise<number>((resolve) => {
      proc.on("error", (error) => {
        console.error(`compare: ${error.message}`);
        resolve(1);
      });
      proc.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
const run = process.env[CHILD_ENV] ? child : parent;
run(args).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
