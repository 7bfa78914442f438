import { hostname } from "node:os";
import { pino, stdTimeFunctions, type Logger as PinoLogger } from "pino";
import { prettyFactory } from "pino-pretty";
import type { LogLevel } from "../../config.js";

/** Where `serve` writes: its stdout as the CLI hands it (process.stdout, or a test's capture). */
interface Output {
  isTTY?: boolean;
  write(text: string): unknown;
}

/**
 * Paths pino censors whatever a caller passes (docs/operations.md, "Logs"): the service never
 * logs headers or keys, and this is the safety net if a future line does. Explicit paths only:
 * a wildcard path made every line ~10× dearer (docs/benchmarks.md "Telemetry").
 */
const REDACT = [
  "headers.authorization",
  'headers["payment-signature"]',
  'headers["x-payment"]',
  "req.headers.authorization",
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  "privateKey",
  "secret",
];

/**
 * The service's logger: one JSON object per line (level as a word, ISO time) on `output`, or
 * readable lines when it is a terminal: pino-pretty's formatter called in line, synchronous, so
 * each line is out before the next request and before exit, on the same output.
 */
export function createLogger(level: LogLevel, output: Output): PinoLogger {
  const options = {
    level,
    // Which instance wrote the line, in a fleet: computed once, not per line.
    base: { pid: process.pid, hostname: hostname() },
    timestamp: stdTimeFunctions.isoTime,
    redact: { paths: REDACT, censor: "[redacted]" },
  };
  if (output.isTTY) {
    const format = prettyFactory({
      colorize: true,
      translateTime: "SYS:HH:MM:ss.l",
      // One instance on one terminal: which one is plain.
      ignore: "pid,hostname",
    });
    return pino(options, { write: (line: string) => void output.write(format(line)) });
  }
  return pino(
    { ...options, formatters: { level: (label: string) => ({ level: label }) } },
    { write: (line: string) => void output.write(line) },
  );
}
