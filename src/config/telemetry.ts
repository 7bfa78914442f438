import * as z from "zod/mini";
import { host, int, readTable, type Env, type Table } from "./read.js";

/** pino's levels; `silent` logs nothing. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Metrics and logs (docs/operations.md). */
export interface TelemetryConfig {
  /** METRICS_PORT: the metrics listener's port (0 picks a free one); undefined: `off`, none. */
  metricsPort: number | undefined;
  /** METRICS_HOST: where the metrics listener binds; default 127.0.0.1, never public by default. */
  metricsHost: string;
  logLevel: LogLevel;
}

const METRICS_PORT_EXPECTED = 'must be a TCP port (1-65535), 0 for a free one, or "off"';

/** METRICS_PORT: `off` (no metrics listener) or a port to listen on. */
const metricsPort = z.union(
  [
    z.pipe(
      z.literal("off"),
      z.transform(() => undefined),
    ),
    int(0, 65535, METRICS_PORT_EXPECTED.slice("must be ".length)),
  ],
  { message: METRICS_PORT_EXPECTED },
);

const TELEMETRY: Table<TelemetryConfig> = {
  metricsPort: {
    name: "METRICS_PORT",
    fallback: "9464",
    schema: metricsPort,
    meaning: "the metrics listener's port, or off",
  },
  metricsHost: {
    name: "METRICS_HOST",
    fallback: "127.0.0.1",
    schema: host,
    meaning: "where the metrics listener binds",
  },
  logLevel: {
    name: "LOG_LEVEL",
    fallback: "info",
    schema: z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(", ")}` }),
    meaning: "the least severe log line written",
  },
};

export function loadTelemetryConfig(env: Env = process.env): TelemetryConfig {
  return readTable(env, TELEMETRY);
}
