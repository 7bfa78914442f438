import type { CliOutput } from "./command.js";

/** The one setting `scan --local` and `serve --allow-local` turn on (docs/contract.md §6.1). */
const ALLOW_LOCAL_VARIABLE = "SNAPSHOT_ALLOW_LOCAL";

/** The environment with local mode on when `on` (the flag given), else as it was. */
export function withLocalMode(env: NodeJS.ProcessEnv, on: boolean | undefined): NodeJS.ProcessEnv {
  return on === true ? { ...env, [ALLOW_LOCAL_VARIABLE]: "1" } : env;
}

/**
 * The loud first stderr line of a process in local mode: it fetches this machine and its
 * networks for whoever asks, so it must never be mistaken for a public service.
 */
export function announceLocalMode(stderr: CliOutput, { serving }: { serving: boolean }): void {
  const warning = serving ? " — never expose this service" : "";
  stderr.write(
    `secsnap: LOCAL MODE: private and loopback targets on any port are allowed (cloud host services stay blocked)${warning}\n`,
  );
}
