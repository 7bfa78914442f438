import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCli as runCliInProcess } from "../../src/cli/run.js";
import type { Devnet } from "../../src/devnet/devnet.js";
import { outputOf, type ChildOutput } from "../fixtures/child-output.js";
import { closedPort } from "../fixtures/targets.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/secsnap.js", import.meta.url));

export type CliRun = ChildOutput;

/** A DATA_DIR nobody else uses, in the suite's scratch directory (test/fixtures/global-setup.ts). */
function freshDataDir(): string {
  return mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "data-"));
}

/**
 * Environment for the CLI: no inherited SNAPSHOT_/X402_/METRICS_/REDIS_URL settings, no colour; the
 * metrics listener on a free port and a DATA_DIR of its own (not the checkout's `.secsnap`, which
 * one embedded store at a time may hold), so services started side by side never collide.
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
  return { ...env, METRICS_PORT: "0", DATA_DIR: freshDataDir(), ...extra };
}

/**
 * cleanEnv as strings, for a paying command: with devnet payer `payerIndex`'s key as
 * SECSNAP_PRIVATE_KEY, or with no key at all (then only a devnet service is paid).
 */
export function payerEnv(
  devnet: Pick<Devnet, "payerPrivateKeys">,
  payerIndex?: number,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(cleanEnv())) {
    if (v !== undefined && k !== "SECSNAP_PRIVATE_KEY") env[k] = v;
  }
  if (payerIndex !== undefined) {
    const key = devnet.payerPrivateKeys[payerIndex];
    if (!key) throw new Error(`no devnet payer ${payerIndex}`);
    env.SECSNAP_PRIVATE_KEY = key;
  }
  return env;
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
  return outputOf(spawnCli(args, env));
}

/**
 * SIGTERMs each child still running, as the process group it leads (a shell line and what it
 * started; a service stops its devnet on the way out), and waits for each to close.
 */
export async function stopProcessGroups(children: readonly ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(async (child) => {
      if (child.pid === undefined || child.exitCode !== null) return;
      const closed = new Promise((resolve) => child.once("close", resolve));
      process.kill(-child.pid, "SIGTERM");
      await closed;
    }),
  );
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

/** A `secsnap serve` process (spawnCli) and its exit code, once it has ended. */
export interface ServeProcess {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
}

/** `secsnap serve` on 127.0.0.1, on a port the OS picks, with `settings` over cleanEnv. */
export function spawnServe(
  settings: Record<string, string>,
  { detached = false } = {},
): ServeProcess {
  const child = spawnCli(["serve"], cleanEnv({ PORT: "0", HOST: "127.0.0.1", ...settings }), {
    detached,
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return { child, exited };
}

/** Waits for serve's first line, "… listening on <base> …"; the line and the base URL. */
export async function listeningLine(
  child: ChildProcessWithoutNullStreams,
): Promise<{ first: string; base: string }> {
  const first = await waitForLine(child.stdout, /listening on/);
  const base = /listening on (http:\/\/\S+)/.exec(first)?.[1] as string;
  return { first, base };
}

/**
 * serve's settings for devnet mode fetching only `targetPort` on loopback, its devnet on ports
 * nothing else uses.
 */
export async function devnetServeSettings(targetPort: number): Promise<Record<string, string>> {
  return {
    SNAPSHOT_ALLOW_CIDRS: "127.0.0.0/8",
    SNAPSHOT_ALLOWED_PORTS: String(targetPort),
    DEVNET_RPC_PORT: String(await closedPort("127.0.0.1")),
    DEVNET_FACILITATOR_PORT: String(await closedPort("127.0.0.1")),
  };
}

/** A request whose body never finishes: the server keeps draining, and so the chain stays up. */
export function openRequest(base: string): Promise<Socket> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST /v1/snapshot HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
          "content-length: 100\r\n\r\n{",
      );
      resolve(socket);
    });
    socket.on("error", reject);
  });
}
