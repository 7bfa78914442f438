/**
 * The embedded store (src/store/embedded.ts): the contract (test/store/contract.ts), and what
 * only a database on local disk promises: records survive close and reopen, and a SIGKILL right
 * after a write resolved; one process per DATA_DIR, refused in one line naming DATA_DIR (an owner
 * that is a zombie counts as gone); leases of a previous run are cleared at open; expired records
 * are deleted, not only hidden.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config-error.js";
import { EmbeddedPaymentRecordStore, type PaymentRecord } from "../../src/store/index.js";
import { STORE_CHILD } from "../fixtures/store-child.js";
import { storeContract } from "./contract.js";

const dirs: string[] = [];
function freshDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "secsnap-store-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

storeContract("embedded", (options) =>
  EmbeddedPaymentRecordStore.open({ dataDir: freshDir(), ...options }),
);

const init = { fingerprint: "fp-1", version: 2 as const };
const report = { status: 200, headers: { "content-type": "application/json" }, body: '{"a":1}' };

/** Spawns the store child; resolves with it once it printed `until` (or rejects with its stderr). */
function child(
  args: string[],
  until: string,
): Promise<{ child: ChildProcess; stderr: () => string }> {
  const proc = spawn(process.execPath, ["--import", "tsx", STORE_CHILD, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    proc.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes(until)) resolve({ child: proc, stderr: () => stderr });
    });
    proc.once("exit", (code) => reject(Object.assign(new Error(stderr), { code })));
  });
}

/** Runs the store child to its exit; its code and stderr. */
function childExit(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, ["--import", "tsx", STORE_CHILD, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  proc.stdout.resume();
  return new Promise((resolve) => proc.once("exit", (code) => resolve({ code, stderr })));
}

function killed(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once("exit", () => resolve());
    proc.kill("SIGKILL");
  });
}

/** Resolves once `proc` printed `text` on its stdout. */
function printed(proc: ChildProcess, text: string): Promise<void> {
  let stdout = "";
  return new Promise((resolve, reject) => {
    proc.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stdout.includes(text)) resolve();
    });
    proc.once("exit", () => reject(new Error(`exited before printing ${text}`)));
  });
}

