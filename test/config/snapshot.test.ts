/**
 * docs/contract.md §6.1 for the snapshot settings: the defaults, and one clear error naming the
 * variable for every bad value (§6.2; the CLI prints that error as its one line).
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, loadSnapshotConfig } from "../../src/config.js";

function configError(env: Record<string, string>): ConfigError {
  try {
    loadSnapshotConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("snapshot configuration (docs/contract.md §6.1)", () => {
  it("has the defaults of docs/contract.md §6.1", () => {
    const config = loadSnapshotConfig({});
    expect(config.timeoutMs).toBe(10_000);
    expect(config.maxRedirects).toBe(10);
    expect([...config.allowedPorts].sort((a, b) => a - b)).toEqual([80, 443, 8080, 8443]);
    expect(config.allowCidrs).toEqual([]);
    expect(config.allowLocal).toBe(false);
    expect(config.dnsServers).toEqual([]);
    expect(config.maxRequests).toBe(32);
    expect(config.maxNames).toBe(16);
    const all = loadConfig({});
    // Devnet mode (no X402_PAY_TO) listens on loopback (test/config/host.test.ts).
    expect([all.port, all.host]).toEqual([8080, "127.0.0.1"]);
  });

  it("reads every variable", () => {
    const config = loadSnapshotConfig({
      SNAPSHOT_TIMEOUT_MS: "2500",
      SNAPSHOT_MAX_REDIRECTS: "3",
      SNAPSHOT_ALLOWED_PORTS: "443, 8443",
      SNAPSHOT_ALLOW_CIDRS: "127.0.0.2/31,fd00::/8",
      SNAPSHOT_ALLOW_LOCAL: "1",
      SNAPSHOT_DNS_SERVERS: "127.0.0.1:5353,[::1]:53,9.9.9.9",
      SNAPSHOT_MAX_REQUESTS: "3",
      SNAPSHOT_MAX_NAMES: " 1000 ",
    });
    expect(config).toEqual({
      timeoutMs: 2500,
      maxRedirects: 3,
      allowedPorts: new Set([443, 8443]),
      allowCidrs: ["127.0.0.2/31", "fd00::/8"],
      allowLocal: true,
      dnsServers: ["127.0.0.1:5353", "[::1]:53", "9.9.9.9"],
      maxRequests: 3,
      maxNames: 1000,
    });
  });

  it.each([
    ["SNAPSHOT_TIMEOUT_MS", "soon"],
    ["SNAPSHOT_TIMEOUT_MS", "-1"],
    ["SNAPSHOT_MAX_REDIRECTS", "1.5"],
    ["SNAPSHOT_MAX_REDIRECTS", "-1"],
    ["SNAPSHOT_ALLOWED_PORTS", "80,http"],
    ["SNAPSHOT_ALLOWED_PORTS", "70000"],
    ["SNAPSHOT_ALLOW_CIDRS", "127.0.0.0"],
    ["SNAPSHOT_ALLOW_CIDRS", "10.0.0.0/33"],
    ["SNAPSHOT_DNS_SERVERS", "dns.example"],
    ["SNAPSHOT_DNS_SERVERS", "127.0.0.1:0"],
    ["SNAPSHOT_MAX_REQUESTS", "0"],
    ["SNAPSHOT_MAX_REQUESTS", "2.5"],
    ["SNAPSHOT_MAX_REQUESTS", "many"],
    ["SNAPSHOT_MAX_REQUESTS", "1001"],
    ["SNAPSHOT_MAX_NAMES", "0"],
    ["SNAPSHOT_MAX_NAMES", "-3"],
    ["SNAPSHOT_MAX_NAMES", "16 names"],
    ["SNAPSHOT_MAX_NAMES", "1e9"],
    ["SNAPSHOT_ALLOW_LOCAL", "abc"],
    ["SNAPSHOT_ALLOW_LOCAL", "2"],
  ])("%s=%j is refused with an error naming the variable", (variable, value) => {
    const err = configError({ [variable]: value });
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable} `)).toBe(true);
    expect(err.message).not.toContain("\n");
  });

  it.each([
    ["1", true],
    ["true", true],
    [" YES ", true],
    ["on", true],
    ["0", false],
    ["false", false],
    ["off", false],
    ["", false],
  ])("SNAPSHOT_ALLOW_LOCAL=%j is local mode %s", (value, on) => {
    expect(loadSnapshotConfig({ SNAPSHOT_ALLOW_LOCAL: value }).allowLocal).toBe(on);
  });

  it("SNAPSHOT_ALLOW_LOCAL's bad value says what it takes", () => {
    expect(configError({ SNAPSHOT_ALLOW_LOCAL: "please" }).message).toBe(
      'SNAPSHOT_ALLOW_LOCAL must be 1 (on) or 0 (off); also true/false, yes/no, on/off (got "please")',
    );
  });

  it("local mode is refused in production mode (X402_PAY_TO set): development only", () => {
    const production = {
      X402_PAY_TO: `0x${"ab".repeat(20)}`,
      X402_FACILITATOR_URL: "https://facilitator.example",
    };
    expect(loadConfig(production).snapshot.allowLocal).toBe(false);
    let refused: unknown;
    try {
      loadConfig({ ...production, SNAPSHOT_ALLOW_LOCAL: "1" });
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).variable).toBe("SNAPSHOT_ALLOW_LOCAL");
    expect((refused as ConfigError).message).toContain("X402_PAY_TO");
    expect(loadConfig({ SNAPSHOT_ALLOW_LOCAL: "1" }).snapshot.allowLocal).toBe(true); // devnet
  });
});
