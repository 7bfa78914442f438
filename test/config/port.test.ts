/**
 * PORT and METRICS_PORT's bad values: each line names the variable, says what a port is here
 * (0 for a free one; METRICS_PORT also `off`) and quotes what was given, cut short when long.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";

function message(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const PORT = "PORT must be a TCP port (1-65535), 0 for a free one";
const METRICS_PORT = 'METRICS_PORT must be a TCP port (1-65535), 0 for a free one, or "off"';

describe("PORT's messages", () => {
  it.each(["eighty", "Infinity", "80.5", "-1", "65536", "1e17"])("PORT=%s", (value) => {
    expect(message({ PORT: value })).toBe(`${PORT} (got "${value}")`);
  });

  it.each(["no", "65536", "-1"])("METRICS_PORT=%s", (value) => {
    expect(message({ METRICS_PORT: value })).toBe(`${METRICS_PORT} (got "${value}")`);
  });

  it("quotes a long value cut short", () => {
    expect(message({ PORT: "9".repeat(100) })).toBe(`${PORT} (got "${"9".repeat(40)}…")`);
  });
});
