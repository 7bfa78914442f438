/**
 * The README's "Check your sites in CI", run as written: the commands of its GitHub Actions and
 * GitLab CI snippets are read from README.md (so the two cannot drift apart) and run in bash, in
 * a job's working directory (a scratch directory whose `bin` is this checkout's), in order: the
 * site in the background, then each `secsnap scan` line. Only the port changes (a free one, so
 * the test can run beside others); `npm ci` is not run (this checkout is installed already).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { build, staleReason } from "../../scripts/build.js";
import { accepting, outputOf } from "../fixtures/child-output.js";
import { validateSarif } from "../fixtures/sarif.js";
import { closedPort } from "../fixtures/targets.js";
import { ROOT, cleanEnv, stopProcessGroups, type CliRun } from "./run.js";

const started: ChildProcess[] = [];
let scratch: string;

beforeAll(async () => {
  if (staleReason() !== undefined) build(); // ./bin/secsnap.js would build it first anyway
  scratch = await mkdtemp(join(tmpdir(), "secsnap-readme-ci-"));
  await symlink(join(ROOT, "bin"), join(scratch, "bin"));
}, 120_000);

afterAll(async () => {
  await stopProcessGroups(started);
  await rm(scratch, { recursive: true, force: true });
});

/** The ```yaml blocks of README.md's "## Check your sites in CI". */
async function ciSnippets(): Promise<string[]> {
  const readme = await readFile(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("\n## Check your sites in CI\n");
  expect(start, 'README.md has a "## Check your sites in CI" section').toBeGreaterThan(-1);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] as string);
}

/** A GitHub Actions job's `- run: …` commands, in order. */
function githubCommands(yaml: string): string[] {
  return [...yaml.matchAll(/^ *- run: (.+)$/gm)].map((m) => m[1] as string);
}

/** A GitLab CI job's `script:` commands, in order. */
function gitlabCommands(yaml: string): string[] {
  const script = /^ {2}script:\n((?: {4}- .+\n)+)/m.exec(yaml)?.[1] ?? "";
  return script
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => line.replace(/^ {4}- /, ""));
}

async function runLine(line: string, env: NodeJS.ProcessEnv): Promise<CliRun> {
  const child = spawn("bash", ["-e", "-c", line], { cwd: scratch, env });
  child.stdin.end();
  return outputOf(child);
}

/**
 * Runs a job's commands as its runner would, in order, on `port` instead of 8000: a line ending
 * in `&` starts in the background (the job's site), the others must exit 0.
 */
async function runJob(commands: string[], port: number): Promise<void> {
  const env = cleanEnv();
  for (const command of commands) {
    if (command === "npm ci") continue;
    const line = command.replaceAll("8000", String(port));
    if (line.endsWith("&")) {
      const child = spawn("bash", ["-c", line.replace(/&$/, "")], {
        cwd: scratch,
        env,
        detached: true,
      });
      started.push(child);
      await accepting(port);
      continue;
    }
    const run = await runLine(line, env);
    expect(run.code, `${line}\n${run.stderr}`).toBe(0);
  }
}

it("runs the GitHub Actions and GitLab CI snippets as written", { timeout: 180_000 }, async () => {
  const [github, gitlab] = await ciSnippets();
  const githubJob = githubCommands(github ?? "");
  const gitlabJob = gitlabCommands(gitlab ?? "");
  // The shape the checks below rely on; a README edit that changes it fails here first.
  expect(githubJob).toHaveLength(3);
  expect(gitlabJob).toHaveLength(4);
  for (const command of [...githubJob, ...gitlabJob].filter((c) => c.includes("secsnap"))) {
    expect(command).toMatch(/^\.\/bin\/secsnap\.js scan --local /);
  }
  expect(github).toContain("sarif_file: secsnap.sarif");

  await runJob(githubJob, await closedPort("127.0.0.1"));
  const sarifFile = join(scratch, "secsnap.sarif");
  const sarif = JSON.parse(await readFile(sarifFile, "utf8")) as { version: string };
  expect(sarif.version).toBe("2.1.0");
  const validated = await validateSarif(sarifFile);
  expect(validated).toContain("Analysis completed successfully");
  expect(validated).not.toMatch(/: error /);

  await runJob(gitlabJob, await closedPort("127.0.0.1"));
  const html = await readFile(join(scratch, "secsnap.html"), "utf8");
  expect(html).toMatch(/^<!doctype html>/);
  expect(html).toMatch(/<strong data-grade>D<\/strong>/);
  const markdown = await readFile(join(scratch, "secsnap.md"), "utf8");
  expect(markdown).toContain("| Site | Grade | Score | High | Medium | Low | Info |");
});
