import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { TEST_SIGNING_KEY } from "../fixtures/signing-key.js";

// A fleet signs with one key: SIGNING_KEY is required beside REDIS_URL (test/config/signing-key.test.ts).
const redisUrl = (value: string) =>
  loadConfig({ REDIS_URL: value, SIGNING_KEY: TEST_SIGNING_KEY }).redisUrl;

describe("REDIS_URL", () => {
  it("unset or blank: no Redis (the shared state stays in memory)", () => {
    expect(loadConfig({}).redisUrl).toBeUndefined();
    expect(redisUrl("  ")).toBeUndefined();
  });

  it("a redis:// or rediss:// URL is kept as given", () => {
    expect(redisUrl("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
    expect(redisUrl("rediss://:secret@cache.internal:6380/2")).toBe(
      "rediss://:secret@cache.internal:6380/2",
    );
  });

  it("anything else stops the start with one line naming the variable, the value not echoed", () => {
    for (const bad of ["http://127.0.0.1:6379", "127.0.0.1:6379", "redis://:hunter2@[bad"]) {
      let error: unknown;
      try {
        redisUrl(bad);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/REDIS_URL/);
      expect((error as Error).message).toMatch(/redis:\/\/ or rediss:\/\//);
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});
