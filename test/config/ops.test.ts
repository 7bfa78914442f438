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
      trustedProxies: [],
      snapshotMaxConcurrency: 64 * availableParallelism(),
      shutdownGraceMs: 2000,
    });
    expect(loadConfig({}).ops).toEqual(loadOpsConfig({}));
  });

  it("reads every variable", () => {
    expect(
      loadOpsConfig({
        RATE_LIMIT_PER_MINUTE: "30",
        TRUSTED_PROXIES: "10.0.0.0/8, 192.0.2.7,2001:db8::/32",
        SNAPSHOT_MAX_CONCURRENCY: "7",
        SHUTDOWN_GRACE_MS: "0",
      }),
    ).toEqual({
      rateLimitPerMinute: 30,
      trustedProxies: ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"],
      snapshotMaxConcurrency: 7,
      shutdownGraceMs: 0,
    });
  });

  it.each([
    ["RATE_LIMIT_PER_MINUTE", "0"],
    ["RATE_LIMIT_PER_MINUTE", "ten"],
    ["TRUSTED_PROXIES", "10.0.0.0/33"],
    ["TRUSTED_PROXIES", "proxy.example"],
    ["TRUST_PROXY", "1"],
    ["SNAPSHOT_MAX_CONCURRENCY", "0"],
    ["SNAPSHOT_MAX_CONCURRENCY", "1.5"],
    ["SHUTDOWN_GRACE_MS", "-5"],
    ["SHUTDOWN_GRACE_MS", "999999"],
  ])("%s=%s stops the start with one line naming it", (name, value) => {
    const error = configError({ [name]: value });
    expect(error.variable).toBe(name);
    expect(error.message).toContain(JSON.stringify(value));
  });

  it("TRUST_PROXY=0 (its old default) is accepted; any other value names what replaced it", () => {
    expect(loadOpsConfig({ TRUST_PROXY: "0" }).trustedProxies).toEqual([]);
    expect(configError({ TRUST_PROXY: "2" }).message).toMatch(/TRUSTED_PROXIES/);
  });
});
