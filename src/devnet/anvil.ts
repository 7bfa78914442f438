import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { ANVIL_MNEMONIC, DEVNET_CHAIN_ID } from "./constants.js";

/**
 * Runs anvil from the `@foundry-rs/anvil` npm package. The platform binary is spawned
 * directly (not the package's node wrapper) so that the pid we hold is anvil itself and a
 * kill reaches it.
 */

const ARCH: Record<string, string> = { x64: "amd64", arm64: "arm64" };

function anvilBinary(): string {
  const require = createRequire(import.meta.url);
  const exe = process.platform === "win32" ? "anvil.exe" : "anvil";
  const arch = ARCH[process.arch];
  if (arch) {
    try {
      const platformPkg = require.resolve(
        `@foundry-rs/anvil-${process.platform}-${arch}/package.json`,
      );
      const bin = join(dirname(platformPkg), "bin", exe);
      if (existsSync(bin)) return bin;
    } catch {
      // Fall through to the wrapper, which knows other layouts.
    }
  }
  const wrapper = join(dirname(require.resolve("@foundry-rs/anvil/package.json")), "bin.mjs");
  if (existsSync(wrapper)) return wrapper;
  throw new Error(
    `anvil is not installed for ${process.platform}/${process.arch}: run npm install (package @foundry-rs/anvil)`,
  );
}

export interface AnvilProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  url: string;
  /** Stops anvil and resolves once it has exited (SIGKILL after a grace period). */
  stop(): Promise<void>;
}

const LISTENING = /Listening on 127\.0\.0\.1:(\d+)/;

/**
 * Starts anvil on 127.0.0.1:port (0 = any free port) as a Base Sepolia look-alike, its clock
 * kept to the wall clock, and resolves once it listens. Not started with --quiet: the
 * "Listening on" line is how the real port is learned; the rest of its output is read and
 * dropped.
 */
export function startAnvil(opts: { port: number; timeoutMs?: number }): Promise<AnvilProcess> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const binary = anvilBinary();
  const args = [
    "--host",
    "127.0.0.1",
    "--port",
    String(opts.port),
    "--chain-id",
    String(DEVNET_CHAIN_ID),
    "--mnemonic",
    ANVIL_MNEMONIC,
    "--accounts",
    "10",
    // The chain's clock follows the wall clock (docs/contract.md §7.7): an empty block every
    // second while idle, so a proof signed `validAfter = now − 60` (or − 1) is valid on chain
    // after any pause. Mixed mining keeps automine beside it: a settlement is still mined the
    // moment it is sent, not at the next tick. Without pruning, anvil keeps every block's state
    // in memory, ≈ 50 KB a second at that pace (GBs a day). Pruned to the last 10 minutes of
    // states, not to the last one: under load a simulation may name a block a few seconds old,
    // which a chain keeping only its newest state refuses ("Invalid parameters").
    "--block-time",
    "1",
    "--mixed-mining",
    "--prune-history",
    "600",
  ];
  // Its own process group: a Ctrl-C in the terminal signals the whole foreground group, and the
  // chain must outlive the owner's drain (settlements of running requests); the owner stops it.
  const child = binary.endsWith(".mjs")
    ? spawn(process.execPath, [binary, ...args], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TARGET_TOOL: "anvil" },
        detached: true,
      })
    : spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });

  let exited = child.exitCode !== null;
  const exitedPromise = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
  });

  const stop = async (): Promise<void> => {
    if (exited) return;
    child.kill("SIGTERM");
    const grace = setTimeout(() => child.kill("SIGKILL"), 3_000);
    await exitedPromise;
    clearTimeout(grace);
  };

  return new Promise<AnvilProcess>((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    let settled = false;
    const fail = (message: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop();
      const detail = (stderr || stdout).trim().split("\n").slice(-3).join(" | ");
      reject(new Error(detail ? `${message}: ${detail}` : message));
    };
    const timer = setTimeout(
      () => fail(`anvil did not start listening within ${timeoutMs} ms`),
      timeoutMs,
    );
    child.stdout?.on("data", (chunk: Buffer) => {
      if (settled) return; // keep draining so anvil never blocks on a full pipe
      stdout = (stdout + chunk.toString()).slice(-8_192);
      const m = LISTENING.exec(stdout);
      if (m?.[1] && child.pid !== undefined) {
        settled = true;
        clearTimeout(timer);
        const port = Number(m[1]);
        resolve({ child, pid: child.pid, port, url: `http://127.0.0.1:${port}`, stop });
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4_096);
    });
    child.once("error", (error) => fail(`cannot run anvil (${binary}): ${error.message}`));
    child.once("exit", (code, signal) =>
      fail(`anvil exited during startup (${signal ?? `code ${code}`})`),
    );
  });
}
