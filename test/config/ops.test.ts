/**
 * docs/contract.md §6.1 for running under load (docs/operations.md): the defaults, every
 * variable read, and one error naming the variable for a bad value (§6.2).
 */
import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, loadOpsConfig } from "../../src/config.js";

function configError(env: Record<string, string>): ConfigError {
  try {
    loadOpsConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("operations configuration", () => {
  it("has the documented defaults; SNAPSHOT_MAX_CONCURRENCY is 64 per available core", () => {
    expect(loadOpsConfig({})).toEqual({
      rateLimitPerMinute: 600,
      trustProxy: 0,
      snapshotMaxConcurrency: 64 * availableParallelism(),
      shutdownGraceMs: 2000,
    });
    expect(loadConfig({}).ops).toEqual(loadOpsConfig({}));
  });

  it("reads every variable", () => {
    expect(
      loadOpsConfig({
        RATE_LIMIT_PER_MINUTE: "30",
        TRUST_PROXY: "2",
        SNAPSHOT_MAX_CONCURRENCY: "7",
        SHUTDOWN_GRACE_MS: "0",
      }),
    ).toEqual({
      rateLimitPerMinute: 30,
      trustProxy: 2,
      snapshotMaxConcurrency: 7,
      shutdownGraceMs: 0,
    });
  });

  it.each([
    ["RATE_LIMIT_PER_MINUTE", "0"],
    ["RATE_LIMIT_PER_MINUTE", "ten"],
    ["TRUST_PROXY", "-1"],
    ["TRUST_PROXY", "true"],
    ["SNAPSHOT_MAX_CONCURRENCY", "0"],
    ["SNAPSHOT_MAX_CONCURRENCY", "1.5"],
    ["SHUTDOWN_GRACE_MS", "-5"],
    ["SHUTDOWN_GRACE_MS", "999999"],
  ])("%s=%s stops the start with one line naming it", (name, value) => {
    const error = configError({ [name]: value });
    expect(error.variable).toBe(name);
    expect(error.message).toContain(JSON.stringify(value));
  });
});
