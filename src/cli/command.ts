/** What every `secsnap` subcommand gets and returns; main.ts maps names to these. */
export interface CliIo {
  args: string[];
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

export interface Command {
  /** Full usage text for `secsnap <command> --help`. */
  usage: string;
  /** Resolves to the process exit code. Throw UsageError for bad arguments (exit 1). */
  run(io: CliIo): Promise<number>;
}

/** Bad arguments: main prints the message and the command's usage, exit code 1. */
export class UsageError extends Error {
  override name = "UsageError";
}
