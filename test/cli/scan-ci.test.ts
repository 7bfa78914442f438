/**
 * `secsnap scan` for CI (docs/contract.md §8.5): several URLs a few at a time with a progress
 * line each on a terminal, the --fail-under and --fail-on gates, and the markdown, SARIF and
 * html formats — through the CLI, against real local sites by name (a real DNS server) and by
 * address. The SARIF is checked by the SARIF Multitool; the html page in Chromium is
 * scan-html.browser.test.ts.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli as runCliInProcess } from "../../src/cli/run.js";
import {
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "../../src/http/documents/report-schemas.js";
import { startTarget } from "../fixtures/held-target.js";
import { respond, startHttpTarget, type TargetServer } from "../fixtures/targets.js";
import { validateSarif } from "../fixtures/sarif.js";
import { startFlawedSite, type FlawedSite } from "./flawed-site.js";
import { runCli } from "./run.js";

let flawed: FlawedSite;
let bare: TargetServer;
let scratch: string;
/** Local mode, names answered by the test DNS server. */
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  flawed = await startFlawedSite();
  bare = await startHttpTarget({
    host: "127.0.0.1",
    routes: { "/": respond.html("<!doctype html><p>bare</p>") },
  });
  scratch = await mkdtemp(join(tmpdir(), "secsnap-scan-ci-"));
  env = flawed.env;
});

afterAll(async () => {
  await Promise.all([flawed.close(), bare.close()]);
  await rm(scratch, { recursive: true, force: true });
});

const flawedByName = () => flawed.byName();
const flawedByAddress = () => flawed.byAddress();

describe("several URLs", () => {
  it("scans them a few at a time, in order, with a progress line per URL on a terminal", async () => {
    const first = await startTarget();
    const second = await startTarget();
    try {
      const firstArrived = first.hold();
      const secondArrived = second.hold();
      let stdout = "";
      let stderr = "";
      const scan = runCliInProcess(
        ["scan", "--local", "--concurrency", "2", first.url, second.url, bare.url("/"), "ftp://x"],
        {
          env,
          stdout: { isTTY: false, write: (t: string) => (stdout += t) },
          stderr: { isTTY: true, write: (t: string) => (stderr += t) },
        },
      );
      await Promise.all([firstArrived, secondArrived]);
      // Both snapshots at once are held: the third URL waits for a free place.
      expect(bare.requests).toHaveLength(0);
      first.release();
      second.release();
      expect(await scan).toBe(2); // ftp://x is refused, the others are reported
      expect(bare.requests.length).toBeGreaterThan(0);

      const out = JSON.parse(stdout) as unknown[];
      expect(out).toHaveLength(4);
      const reports = out.slice(0, 3).map((r) => SnapshotResultSchema.parse(r));
      expect(reports.map((r) => r.requested_url)).toEqual([first.url, second.url, bare.url("/")]);
      expect(SnapshotErrorBodySchema.parse(out[3])).toMatchObject({
        requested_url: "ftp://x",
        error_type: "invalid_url",
      });
      const progress = stderr.split("\n").filter((l) => l.startsWith("["));
      expect(progress).toHaveLength(4);
      for (const [i, url] of [first.url, second.url, bare.url("/")].entries()) {
        const report = reports[i]!;
        expect(progress).toContainEqual(
          expect.stringMatching(
            new RegExp(
              `^\\[\\d/4\\] ${url.replaceAll(".", "\\.")}: grade ${report.grade.replace("+", "\\+")} \\(score ${report.score}/100\\)$`,
            ),
          ),
        );
      }
      expect(progress).toContainEqual(
        expect.stringMatching(/^\[\d\/4\] ftp:\/\/x: not scanned \(invalid_url\)$/),
      );
    } finally {
      first.release();
      second.release();
      await Promise.all([first.close(), second.close()]);
    }
  });

  it("prints no progress lines when stderr is no terminal", async () => {
    const { code, stderr } = await runCli(["scan", "--local", bare.url("/"), flawedByName()], env);
    expect(code).toBe(0);
    expect(stderr.split("\n").filter((l) => l.startsWith("["))).toEqual([]);
  });
});

