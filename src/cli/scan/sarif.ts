/**
 * `secsnap scan --format sarif`: SARIF 2.1.0 for code-scanning dashboards (docs/contract.md
 * §8.5), built with node-sarif-builder: one rule per finding id, one result per finding, its
 * level from the severity, the scanned URL as its location.
 */
import {
  SarifBuilder,
  SarifResultBuilder,
  SarifRuleBuilder,
  SarifRunBuilder,
} from "node-sarif-builder";
import { ALL_FINDINGS } from "../../snapshot/index.js";
import type { SnapshotResult } from "../../snapshot/index.js";
import { SERVICE_VERSION } from "../../version.js";
import { reportsOf, type ScanOutcome } from "./outcome.js";

type Severity = SnapshotResult["findings"][number]["severity"];

/** SARIF's levels: a high finding is an error, a medium one a warning, the rest notes. */
const LEVELS: Readonly<Record<Severity, "error" | "warning" | "note">> = {
  high: "error",
  medium: "warning",
  low: "note",
  info: "note",
};

/** Each finding id's fixed sentence and advice, for its rule. */
const DEFINITIONS = new Map(ALL_FINDINGS.map((d) => [d.id, d]));

function ruleOf(id: string, fallback: SnapshotResult["findings"][number]): SarifRuleBuilder {
  const def = DEFINITIONS.get(id) ?? fallback;
  return new SarifRuleBuilder().initSimple({
    ruleId: id,
    shortDescriptionText: def.message,
    fullDescriptionText: def.recommendation,
  });
}

/** The SARIF log of every report's findings, as a JSON string. */
export function sarifOf(outcomes: readonly ScanOutcome[]): string {
  const run = new SarifRunBuilder().initSimple({
    toolDriverName: "secsnap",
    toolDriverVersion: SERVICE_VERSION,
  });
  const reports = reportsOf(outcomes);
  const rules = new Set<string>();
  for (const report of reports) {
    for (const finding of report.findings) {
      if (!rules.has(finding.id)) run.addRule(ruleOf(finding.id, finding));
      rules.add(finding.id);
      run.addResult(
        new SarifResultBuilder().initSimple({
          level: LEVELS[finding.severity],
          messageText: `${finding.message} Fix: ${finding.recommendation}`,
          ruleId: finding.id,
          fileUri: report.final_url,
        }),
      );
    }
  }
  const log = new SarifBuilder();
  log.addRun(run);
  return log.buildSarifJsonString({ indent: true }) + "\n";
}
