/**
 * Where `secsnap serve` gets the key that signs paid reports (docs/proof.md, "Keys"), as real
 * processes: made at the first start and kept in DATA_DIR, the same key after a restart on that
 * directory; SIGNING_KEY when set; refused with REDIS_URL and no SIGNING_KEY, in one line. The
 * first line says which, and GET /.well-known/jwks.json serves that key.
 */
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { calculateJwkThumbprint, type JSONWebKeySet } from "jose";
import { describe, expect, it } from "vitest";
import { TEST_SIGNING_KEY } from "../../fixtures/signing-key.js";
import { cleanEnv, devnetServeSettings, listeningLine, runProcess, spawnServe } from "../run.js";

/** One `serve` in devnet mode with `settings`: its first line and the kids its JWKS lists. */
async function startOnce(
  settings: Record<string, string>,
): Promise<{ first: string; kids: string[] }> {
  const { child, exited } = spawnServe({
    ...(await devnetServeSettings(9)),
    SHUTDOWN_GRACE_MS: "0",
    ...settings,
  });
  try {
    const { first, base } = await listeningLine(child);
    const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    return { first, kids: jwks.keys.map((key) => key.kid as string) };
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

function scratchDir(): string {
  return mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "signing-"));
}

describe("serve's signing key", { timeout: 120_000 }, () => {
  it("is made at the first start, kept in DATA_DIR for this user only, and the same after a restart", async () => {
    const dataDir = scratchDir();
    const keyFile = join(dataDir, "signing-key.json");
    const first = await startOnce({ DATA_DIR: dataDir });
    const [kid] = first.kids;
    expect(first.kids).toHaveLength(1);
    expect(first.first).toMatch(
      new RegExp(`; signing key ${kid} made now and kept in ${keyFile}$`),
    );
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);

    const again = await startOnce({ DATA_DIR: dataDir });
    expect(again.kids).toEqual([kid]);
    expect(again.first).toMatch(new RegExp(`; signing key ${kid} kept in ${keyFile}$`));

    // Another directory, another key.
    expect((await startOnce({ DATA_DIR: scratchDir() })).kids).not.toEqual([kid]);
  });

  it("is SIGNING_KEY's when set, and nothing is kept in DATA_DIR", async () => {
    const { kty, crv, x } = JSON.parse(TEST_SIGNING_KEY) as Record<string, string>;
    const kid = await calculateJwkThumbprint({ kty, crv, x });
    const dataDir = scratchDir();
    const served = await startOnce({ DATA_DIR: dataDir, SIGNING_KEY: TEST_SIGNING_KEY });
    expect(served.kids).toEqual([kid]);
    expect(served.first).toMatch(new RegExp(`; signing key ${kid} from SIGNING_KEY$`));
    expect(() => statSync(join(dataDir, "signing-key.json"))).toThrow(/ENOENT/);
  });

  it("REDIS_URL without SIGNING_KEY: the start is refused in one line naming it", async () => {
    const run = await runProcess(["serve"], cleanEnv({ REDIS_URL: "redis://127.0.0.1:9" }));
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^secsnap: SIGNING_KEY must be set with REDIS_URL [^\n]*\n$/);
  });
});
