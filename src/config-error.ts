/**
 * A start that cannot go on for a reason the operator fixes (a busy port, a devnet that cannot
 * start): the CLI prints the message as one line, no stack, and exits 1. Its own module so that
 * the CLI can recognise it without loading the validators (zod, ipaddr.js).
 */
export class StartupError extends Error {
  override name = "StartupError";
}

/** A bad environment variable: a StartupError whose line begins with the variable's name. */
export class ConfigError extends StartupError {
  override name = "ConfigError";
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
  }
}

/** Where a listener was asked to bind, and the variables that chose it. */
export interface ListenTarget {
  host: string;
  port: number;
  portVariable: string;
  hostVariable?: string;
  /** What else the operator may do, e.g. `or METRICS_PORT=off for none`. */
  alternative?: string;
}

const LISTEN_CODES = new Set([
  "EADDRINUSE",
  "EACCES",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EADDRNOTAVAIL",
  "EAFNOSUPPORT",
]);

/** Is this how a listen fails for its address (busy, privileged, not this machine's)? */
export function isListenError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === "string" && LISTEN_CODES.has(code);
}

/**
 * A listen that failed (EADDRINUSE, EACCES, an unknown or foreign HOST) as one line naming the
 * variable to change and how.
 */
export function listenError(error: unknown, target: ListenTarget): ConfigError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const { host, port, portVariable, hostVariable } = target;
  const also = target.alternative ? `, ${target.alternative}` : "";
  if (code === "EADDRINUSE") {
    return new ConfigError(
      portVariable,
      `${port} is in use on ${host} (EADDRINUSE): stop what holds it or set ${portVariable} to a free port (0 picks one)${also}`,
    );
  }
  if (code === "EACCES") {
    return new ConfigError(
      portVariable,
      `${port} on ${host} needs privileges this process lacks (EACCES): set ${portVariable} to a port above 1023${also}`,
    );
  }
  if (hostVariable && isListenError(error)) {
    return new ConfigError(
      hostVariable,
      `${JSON.stringify(host.slice(0, 40))} is not an address of this machine (${code}): set ${hostVariable} to one, e.g. 127.0.0.1 or 0.0.0.0`,
    );
  }
  const names = hostVariable ? `${hostVariable} and ${portVariable}` : portVariable;
  return new ConfigError(
    portVariable,
    `${port} on ${host} cannot be listened on (${code ?? (error as Error).message}): check ${names}${also}`,
  );
}
