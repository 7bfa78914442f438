/**
 * SIGNING_KEY (docs/contract.md §6.1): an Ed25519 private JWK, or unset for the key kept in
 * DATA_DIR; required with REDIS_URL; anything else stops the start with one line naming it,
 * never quoting the key.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { TEST_SIGNING_KEY } from "../fixtures/signing-key.js";

const key = JSON.parse(TEST_SIGNING_KEY) as Record<string, string>;

function refusal(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("loadConfig accepted it");
}

describe("SIGNING_KEY", () => {
  it("unset or blank: none (the key kept in DATA_DIR signs)", () => {
    expect(loadConfig({}).signingKey).toBeUndefined();
    expect(loadConfig({ SIGNING_KEY: "  " }).signingKey).toBeUndefined();
  });

  it("an Ed25519 private JWK is kept, its key members only", () => {
    const given = JSON.stringify({ ...key, kid: "mine", use: "sig" });
    expect(loadConfig({ SIGNING_KEY: given }).signingKey).toEqual({
      kty: "OKP",
      crv: "Ed25519",
      x: key.x,
      d: key.d,
    });
  });

  it("anything else stops the start naming SIGNING_KEY, the value never quoted", () => {
    const bad = [
      "abc",
      JSON.stringify({ ...key, crv: "X25519" }),
      JSON.stringify({ kty: "OKP", crv: "Ed25519", x: key.x }),
      // Another key's public half: x must be d's.
      JSON.stringify({ ...key, x: "liK-ylpVQV3vyD4MiPQfqWV3RGykVfqLCUnA0UeVVKM" }),
    ];
    for (const value of bad) {
      const error = refusal({ SIGNING_KEY: value });
      expect(error.variable).toBe("SIGNING_KEY");
      expect(error.message).toMatch(/^SIGNING_KEY must be an Ed25519 private JWK/);
      expect(error.message).not.toContain(key.d);
      expect(error.message).not.toContain("abc");
    }
  });

  it("REDIS_URL without it: one line saying a fleet needs one key", () => {
    const error = refusal({ REDIS_URL: "redis://127.0.0.1:6379" });
    expect(error.variable).toBe("SIGNING_KEY");
    expect(error.message).toMatch(/^SIGNING_KEY must be set with REDIS_URL/);
    expect(
      loadConfig({ REDIS_URL: "redis://127.0.0.1:6379", SIGNING_KEY: TEST_SIGNING_KEY }).signingKey,
    ).toBeDefined();
  });
});
