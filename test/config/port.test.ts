/**
 * PORT and METRICS_PORT's non-numbers: the words zod's English locale gives them, which they have
 * always said; config.ts validates with zod/mini, which loads no locale, so it gives them itself.
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

describe("PORT's messages", () => {
  it.each([
    ["eighty", 'PORT Invalid input: expected number, received NaN (got "eighty")'],
    ["Infinity", 'PORT Invalid input: expected number, received Infinity (got "Infinity")'],
    ["80.5", 'PORT Invalid input: expected int, received number (got "80.5")'],
    ["-1", 'PORT Too small: expected number to be >=0 (got "-1")'],
    ["65536", 'PORT Too big: expected number to be <=65535 (got "65536")'],
    ["1e17", 'PORT Too big: expected int to be <=9007199254740991 (got "1e17")'],
  ])("PORT=%s", (value, expected) => {
    expect(message({ PORT: value })).toBe(expected);
  });

  it("METRICS_PORT neither a port nor off", () => {
    expect(message({ METRICS_PORT: "no" })).toBe('METRICS_PORT Invalid input (got "no")');
  });
});
