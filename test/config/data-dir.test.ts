import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

const dataDir = (value: string | undefined) => loadConfig({ DATA_DIR: value }).dataDir;

describe("DATA_DIR", () => {
  it("unset or blank: ./.secsnap, made absolute against the working directory", () => {
    expect(dataDir(undefined)).toBe(resolve(".secsnap"));
    expect(dataDir("  ")).toBe(resolve(".secsnap"));
  });

  it("a relative or absolute path is kept, absolute", () => {
    expect(dataDir("/var/lib/secsnap")).toBe("/var/lib/secsnap");
    expect(dataDir("state/payments")).toBe(resolve("state/payments"));
  });

  it("a path with a NUL character stops the start with one line naming the variable", () => {
    let error: unknown;
    try {
      dataDir("bad\0dir");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^DATA_DIR must be a directory path/);
  });
});
