/**
 * A benchmark's measuring process: the same script started again as a child, told what to do
 * through one environment variable, answering with one IPC message, killed past its time limit.
 * Measuring in a child keeps its memory and CPU figures its own.
 */
import { spawn } from "node:child_process";

export interface MeasuringChild {
  /** The script to run (the benchmark's own file). */
  script: string;
  /** Added to the parent's environment. */
  env: Record<string, string>;
  /** Node flags before the parent's own (e.g. --expose-gc). */
  nodeArgs?: string[];
  timeLimitMs: number;
  /**
   * Run the script bundled as the CLI is, by plain node: the engine's code as production runs
   * it, with no TypeScript loader (its thread, its names on every closure) in the figures.
   */
  bundled?: boolean;
}

export async function runMeasuringChild<Result>(options: MeasuringChild): Promise<Result> {
  const { script, env, nodeArgs = [], timeLimitMs, bundled = false } = options;
  const args = bundled
    ? // Imported on use: the bundled child holds this module too, and never bundles anything.
      [...nodeArgs, await (await import("./bundled.js")).bundledServer(script)]
    : [...nodeArgs, ...process.execArgv, script];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    let result: Result | undefined;
    const limit = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the benchmark took longer than ${timeLimitMs / 1000} s`));
    }, timeLimitMs);
    child.on("message", (m: Result) => (result = m));
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(limit);
      if (result && code === 0) resolve(result);
      else reject(new Error(`measuring process failed (exit ${code ?? signal})`));
    });
  });
}
