/**
 * The import graph of the paid call (docs/payment.md "One paid call"): the core and what it
 * stands on never import a door, and the layer lint says so — checked here by the lint itself,
 * on the tree as it is and with one import back up added.
 */
import { execFile } from "node:child_process";
import { rm, writeFile } from "node:fs/promises";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url);
const PROBE = new URL("src/payment/ledger/layer-probe.ts", ROOT);

/** The rules the layer lint finds broken in src/payment. */
async function brokenRules(): Promise<string[]> {
  const cruise = run(
    process.execPath,
    [
      "node_modules/dependency-cruiser/bin/dependency-cruise.mjs",
      "src/payment",
      "--config",
      ".dependency-cruiser.mjs",
      "--output-type",
      "json",
    ],
    { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }));
  const { stdout } = await cruise;
  const report = JSON.parse(stdout) as { summary: { violations: { rule: { name: string } }[] } };
  return report.summary.violations.map((v) => v.rule.name);
}

it("the core never imports a door: the tree holds, and an import back up is an error", async () => {
  expect(await brokenRules()).toEqual([]);
  await writeFile(PROBE, 'export { whenSent } from "../doors/http-route.js";\n');
  try {
    expect(await brokenRules()).toContain("doors-above-the-paid-call");
  } finally {
    await rm(PROBE, { force: true });
  }
}, 120_000);
