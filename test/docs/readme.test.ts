/**
 * The README's sample report is one the service could send: the response schema accepts it (every
 * field, §9's sections included), and rebuilding it from its own parts gives it back unchanged —
 * the same key order, `checks` equal to the fields, and the score and grade its findings earn.
 * Each finding is the registry's, with its check, severity and recommendation.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/report-schemas.js";
import { ALL_FINDINGS } from "../../src/snapshot/rules/registry.js";
import { buildReport, type SnapshotResult } from "../../src/snapshot/result.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const LEAD = "A successful report looks like this:";

/** The ```json block that follows the lead sentence. */
function sampleReport(): SnapshotResult {
  const at = README.indexOf(LEAD);
  expect(at, `README.md says "${LEAD}"`).toBeGreaterThan(-1);
  const block = /```json\n([\s\S]*?)```/.exec(README.slice(at));
  if (!block?.[1]) throw new Error("no ```json block after the sample report's lead");
  return JSON.parse(block[1]) as SnapshotResult;
}

it("the README's sample report passes the response schema", () => {
  expect(SnapshotResultSchema.safeParse(sampleReport()).error).toBeUndefined();
});

it("the README's sample report is what its parts build, score and grade included", () => {
  const sample = sampleReport();
  const { notes, checks, findings, score, grade, tls, dns, cross_origin, ...rest } = sample;
  const facts = {
    requested_url: rest.requested_url,
    normalized_url: rest.normalized_url,
    final_url: rest.final_url,
    fetched_at: rest.fetched_at,
    reachable: rest.reachable,
    final_status_code: rest.final_status_code,
    redirect_count: rest.redirect_count,
  };
  const rebuilt = buildReport(facts, checks, notes, findings, { tls, dns, cross_origin });
  expect({ score, grade }).toEqual({ score: rebuilt.score, grade: rebuilt.grade });
  expect(JSON.stringify(sample, null, 2)).toBe(JSON.stringify(rebuilt, null, 2));
});

it("the README's sample findings are the registry's", () => {
  for (const finding of sampleReport().findings) {
    const def = ALL_FINDINGS.find((d) => d.id === finding.id);
    expect(def, finding.id).toBeDefined();
    expect(finding).toMatchObject({
      check: def?.check,
      severity: def?.severity,
      recommendation: def?.recommendation,
    });
  }
});