/** Resolves once /proc/<pid>/stat shows `state` (field 3): a signal is delivered asynchronously. */
async function processState(pid: number, state: string): Promise<void> {
  const read = () => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  };
  while (read() !== state) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("embedded payment record store", () => {
  it("keeps records across close and reopen, without the old leases", async () => {
    const dir = freshDir();
    const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    await store.acquire("k", "a", 60_000, init);
    const record = (await store.get("k"))!;
    const written: PaymentRecord = { ...record, state: "settling", report, transaction: "0xabc" };
    expect(await store.write("k", "a", written, 3_600_000)).toBe(true);
    await store.bindPaymentId("id", { authorizationKey: "k", fingerprint: "fp-1" }, 3_600_000);
    await store.close();

    const again = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    try {
      const stored = (await again.get("k"))!;
      expect(stored).toMatchObject({ state: "settling", report, transaction: "0xabc" });
      // The lease was a previous run's: cleared, so the record is the reconciler's and anyone's.
      expect(stored.lease).toBeUndefined();
      expect((await again.unresolved(10)).map((r) => r.key)).toEqual(["k"]);
      expect((await again.acquire("k", "b", 60_000, init)).held).toBe(false);
      expect(
        await again.bindPaymentId("id", { authorizationKey: "other", fingerprint: "x" }, 60_000),
      ).toEqual({ authorizationKey: "k", fingerprint: "fp-1" });
    } finally {
      await again.close();
    }
  });

  it("a record whose write resolved survives a SIGKILL of the process right after", async () => {
    const dir = freshDir();
    const { child: writer } = await child([dir, "write", "paid"], "written");
    await killed(writer); // SIGKILL the moment the write's promise resolved
    expect(writer.signalCode).toBe("SIGKILL");

    // The dead process's lock is stale: this process opens the directory.
    const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    try {
      const stored = await store.get("paid");
      expect(stored).toMatchObject({
        state: "report_kept",
        report: { status: 200, headers: { "content-type": "application/json" }, body: "{}" },
        fingerprint: "fp-child",
      });
      expect(stored!.lease).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it("a second process on the same DATA_DIR fails at start with one line naming DATA_DIR", async () => {
    const dir = freshDir();
    const { child: first } = await child([dir, "open"], "opened");
    try {
      const second = await childExit([dir, "open"]);
      expect(second.code).toBe(1);
      const lines = second.stderr.trim().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^DATA_DIR is in use by another secsnap process \(pid \d+\)/);
      expect(lines[0]).toContain(String(first.pid));
      expect(lines[0]).toContain(dir);

      // And so does this process, while the first one lives.
      await expect(EmbeddedPaymentRecordStore.open({ dataDir: dir })).rejects.toThrow(ConfigError);
    } finally {
      await killed(first);
    }
    // Once it is gone, the directory is free again.
    const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    await store.close();
  });

  it("a crashed owner that stays a zombie (its parent never reaps it) leaves the directory free", async () => {
    const dir = freshDir();
    // The owner runs under a shell that never waits for it while it reads its input: once the
    // owner is killed it stays a zombie, as an orphan does under a PID 1 that does not reap.
    const owner = [process.execPath, "--import", "tsx", STORE_CHILD, dir, "open"];
    const parent = spawn("sh", ["-c", '"$@" & read line; wait', "sh", ...owner], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    try {
      await printed(parent, "opened");
      const lock = readFileSync(join(dir, "secsnap.lock"), "utf8");
      const { pid } = JSON.parse(lock) as { pid: number };
      process.kill(pid, "SIGKILL");
      await processState(pid, "Z");

      const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
      await store.close();
    } finally {
      parent.stdin!.end("reap\n"); // the shell then waits for its child and exits
      await new Promise((resolve) => parent.once("close", resolve));
    }
  });

  it("a second open in the same process is refused; after close the directory opens again", async () => {
    const dir = freshDir();
    const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    const error = await EmbeddedPaymentRecordStore.open({ dataDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe("DATA_DIR");
    await store.close();
    const again = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    await again.close();
  });

  it("a DATA_DIR that cannot be created fails with one line naming DATA_DIR", async () => {
    const file = join(freshDir(), "a-file");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(file, "");
    const error = await EmbeddedPaymentRecordStore.open({ dataDir: join(file, "sub") }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^DATA_DIR cannot be created/);
    expect((error as Error).message).not.toContain("\n");
  });

  it("the sweep deletes expired records and bindings from disk, not only from view", async () => {
    let now = 1_000_000;
    const dir = freshDir();
    const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir, now: () => now });
    try {
      await store.acquire("old", "a", 1_000, init);
      const record = (await store.get("old"))!;
      await store.write("old", "a", { ...record, state: "settling" }, 5_000);
      await store.release("old", "a");
      await store.acquire("young", "a", 1_000, init);
      await store.write("young", "a", { ...record, key: "young", state: "settled" }, 60_000);
      await store.bindPaymentId("id-old", { authorizationKey: "old", fingerprint: "f" }, 5_000);

      now += 10_000;
      expect(await store.sweep()).toBe(2);
      now -= 10_000; // back in time: deleted records stay gone, the young one stays
      expect(await store.get("old")).toBeUndefined();
      expect(await store.unresolved(10)).toEqual([]);
      expect(await store.get("young")).toMatchObject({ state: "settled" });
      expect(
        await store.bindPaymentId("id-old", { authorizationKey: "new", fingerprint: "f" }, 5_000),
      ).toEqual({ authorizationKey: "new", fingerprint: "f" });
      expect(await store.sweep()).toBe(0);
    } finally {
      await store.close();
    }
  });

  it("kept snapshots past their retention are deleted from disk too, young ones stay after a reopen; nonces are the process's own, refused after it", async () => {
    let now = 1_000_000;
    const dir = freshDir();
    const kept = { payer: "0xpayer", issuedAt: "2026-01-01T00:00:00.000Z", answer: report };
    let store = await EmbeddedPaymentRecordStore.open({ dataDir: dir, now: () => now });
    try {
      await store.keepSnapshot("old", kept, 5_000);
      await store.keepSnapshot("young", kept, 60_000);
      await store.issueNonce("nonce-old", 5_000);
      await store.issueNonce("nonce-young", 60_000);
      await store.issueNonce("nonce-kept", 60_000);
      now += 10_000;
      // Only the snapshot is on disk: nonces never are.
      expect(await store.sweep()).toBe(1);
      now -= 10_000; // back in time: what was deleted stays gone
      expect(await store.snapshot("old")).toBeUndefined();
      now += 10_000;
      expect(await store.takeNonce("nonce-old")).toBe(false);
      expect(await store.takeNonce("nonce-young")).toBe(true);
      await store.close();
      store = await EmbeddedPaymentRecordStore.open({ dataDir: dir, now: () => now });
      expect(await store.snapshot("young")).toEqual(kept);
      // Issued by the process before: unknown now, so refused (and never taken twice).
      expect(await store.takeNonce("nonce-kept")).toBe(false);
    } finally {
      await store.close();
    }
  });

  it("a signing key past its last report's retention is deleted from disk; a pushed-on one stays, after a reopen as well", async () => {
    let now = 1_000_000;
    const dir = freshDir();
    const retired = { kty: "OKP", crv: "Ed25519", x: "x-retired", kid: "retired" };
    const pushed = { kty: "OKP", crv: "Ed25519", x: "x-pushed", kid: "pushed" };
    let store = await EmbeddedPaymentRecordStore.open({ dataDir: dir, now: () => now });
    try {
      await store.rememberSigningKey(retired, 5_000);
      await store.rememberSigningKey(pushed, 5_000);
      await store.rememberSigningKey(pushed, 60_000);
      now += 10_000;
      expect(await store.sweep()).toBe(1); // the retired key: the pushed one left its first expiry
      now -= 10_000; // back in time: what was deleted stays gone
      expect(await store.signingKeys()).toEqual([pushed]);
      await store.close();
      store = await EmbeddedPaymentRecordStore.open({ dataDir: dir, now: () => now });
      expect(await store.signingKeys()).toEqual([pushed]);
    } finally {
      await store.close();
    }
  });

  it("each new record or binding deletes expired ones, so the store keeps pace with its writes between sweeps", async () => {
    let now = 1_000_000;
    const store = await EmbeddedPaymentRecordStore.open({
      dataDir: freshDir(),
      now: () => now,
      sweepIntervalMs: 3_600_000, // the timer never runs here: only the writes delete
    });
    try {
      const bind = (id: string, ttlMs: number) =>
        store.bindPaymentId(id, { authorizationKey: id, fingerprint: "f" }, ttlMs);
      for (let i = 0; i < 60; i++) await bind(`old-${i}`, 5_000);
      for (let i = 0; i < 40; i++) {
        await store.acquire(`claim-${i}`, "a", 1_000, init);
        await store.release(`claim-${i}`, "a"); // a claim that learnt nothing is deleted
      }
      await store.acquire("kept", "a", 1_000, init);
      const record = (await store.get("kept"))!;
      await store.write("kept", "a", { ...record, state: "free", releases: 1 }, 5_000);
      await store.release("kept", "a");

      now += 10_000; // all 61 expired
      for (let i = 0; i < 20; i++) await bind(`new-${i}`, 60_000);
      for (let i = 0; i < 11; i++) await store.acquire(`fresh-${i}`, "a", 1_000, init);
      // 31 writes deleted 2 expired entries each: nothing expired is left for the timer.
      expect(await store.sweep()).toBe(0);
      expect(await bind("new-0", 60_000)).toEqual({ authorizationKey: "new-0", fingerprint: "f" });
    } finally {
      await store.close();
    }
  });

  it("writable is false once the store is closed, and the lock file is gone", async () => {
    const dir = freshDir();
    const store = await EmbeddedPaymentRecordStore.open({ dataDir: dir });
    expect(await store.writable()).toBe(true);
    expect(readdirSync(dir)).toContain("secsnap.lock");
    await store.close();
    expect(await store.writable()).toBe(false);
    expect(readdirSync(dir)).not.toContain("secsnap.lock");
  });
});
