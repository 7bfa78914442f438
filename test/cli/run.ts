import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/secsnap.js", import.meta.url));

/** Environment for child processes: no inherited SNAPSHOT_/X402_ settings, no colour. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(SNAPSHOT_|X402_|DEVNET_|FACILITATOR_|PORT$|HOST$|NO_COLOR$)/.test(k)) env[k] = v;
  }
  return { ...env, ...extra };
}

/** The real `secsnap` executable (bin/secsnap.js through tsx). */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env });
}

export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = cleanEnv(),
): Promise<{ code: number | null; stdout: string; stderr: string }> {
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