describe("gates", () => {
  it("--fail-under GRADE exits 3 when a report grades below it, naming it on stderr", async () => {
    const json = await runCli(["scan", "--local", bare.url("/"), flawedByAddress()], env);
    const [bareReport, flawedReport] = (JSON.parse(json.stdout) as unknown[]).map((r) =>
      SnapshotResultSchema.parse(r),
    );
    // The bare site has no security header: D at best; the other one does better.
    expect(bareReport!.grade).toBe("D");
    expect(["D", "F"]).not.toContain(flawedReport!.grade);

    const passing = await runCli(["scan", "--local", bare.url("/"), "--fail-under", "D"], env);
    expect(passing.code).toBe(0);
    const failing = await runCli(
      ["scan", "--local", flawedByAddress(), bare.url("/"), "--fail-under", "C"],
      env,
    );
    expect(failing.code).toBe(3);
    expect(failing.stderr).toContain(`secsnap: ${bare.url("/")} grades D, below C (--fail-under)`);
    expect(failing.stderr).not.toContain(`${flawedByAddress()} grades`);
    // The reports are printed all the same.
    expect(JSON.parse(failing.stdout)).toHaveLength(2);
  });

  it("--fail-on SEVERITY exits 3 when a finding is at least that severe", async () => {
    const json = await runCli(["scan", "--local", flawedByAddress()], env);
    const report = SnapshotResultSchema.parse(JSON.parse(json.stdout));
    const worst = report.findings[0]!.severity;
    expect(worst).toBe("medium");
    const high = await runCli(["scan", "--local", flawedByAddress(), "--fail-on", "high"], env);
    expect(high.code).toBe(0);
    const medium = await runCli(["scan", "--local", flawedByAddress(), "--fail-on", "medium"], env);
    expect(medium.code).toBe(3);
    expect(medium.stderr).toMatch(
      /has \d+ finding\(s\) at least medium: .*x-frame-options-invalid/,
    );
  });

  it.each([
    [["--fail-under", "Z"], /--fail-under must be one of A\+, A, A-/],
    [["--fail-on", "severe"], /--fail-on must be one of high, medium, low, info/],
    [["--format", "xml"], /--format must be one of/],
    [["--concurrency", "0"], /--concurrency must be/],
    [["--json", "--format", "sarif"], /--json and --format name two formats/],
    [["--output", "/nonexistent/dir/scan.sarif"], /--output: cannot write in \/nonexistent\/dir/],
  ])("refuses %j in one line, exit 1", async (extra, message) => {
    const { code, stderr } = await runCli(["scan", "--local", bare.url("/"), ...extra], env);
    expect(code).toBe(1);
    expect(stderr).toMatch(message);
  });
});

describe("formats", () => {
  it("sarif: SARIF 2.1.0 the Multitool validates, a rule per finding id, a result per finding", async () => {
    const file = join(scratch, "scan.sarif");
    const { code } = await runCli(
      ["scan", "--local", flawedByName(), bare.url("/"), "--format", "sarif", "--output", file],
      env,
    );
    expect(code).toBe(0);
    const stdout = await validateSarif(file);
    expect(stdout).toContain("Analysis completed successfully");
    expect(stdout).not.toMatch(/: error /);

    const reports = (
      JSON.parse(
        (await runCli(["scan", "--local", flawedByName(), bare.url("/")], env)).stdout,
      ) as unknown[]
    ).map((r) => SnapshotResultSchema.parse(r));
    const sarif = JSON.parse(await readFile(file, "utf8")) as {
      version: string;
      runs: {
        tool: { driver: { name: string; rules: { id: string }[] } };
        results: {
          ruleId: string;
          level: string;
          locations: { physicalLocation: { artifactLocation: { uri: string } } }[];
        }[];
      }[];
    };
    expect(sarif.version).toBe("2.1.0");
    const [run] = sarif.runs;
    expect(run!.tool.driver.name).toBe("secsnap");
    const ids = reports.flatMap((r) => r.findings.map((f) => f.id));
    expect(run!.tool.driver.rules.map((r) => r.id).sort()).toEqual([...new Set(ids)].sort());
    const expected = reports.flatMap((r) =>
      r.findings.map((f) => ({
        ruleId: f.id,
        level: { high: "error", medium: "warning", low: "note", info: "note" }[f.severity],
        uri: r.final_url,
      })),
    );
    expect(
      run!.results.map((r) => ({
        ruleId: r.ruleId,
        level: r.level,
        uri: r.locations[0]!.physicalLocation.artifactLocation.uri,
      })),
    ).toEqual(expected);
  });

  it("markdown: a summary table and each site's findings with their cost, fit for a PR comment", async () => {
    const { code, stdout } = await runCli(
      ["scan", "--local", flawedByName(), bare.url("/"), "--format", "markdown"],
      env,
    );
    expect(code).toBe(0);
    expect(stdout.length).toBeLessThan(65_536);
    expect(stdout).toContain("| Site | Grade | Score | High | Medium | Low | Info |");
    expect(stdout).toMatch(
      new RegExp(
        `^\\| ${bare.url("/").replaceAll(".", "\\.")} \\| \\*\\*D\\*\\* \\| \\d+ \\|`,
        "m",
      ),
    );
    expect(stdout).toContain("the grade is capped by: no security header at all (D at best)");
    expect(stdout).toMatch(
      /\| medium \| X-Frame-Options .*\(`x-frame-options-invalid`\) \| −20 \|/,
    );
  });
});
