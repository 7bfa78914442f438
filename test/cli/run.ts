import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";
import { runCli as runCliInProcess } from "../../src/cli/run.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/secsnap.js", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Environment for the CLI: no inherited SNAPSHOT_/X402_/METRICS_/REDIS_URL settings, no colour; the
 * metrics listener on a free port, so services started side by side never collide.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      !/^(SNAPSHOT_|X402_|DEVNET_|FACILITATOR_|METRICS_|LOG_LEVEL$|REDIS_URL$|PORT$|HOST$|NO_COLOR$)/.test(
        k,
      )
    )
      env[k] = v;
  }
  return { ...env, METRICS_PORT: "0", ...extra };
}

/**
 * The CLI called in this process (runCli), its output captured as a pipe would see it, or as a
 * terminal would with `tty`.
 */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
  { tty = false } = {},
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runCliInProcess(args, {
    env,
    stdout: { isTTY: tty, write: (text: string) => (stdout += text) },
    stderr: { isTTY: false, write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/**
 * A real `secsnap` process (src/cli/main.ts through tsx, so it runs the sources under test):
 * for what only a process shows, its exit code and its signals. `detached`: in its own process
 * group, as a terminal's foreground job is, so a test can signal the whole group.
 */
export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  { detached = false } = {},
): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [...cliNodeArgs(), ...args], { cwd: ROOT, env, detached });
}

/** Node's arguments before `secsnap`'s own, for a process that runs the CLI under test. */
export function cliNodeArgs(): string[] {
  // SECSNAP_TEST_CLI=build runs the same tests against the bundle (bin/secsnap.js, dist/).
  return process.env.SECSNAP_TEST_CLI === "build" ? [BIN] : ["--import", "tsx", MAIN];
}

export async function runProcess(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
): Promise<CliRun> {
  const child = spawnCli(args, env);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

/** Resolves with the first line on `stream` that matches. */
export function waitForLine(stream: NodeJS.ReadableStream, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    const onData = (d: Buffer) => {
      buffered += d.toString();
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      const hit = lines.find((l) => pattern.test(l));
      if (hit !== undefined) {
        stream.off("data", onData);
        resolve(hit);
      }
    };
    stream.on("data", onData);
    stream.on("end", () => reject(new Error(`stream ended before a line matching ${pattern}`)));
  });
}
