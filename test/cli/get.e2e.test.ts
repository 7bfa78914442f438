/**
 * `secsnap get <snapshot_id>` (docs/contract.md §8) on the real devnet: a report paid with
 * `secsnap pay`, or with the official x402 client, comes back to the same key as the paid 200's
 * bytes, and `secsnap verify` accepts it; another key is refused `not_payer`, an unknown id is
 * refused, each in one line with exit 1. Nothing more is charged, read on chain.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  challengeIn,
  devnetGate,
  paidSnapshot,
  postSnapshot,
  startCountingTarget,
  startGatedService,
  v2Proof,
} from "../fixtures/paid-devnet.js";
import { startPaidBed, type PaidBed } from "../fixtures/paid-service.js";
import { payerEnv, runCli } from "./run.js";

const PRICE_UNITS = 50_000n;

let bed: PaidBed;
let dir: string;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  bed = await startPaidBed();
  dir = mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "get-"));
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
  await bed?.close();
});

const env = (payerIndex?: number) => payerEnv(bed.devnet, payerIndex);
const get = (id: string, payerIndex?: number, ...options: string[]) =>
  runCli(["get", id, "--api", bed.service.url, ...options], env(payerIndex));

/** A report paid by the official x402 client as devnet payer `index`: its bytes and id. */
async function paidReport(index: number): Promise<{ body: string; id: string }> {
  const url = bed.target.url;
  const required = challengeIn(await postSnapshot(bed.service.url, url));
  const proof = await v2Proof(bed.payer(index), required);
  const paid = await postSnapshot(bed.service.url, url, proof.headers);
  expect(paid.status).toBe(200);
  const body = await paid.text();
  return { body, id: (JSON.parse(body) as { proof: { snapshot_id: string } }).proof.snapshot_id };
}

describe("secsnap get", () => {
  it("pay, then get with the same key: the report again, and verify accepts it; paid once", async () => {
    const payer = bed.payer(3).address;
    const before = await bed.balanceOf(payer);
    const paid = await runCli(["pay", bed.target.url, "--api", bed.service.url], env(3));
    expect(paid.code, paid.stderr).toBe(0);
    const id = /snapshot_id (\S+)/.exec(paid.stderr)?.[1] as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]{22,}$/);

    const again = await get(id, 3);
    expect(again.stderr).toBe("");
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual(JSON.parse(paid.stdout));

    const report = join(dir, "again.json");
    const kept = await get(id, 3, "--output", report);
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toBe("");
    expect(kept.stderr).toBe(`secsnap get: report kept in ${report}\n`);
    expect(readFileSync(report, "utf8")).toBe(again.stdout);
    const verified = await runCli(["verify", report, "--service", bed.service.url]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`snapshot ${id} issued`);
    expect(before - (await bed.balanceOf(payer))).toBe(PRICE_UNITS);
  });

  it("prints the paid 200's bytes, byte for byte", async () => {
    const { body, id } = await paidReport(4);
    const again = await get(id, 4);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe(body);
  });

  it("another key: exit 1, one line naming not_payer, no report", async () => {
    const { id } = await paidReport(5);
    const other = await get(id, 6);
    expect(other.code).toBe(1);
    expect(other.stdout).toBe("");
    expect(other.stderr).toMatch(/^secsnap get: the API answered 403 not_payer: .+\n$/);
    expect(other.stderr).toContain(bed.payer(6).address);
    // Without a key it signs in as the devnet payer, not the one that paid: refused too.
    const keyless = await get(id);
    expect(keyless.code).toBe(1);
    expect(keyless.stderr).toMatch(/^secsnap get: no SECSNAP_PRIVATE_KEY: signing in as anvil/);
    expect(keyless.stderr).toContain("403 not_payer");
  });

  it("a challenge bound to another origin than --api's: not signed, exit 1", async () => {
    // The service names https://secsnap.example in its challenges: asked at 127.0.0.1, the
    // client must not sign a message another origin could replay.
    const target = await startCountingTarget();
    opened.push(target);
    const elsewhere = await startGatedService({
      engine: target.engine,
      scope: target.scope,
      gate: { ...devnetGate(bed.devnet), publicUrl: "https://secsnap.example" },
    });
    opened.push(elsewhere);
    const paid = await paidSnapshot(elsewhere.url, target.url, bed.payer(2));
    expect(paid.status).toBe(200);
    const { proof } = (await paid.json()) as { proof: { snapshot_id: string } };
    const run = await runCli(["get", proof.snapshot_id, "--api", elsewhere.url], env(2));
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /^secsnap get: not signed in: SIWX challenge domain "secsnap.example" does not match .+\n$/,
    );
  });

  it("an unknown id, or a wrong --api: exit 1, one line, no stack", async () => {
    const unknown = await get("A".repeat(22), 3);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toMatch(/^secsnap get: the API answered 404 snapshot_not_found: .+\n$/);
    const wrongApi = await runCli(
      ["get", "A".repeat(22), "--api", `${bed.service.url}/elsewhere`],
      env(3),
    );
    expect(wrongApi.code).toBe(1);
    expect(wrongApi.stderr).toMatch(/^secsnap get: the API answered 404 not_found: .+\n$/);
    const noId = await runCli(["get", "--api", bed.service.url], env(3));
    expect(noId.code).toBe(1);
    expect(noId.stderr).toMatch(/^secsnap get: give exactly one <snapshot_id>/);
  });
});
