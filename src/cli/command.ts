/** Where a command writes: process.stdout/stderr, or a buffer when the CLI runs in process. */
export interface CliOutput {
  /** True for a terminal: then `scan` prints a summary instead of JSON. */
  isTTY?: boolean;
  write(text: string): unknown;
}

/** What every `secsnap` subcommand gets and returns; run.ts maps names to these. */
export interface CliIo {
  args: string[];
  env: NodeJS.ProcessEnv;
  stdout: CliOutput;
  stderr: CliOutput;
}

export interface Command {
  /** Full usage text for `secsnap <command> --help`. */
  usage: string;
  /** Resolves to the process exit code. Throw UsageError for bad arguments (exit 1). */
  run(io: CliIo): Promise<number>;
}

/** Bad arguments: runCli prints the message and the command's usage, exit code 1. */
export class UsageError extends Error {
  override name = "UsageError";
}
