/**
 * The README's "Check a site on your machine", run as written: its code blocks are read from
 * README.md (so the two cannot drift apart) and each line runs in bash from the checkout, as a
 * newcomer types it: the one-line site, `scan --local`, then `serve --allow-local` on the devnet
 * and `pay` through it. Only the ports change (free ones, so the test can run beside others):
 * 8000 for the site, the service's own URL for 8080, and the devnet's ports.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { build, staleReason } from "../../scripts/build.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { accepting, outputOf } from "../fixtures/child-output.js";
import { closedPort } from "../fixtures/targets.js";
import { ROOT, cleanEnv, stopProcessGroups, waitForLine, type CliRun } from "./run.js";

const LOCAL_MODE = /^secsnap: LOCAL MODE: private and loopback targets on any port are allowed/;

/** The shell lines of each ```sh block of one `## title` section of README.md. */
async function sectionBlocks(title: string): Promise<string[][]> {
  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, `README.md has a "## ${title}" section`).toBeGreaterThan(-1);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    (m[1] as string).split("\n").filter((line) => line.trim() !== ""),
  );
}

const started: ChildProcess[] = [];
let scratch: string;

beforeAll(async () => {
  if (staleReason() !== undefined) build(); // ./bin/secsnap.js would build it first anyway
  scratch = await mkdtemp(join(tmpdir(), "secsnap-readme-"));
}, 120_000);

afterAll(async () => {
  await stopProcessGroups(started);
  await rm(scratch, { recursive: true, force: true });
});

/** A line that keeps running (a site, the service): its own process group, killed at the end. */
function startLine(line: string, env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn("bash", ["-c", line], { cwd: ROOT, env, detached: true });
  started.push(child);
  return child;
}

async function runLine(line: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  const child = spawn("bash", ["-c", line], { cwd: ROOT, env });
  child.stdin.end();
  return outputOf(child);
}

it(
  "runs as written: a local site, scan --local, serve --allow-local and pay on the devnet",
  { timeout: 240_000 },
  async () => {
    const blocks = await sectionBlocks("Check a site on your machine");
    // The shape the steps below rely on; a README edit that changes it fails here first.
    expect(blocks).toHaveLength(2);
    const [[site, scan] = [], [serve, pay] = []] = blocks;
    expect(site).toMatch(/ &$/);
    expect(scan).toMatch(/^\.\/bin\/secsnap\.js scan --local http:\/\/127\.0\.0\.1:8000\/$/);
    expect(serve).toBe("./bin/secsnap.js serve --allow-local");
    expect(pay).toMatch(
      /^\.\/bin\/secsnap\.js pay http:\/\/127\.0\.0\.1:8000\/ --api http:\/\/127\.0\.0\.1:8080$/,
    );

    const sitePort = await closedPort("127.0.0.1");
    const onSitePort = (line: string) => line.replaceAll("8000", String(sitePort));
    const siteUrl = `http://127.0.0.1:${sitePort}/`;

    startLine(onSitePort((site as string).replace(/&$/, "")), cleanEnv());
    await accepting(sitePort);

    const scanned = await runLine(onSitePort(scan as string), cleanEnv());
    expect(scanned.stderr.split("\n")[0]).toMatch(LOCAL_MODE);
    expect(scanned.code, scanned.stderr).toBe(0);
    const report = SnapshotResultSchema.parse(JSON.parse(scanned.stdout));
    expect(report).toMatchObject({ final_url: siteUrl, reachable: true, final_status_code: 200 });
    // A loopback site in local mode: its missing HTTPS is not judged, its grade is its headers'
    // (none: D at best), not F.
    expect(report.findings.map((f) => f.id)).not.toContain("https-failed");
    expect(report.grade).toBe("D");

    // The service on free ports with its own data directory; everything else as typed.
    const service = startLine(
      serve as string,
      cleanEnv({
        PORT: "0",
        HOST: "127.0.0.1",
        DATA_DIR: join(scratch, "data"),
        SHUTDOWN_GRACE_MS: "0",
        DEVNET_RPC_PORT: String(await closedPort("127.0.0.1")),
        DEVNET_FACILITATOR_PORT: String(await closedPort("127.0.0.1")),
      }),
    );
    const loud = waitForLine(service.stderr as NodeJS.ReadableStream, /\S/);
    const first = await waitForLine(service.stdout as NodeJS.ReadableStream, /listening on/);
    expect(await loud).toMatch(LOCAL_MODE);
    expect(await loud).toContain("never expose this service");
    const base = /listening on (http:\/\/\S+)/.exec(first)?.[1] as string;

    const payEnv = cleanEnv();
    delete payEnv.SECSNAP_PRIVATE_KEY; // the devnet's funded test account, as a newcomer has
    const paid = await runLine(
      onSitePort(pay as string).replace("http://127.0.0.1:8080", base),
      payEnv,
    );
    expect(paid.code, paid.stderr + paid.stdout).toBe(0);
    expect(SnapshotResultSchema.parse(JSON.parse(paid.stdout))).toMatchObject({
      final_url: siteUrl,
      reachable: true,
      final_status_code: 200,
    });
    expect(paid.stderr).toMatch(/settlement transaction: 0x[0-9a-f]{64}/);
  },
);
