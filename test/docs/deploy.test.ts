/**
 * docs/deploy.md's samples are the files in deploy/; the environment file is one the service's
 * own configuration loader accepts; the backup script copies an embedded store that is open and
 * being written, and the copy opens with every record. test/docs/deploy.e2e.test.ts checks the
 * unit and the HAProxy config with their tools and runs the service behind the sample.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { EmbeddedPaymentRecordStore } from "../../src/store/index.js";
import { ROOT } from "../cli/run.js";
import { variablesRead } from "../fixtures/config-variables.js";
import { deployFile, envFile, filledEnv } from "./deploy-samples.js";

const run = promisify(execFile);
const DOC = readFileSync(join(ROOT, "docs/deploy.md"), "utf8");
const SAMPLES = ["deploy/secsnap.env", "deploy/secsnap.service", "deploy/haproxy.cfg"];

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "secsnap-deploy-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** The body of every fenced code block of the page. */
function codeBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```[\w-]*\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

describe("docs/deploy.md", () => {
  it.each(SAMPLES)("shows %s as it is, byte for byte", (file) => {
    expect(DOC).toContain(`\`${file}\``);
    expect(codeBlocks(DOC)).toContain(deployFile(file));
  });

  it("is linked from the README and docs/operations.md", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toContain("docs/deploy.md");
    expect(readFileSync(join(ROOT, "docs/operations.md"), "utf8")).toContain("docs/deploy.md");
  });
});

describe("deploy/secsnap.env", () => {
  it("names only variables the service reads", () => {
    const read = new Set(variablesRead(loadConfig, filledEnv()));
    expect(Object.keys(envFile()).filter((name) => !read.has(name))).toEqual([]);
  });

  it("is accepted with its placeholders filled: production, loopback, the proxy trusted", () => {
    const config = loadConfig(filledEnv());
    expect(config).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      dataDir: "/var/lib/secsnap",
      payment: { networks: ["base"] },
    });
    expect(config.payment.payTo).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(config.publicUrl).toMatch(/^https:\/\//);
    expect(config.ops.trustedProxies.length).toBe(1);
  });
});

describe("deploy/backup-data-dir.mjs", () => {
  const script = join(ROOT, "deploy/backup-data-dir.mjs");
  const kept = (i: number) => ({
    payer: "0xpayer",
    issuedAt: "2026-01-01T00:00:00.000Z",
    answer: { status: 200, headers: {}, body: `{"n":${i}}` },
  });

  it("copies an open store being written; the copy opens with every report and the key", async () => {
    const dataDir = tempDir();
    const backup = join(tempDir(), "copy");
    const store = await EmbeddedPaymentRecordStore.open({ dataDir });
    writeFileSync(join(dataDir, "signing-key.json"), '{"kid":"k"}', { mode: 0o600 });
    try {
      for (let i = 0; i < 200; i++) await store.keepSnapshot(`s${i}`, kept(i), 60_000);
      // Writes go on while the copy is made.
      let writing = true;
      const more = (async () => {
        for (let i = 200; writing; i++) await store.keepSnapshot(`s${i}`, kept(i), 60_000);
      })();
      const { stdout } = await run(process.execPath, [script, dataDir, backup]);
      writing = false;
      await more;
      expect(stdout).toMatch(/copied/);
    } finally {
      await store.close();
    }
    const copy = await EmbeddedPaymentRecordStore.open({ dataDir: backup });
    try {
      for (const i of [0, 99, 199]) expect(await copy.snapshot(`s${i}`)).toEqual(kept(i));
    } finally {
      await copy.close();
    }
    expect(readFileSync(join(backup, "signing-key.json"), "utf8")).toBe('{"kid":"k"}');
  });

  it("refuses a directory without a database, and a backup directory that is not empty", async () => {
    const empty = tempDir();
    await expect(run(process.execPath, [script, empty, join(empty, "x")])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/holds no secsnap database/),
    });
    const dataDir = tempDir();
    await (await EmbeddedPaymentRecordStore.open({ dataDir })).close();
    writeFileSync(join(empty, "an-earlier-copy"), "");
    await expect(run(process.execPath, [script, dataDir, empty])).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/is not empty/),
    });
  });
});
