/** METRICS_PORT, METRICS_HOST and LOG_LEVEL (docs/operations.md), checked at start. */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const telemetry = (env: Record<string, string>) => loadConfig(env).telemetry;

describe("metrics and log settings", () => {
  it("default: metrics on 127.0.0.1:9464, log level info", () => {
    expect(telemetry({})).toEqual({
      metricsPort: 9464,
      metricsHost: "127.0.0.1",
      logLevel: "info",
    });
  });

  it("METRICS_PORT takes a port, 0 (a free one) or off (no metrics listener)", () => {
    expect(telemetry({ METRICS_PORT: "9100" }).metricsPort).toBe(9100);
    expect(telemetry({ METRICS_PORT: "0" }).metricsPort).toBe(0);
    expect(telemetry({ METRICS_PORT: "off" }).metricsPort).toBeUndefined();
    expect(telemetry({ METRICS_HOST: "10.0.0.7" }).metricsHost).toBe("10.0.0.7");
    expect(telemetry({ LOG_LEVEL: "warn" }).logLevel).toBe("warn");
    expect(telemetry({ LOG_LEVEL: "silent" }).logLevel).toBe("silent");
  });

  it.each([
    [{ METRICS_PORT: "70000" }, /^METRICS_PORT .*"off"/],
    [{ METRICS_PORT: "no" }, /^METRICS_PORT /],
    [{ LOG_LEVEL: "verbose" }, /^LOG_LEVEL must be one of fatal, error, warn, info/],
    // Never the public listener.
    [{ PORT: "9464" }, /^METRICS_PORT must differ from PORT/],
    [{ PORT: "8080", METRICS_PORT: "8080" }, /^METRICS_PORT must differ from PORT/],
  ])("%o is refused with one line naming the variable", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
