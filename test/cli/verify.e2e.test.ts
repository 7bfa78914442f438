/**
 * `secsnap verify <report.json>` on a report really paid on the devnet: exit 0 saying what it
 * verified against the service's JWKS (from --service or --jwks), exit 1 saying why for a report
 * changed after signing, another service's keys, an unpaid report or keys it cannot read.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { challengeIn, postSnapshot, v2Proof } from "../fixtures/paid-devnet.js";
import { startPaidBed, type PaidBed } from "../fixtures/paid-service.js";
import { runCli } from "./run.js";

let bed: PaidBed;
let dir: string;
/** The paid 200's body, as served. */
let paidBody: string;

beforeAll(async () => {
  bed = await startPaidBed();
  dir = mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "verify-"));
  const url = bed.target.url;
  const required = challengeIn(await postSnapshot(bed.service.url, url));
  const paid = await postSnapshot(
    bed.service.url,
    url,
    (await v2Proof(bed.payer(6), required)).headers,
  );
  expect(paid.status).toBe(200);
  paidBody = await paid.text();
}, 120_000);

afterAll(async () => {
  await bed?.close();
});

/** `text` written to a file of its own in the scratch directory. */
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("secsnap verify", () => {
  it("exit 0 for the paid report, against the service's keys or a JWKS file", async () => {
    const report = file("report.json", paidBody);
    const { proof } = JSON.parse(paidBody) as { proof: Record<string, string> };
    const byService = await runCli(["verify", report, "--service", bed.service.url]);
    expect(byService.stderr).toBe("");
    expect(byService.code).toBe(0);
    expect(byService.stdout).toContain(`report_sha256 ${proof.report_sha256} matches`);
    expect(byService.stdout).toContain(`signed by key ${proof.kid}`);
    expect(byService.stdout).toContain(`transaction ${proof.transaction}`);
    const jwks = await (await fetch(`${bed.service.url}/.well-known/jwks.json`)).text();
    const byFile = await runCli(["verify", report, "--jwks", file("jwks.json", jwks)]);
    expect(byFile.code).toBe(0);
  });

  it("exit 1 for a report changed after signing: a field, the proof's payer, its signature", async () => {
    const paid = JSON.parse(paidBody) as { score: number; proof: Record<string, string> };
    const cases = {
      "score.json": [
        { ...paid, score: paid.score === 100 ? 99 : paid.score + 1 },
        /report_sha256 differs/,
      ],
      "payer.json": [
        { ...paid, proof: { ...paid.proof, payer: `0x${"ab".repeat(20)}` } },
        /signature/,
      ],
      "jws.json": [
        {
          ...paid,
          proof: {
            ...paid.proof,
            jws: paid.proof.jws!.replace(
              /\.\.(.)/,
              (_m, c: string) => `..${c === "A" ? "B" : "A"}`,
            ),
          },
        },
        /signature/,
      ],
    } as const;
    for (const [name, [changed, why]] of Object.entries(cases)) {
      const run = await runCli([
        "verify",
        file(name, JSON.stringify(changed)),
        "--service",
        bed.service.url,
      ]);
      expect(run.code, name).toBe(1);
      expect(run.stdout, name).toBe("");
      expect(run.stderr, name).toMatch(/^not verified: /);
      expect(run.stderr, name).toMatch(why);
    }
  });

  it("exit 1 against another service's keys, for the unpaid demo, and for keys it cannot read", async () => {
    const { publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
    const { proof } = JSON.parse(paidBody) as { proof: { kid: string } };
    // Another key under the same kid: the signature, not the name, decides.
    const other = { keys: [{ ...(await exportJWK(publicKey)), kid: proof.kid, alg: "EdDSA" }] };
    const report = file("report.json", paidBody);
    const wrongKey = await runCli([
      "verify",
      report,
      "--jwks",
      file("other.json", JSON.stringify(other)),
    ]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/^not verified: signature/);

    const demo = await (await fetch(`${bed.service.url}/demo/snapshot`)).text();
    const unpaid = await runCli(["verify", file("demo.json", demo), "--service", bed.service.url]);
    expect(unpaid.code).toBe(1);
    expect(unpaid.stderr).toMatch(/^not verified: no proof/);

    const unreadable = await runCli(["verify", report, "--jwks", join(dir, "absent.json")]);
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toMatch(/^not verified: cannot read the keys/);
  });

  it("exit 1 with its usage when it is not told whose keys to trust", async () => {
    const run = await runCli(["verify", file("report.json", paidBody)]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/--service URL or --jwks FILE\|URL/);
    expect(run.stderr).toContain("Usage: secsnap verify");
  });
});
