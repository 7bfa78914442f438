import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { staleReason, stampText } from "../../scripts/build.js";

// A project tree with file times set by hand: `built` is when dist/ was stamped.
const built = new Date("2026-01-01T12:00:00Z");
const before = new Date("2026-01-01T11:00:00Z");
const after = new Date("2026-01-01T13:00:00Z");
let root: string;

function file(path: string, time = before, text = ""): void {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), text);
  utimesSync(join(root, path), time, time);
}
function dir(path: string, time = before): void {
  utimesSync(join(root, path), time, time);
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "secsnap-build-"));
  for (const f of ["tsconfig.json", "tsconfig.build.json", "src/cli/main.ts", "src/a.test.ts"]) {
    file(f);
  }
  dir("src/cli");
  dir("src");
  file("dist/.build-stamp", built, stampText(built));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("bin/secsnap.js rebuilds dist/ when (and only when) it is stale", () => {
  it("is current when nothing compiled changed since the stamp", () => {
    expect(staleReason(root)).toBeUndefined();
  });

  it("is stale without a finished build (no stamp)", () => {
    rmSync(join(root, "dist"), { recursive: true });
    expect(staleReason(root)).toBe("dist/ has not been built");
  });

  it("is stale when dist/ was made by an earlier build script (the tsc output)", () => {
    file("dist/.build-stamp", built, `${built.toISOString()}\n`);
    expect(staleReason(root)).toBe("dist/ was built by an older build script");
  });

  it("is stale when a source file changed", () => {
    file("src/cli/main.ts", after);
    expect(staleReason(root)).toMatch(/src\/ changed/);
  });

  it("is stale when a source file was added or deleted (its directory changed)", () => {
    dir("src/cli", after);
    expect(staleReason(root)).toMatch(/src\/ changed/);
  });

  it("is stale when the compiler settings changed", () => {
    file("tsconfig.build.json", after);
    expect(staleReason(root)).toMatch(/src\/ changed/);
  });

  it("ignores test files, which are not compiled", () => {
    file("src/a.test.ts", after);
    expect(staleReason(root)).toBeUndefined();
  });

  it("runs what is there in a copy without sources", () => {
    rmSync(join(root, "src"), { recursive: true });
    expect(staleReason(root)).toBeUndefined();
  });
});
