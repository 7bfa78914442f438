/**
 * `npm ci` installs exactly package-lock.json and refuses a lock that lacks a package the tree
 * needs, on the platform it runs on. A lock regenerated on one machine can drop the other
 * platforms' binaries (anvil, esbuild, rollup, lmdb: each an optional dependency per OS and CPU),
 * and then `npm ci` fails on every other platform while passing on this one. And every package
 * with an install script must be named in package.json's `allowScripts`, allowed or denied
 * (docs/operations.md, "Installing"), or npm lists it after every install.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

interface LockEntry {
  version?: string;
  optionalDependencies?: Record<string, string>;
  hasInstallScript?: boolean;
}
interface Lock {
  packages: Record<string, LockEntry>;
}

const lock = JSON.parse(
  readFileSync(new URL("../../package-lock.json", import.meta.url), "utf8"),
) as Lock;
const manifest = JSON.parse(
  readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
) as { allowScripts?: Record<string, boolean> };

/** Where Node would find `name` from the package at `from`: its own node_modules, then upwards. */
function resolveInLock(packages: Lock["packages"], from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = `${dir === "" ? "" : `${dir}/`}node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (dir === "") return undefined;
    const parent = dir.lastIndexOf("/node_modules/");
    dir = parent < 0 ? "" : dir.slice(0, parent);
  }
}

/** Every optional dependency the lock names but does not hold, as `from -> name@spec`. */
function missingOptionalPackages(packages: Lock["packages"]): string[] {
  const missing: string[] = [];
  for (const [path, entry] of Object.entries(packages)) {
    for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
      const found = resolveInLock(packages, path, name);
      // Platform packages are pinned to their parent's exact version: a stale one is missing too.
      const exact = /^\d+\.\d+\.\d+(-[\w.]+)?$/.test(spec);
      if (!found || (exact && packages[found]?.version !== spec)) {
        missing.push(`${path || "(root)"} -> ${name}@${spec}`);
      }
    }
  }
  return missing;
}

/** The package name of a lock path (`node_modules/a/node_modules/@s/b` is `@s/b`). */
function packageName(path: string): string {
  return path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
}

describe("package-lock.json installs on every platform", () => {
  it("holds every optional dependency it names (each platform's binary), at the pinned version", () => {
    expect(missingOptionalPackages(lock.packages)).toEqual([]);
  });

  it("names the platform packages of anvil, esbuild, rollup and lmdb for macOS, Linux and Windows", () => {
    const names = Object.keys(lock.packages).map(packageName);
    for (const platformPackage of [
      "@foundry-rs/anvil-darwin-arm64",
      "@foundry-rs/anvil-linux-amd64",
      "@foundry-rs/anvil-win32-amd64",
      "@esbuild/darwin-arm64",
      "@esbuild/linux-arm64",
      "@esbuild/win32-x64",
      "@rollup/rollup-darwin-arm64",
      "@rollup/rollup-linux-x64-musl",
      "@rollup/rollup-win32-x64-msvc",
      "@lmdb/lmdb-darwin-arm64",
      "@lmdb/lmdb-linux-arm64",
      "@lmdb/lmdb-win32-x64",
    ]) {
      expect(names).toContain(platformPackage);
    }
  });

  it("a lock regenerated without another platform's binary is caught", () => {
    const partial = { ...lock.packages };
    delete partial["node_modules/@foundry-rs/anvil-darwin-arm64"];
    partial["node_modules/@esbuild/win32-x64"] = { version: "0.0.1" };
    expect(missingOptionalPackages(partial)).toEqual(
      expect.arrayContaining([
        "node_modules/@foundry-rs/anvil -> @foundry-rs/anvil-darwin-arm64@1.7.1",
        "node_modules/esbuild -> @esbuild/win32-x64@0.28.2",
      ]),
    );
  });
});

describe("allowScripts in package.json", () => {
  const policy = manifest.allowScripts ?? {};
  const withScripts = new Set(
    Object.entries(lock.packages)
      .filter(([path, entry]) => path !== "" && entry.hasInstallScript)
      .map(([path]) => packageName(path)),
  );

  it("decides every package in the lock that has an install script (allowed or denied)", () => {
    expect([...withScripts].filter((name) => !(name in policy)).sort()).toEqual([]);
  });

  it("names no package that is gone or has no install script any more", () => {
    expect(Object.keys(policy).filter((name) => !withScripts.has(name))).toEqual([]);
  });

  it("uses bare names: the lock records no tarball URLs, so a pinned name@version never matches", () => {
    expect(Object.keys(policy).filter((name) => /.@/.test(name))).toEqual([]);
  });
});
