/**
 * PUBLIC_URL (docs/contract.md §6.1): the service's public base URL, checked at start (§6.2).
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const publicUrl = (value: string) => loadConfig({ PUBLIC_URL: value }).publicUrl;

describe("PUBLIC_URL", () => {
  it("is unset by default: each request's own URL is used", () => {
    expect(loadConfig({}).publicUrl).toBeUndefined();
    expect(publicUrl("  ")).toBeUndefined();
  });

  it("keeps an absolute http(s) URL, path included, without its trailing slash", () => {
    expect(publicUrl("https://api.example.com")).toBe("https://api.example.com");
    expect(publicUrl("https://api.example.com/")).toBe("https://api.example.com");
    expect(publicUrl("https://example.com/tools/secsnap/")).toBe(
      "https://example.com/tools/secsnap",
    );
    expect(publicUrl("http://10.0.0.5:8080")).toBe("http://10.0.0.5:8080");
  });

  it.each([
    ["api.example.com", /must be an absolute http\(s\) URL/],
    ["/secsnap", /must be an absolute http\(s\) URL/],
    ["ftp://api.example.com", /must be an absolute http\(s\) URL/],
    ["https://api.example.com/?", /no query, fragment or credentials/],
    ["https://api.example.com/?a=1", /no query, fragment or credentials/],
    ["https://api.example.com/#top", /no query, fragment or credentials/],
    ["https://user@api.example.com", /no query, fragment or credentials/],
  ])("refuses %s with one error naming the variable", (value, why) => {
    let error: unknown;
    try {
      publicUrl(value);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/^PUBLIC_URL /);
    expect((error as ConfigError).message).toMatch(why);
  });
});
