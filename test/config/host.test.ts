/**
 * HOST (docs/contract.md §6.1): production listens on every address by default; devnet and local
 * mode on loopback. Devnet mode honours another HOST; local mode refuses one that is not loopback,
 * with one error naming HOST (§6.2; the CLI prints it as its one line, test/cli/serve/exposure.e2e.test.ts).
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const production = {
  X402_PAY_TO: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  X402_FACILITATOR_URL: "https://facilitator.example/x402",
};
const local = { SNAPSHOT_ALLOW_LOCAL: "1" };

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("HOST", () => {
  it("is every address in production, loopback in devnet and local mode", () => {
    expect(loadConfig(production).host).toBe("0.0.0.0");
    expect(loadConfig({}).host).toBe("127.0.0.1");
    expect(loadConfig(local).host).toBe("127.0.0.1");
  });

  it("is honoured in devnet mode and in production", () => {
    expect(loadConfig({ HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
    expect(loadConfig({ ...production, HOST: "10.0.0.5" }).host).toBe("10.0.0.5");
  });

  it.each(["127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST", "::ffff:127.0.0.1"])(
    "may be the loopback address %s in local mode",
    (host) => {
      expect(loadConfig({ ...local, HOST: host }).host).toBe(host);
    },
  );

  it.each(["0.0.0.0", "::", "10.0.0.5", "192.168.1.2", "fd00::1", "my-laptop.lan"])(
    "is refused in local mode when not loopback: %s",
    (host) => {
      const error = configError({ ...local, HOST: host });
      expect(error.variable).toBe("HOST");
      expect(error.message).toMatch(/^HOST must be a loopback address .* in local mode/);
      expect(error.message).toContain(`(got "${host}")`);
    },
  );
});
