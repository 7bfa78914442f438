/**
 * MDN HTTP Observatory, installed from npm into a scratch folder (never a dependency of ours)
 * and driven in-process through its `scan(hostname)`, the function its own CLI calls.
 *
 * What its scanner does (src/retriever in the package): GET http://<host>/ and
 * https://<host>/ on the default ports, no port option reaching `scan()`; follow redirects;
 * judge the https answer when it got one, else the http one; then GET /robots.txt and an
 * OPTIONS with an Origin for CORS. Names are resolved with `dns.lookup`, certificates checked
 * against Node's CAs plus NODE_EXTRA_CA_CERTS (read at process start only).
 */
import { spawnSync } from "node:child_process";
import dns from "node:dns";
import type { LookupAddress, LookupOptions } from "node:dns";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** Pinned: 1.4.x declares `node >=20` (ours is 20). */
export const OBSERVATORY_VERSION = "1.4.8";
const PACKAGE = "@mdn/mdn-http-observatory";

/** Shared by every checkout on this machine, so the install happens once. */
export const OBSERVATORY_DIR = join(
  tmpdir(),
  "secsnap-compare",
  `observatory-${OBSERVATORY_VERSION}`,
);
const packageDir = join(OBSERVATORY_DIR, "node_modules", ...PACKAGE.split("/"));
/** Written after a complete install, so an interrupted one is redone. */
const DONE_MARKER = join(OBSERVATORY_DIR, "installed");

/** One test of an Observatory scan (only what we print). */
export interface ObservatoryTest {
  result: string;
  pass: boolean | null;
  scoreModifier: number;
}

export interface ObservatoryScan {
  scan: { grade: string; score: number };
  tests: Record<string, ObservatoryTest>;
}

type ScanFunction = (hostname: string) => Promise<ObservatoryScan>;

/** Installs Observatory unless a complete install is there; returns its folder. */
export function ensureObservatory(): string {
  if (existsSync(DONE_MARKER)) return OBSERVATORY_DIR;
  mkdirSync(OBSERVATORY_DIR, { recursive: true });
  console.log(`installing ${PACKAGE}@${OBSERVATORY_VERSION} into ${OBSERVATORY_DIR} (once)…`);
  // --ignore-scripts: its postinstall downloads Chromium's HSTS preload list and the TLD list,
  // and pg-native would compile against libpq; the scanner needs none of them (below).
  const npm = spawnSync(
    "npm",
    [
      "install",
      "--prefix",
      OBSERVATORY_DIR,
      "--ignore-scripts",
      "--no-audit",
      "--no-fund",
      "--loglevel=error",
      `${PACKAGE}@${OBSERVATORY_VERSION}`,
    ],
    { stdio: "inherit" },
  );
  if (npm.status !== 0) throw new Error(`npm install ${PACKAGE} failed (${npm.status})`);
  // The HSTS test reads the preload list the skipped postinstall would have fetched. Our
  // scenario names (*.test) are on no preload list, so an empty one judges them the same.
  const preload = join(packageDir, "conf", "hsts-preload.json");
  if (!existsSync(preload)) writeFileSync(preload, "{}\n");
  writeFileSync(DONE_MARKER, `${OBSERVATORY_VERSION}\n`);
  return OBSERVATORY_DIR;
}

/**
 * Points `dns.lookup` (what Observatory's HTTP clients resolve with) at our scenario addresses
 * for the names in `table`; every other name resolves as before. Our engine resolves through
 * its own DNS client and the DNS fixture, so this touches only Observatory.
 */
export function resolveNamesFor(table: ReadonlyMap<string, string>): void {
  const original = dns.lookup.bind(dns);
  type Callback = (
    err: NodeJS.ErrnoException | null,
    address: string | LookupAddress[],
    family?: number,
  ) => void;
  const patched = (
    hostname: string,
    options: LookupOptions | number | Callback,
    callback?: Callback,
  ): void => {
    const cb = (typeof options === "function" ? options : callback) as Callback;
    const opts: LookupOptions =
      typeof options === "object"
        ? options
        : typeof options === "number"
          ? { family: options }
          : {};
    const address = table.get(hostname.toLowerCase());
    if (address === undefined) {
      (original as (h: string, o: LookupOptions, c: Callback) => void)(hostname, opts, cb);
      return;
    }
    process.nextTick(() => (opts.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4)));
  };
  (dns as { lookup: unknown }).lookup = patched;
}

/** Observatory's `scan`, imported from the scratch install. */
export async function loadObservatory(dir: string): Promise<ScanFunction> {
  const pkgDir = join(dir, "node_modules", ...PACKAGE.split("/"));
  const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { main: string };
  const mod = (await import(pathToFileURL(join(pkgDir, pkg.main)).href)) as { scan: ScanFunction };
  return mod.scan;
}
