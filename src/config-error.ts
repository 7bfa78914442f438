/**
 * A bad environment variable: the CLI prints the message as one line and exits 1. Its own
 * module so that the CLI can recognise it without loading the validators (zod, ipaddr.js).
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
    this.name = "ConfigError";
  }
}
