/**
 * `secsnap scan --format markdown`: a pull-request comment (docs/contract.md §8.5). One summary
 * table, then each site's findings in a collapsed `<details>` with their cost and what capped the
 * grade. GitHub takes a comment of at most 65,536 characters: past that the details are cut.
 */
import { SEVERITIES, reportView } from "../../snapshot/index.js";
import type { SnapshotResult } from "../../snapshot/index.js";
import type { ScanOutcome } from "./outcome.js";

/** GitHub's limit on a comment body, less room for the line that says the rest was cut. */
const COMMENT_LIMIT = 65_536 - 200;

/** Text in a table cell: no line break, no column separator, no inline HTML. */
function cell(text: string): string {
  return text
    .replace(/[\r\n]+/g, " ")
    .replaceAll("|", "\\|")
    .replaceAll("<", "&lt;");
}

function severityCounts(report: SnapshotResult): string[] {
  return SEVERITIES.map((s) => String(report.findings.filter((f) => f.severity === s).length));
}

function summaryRow(outcome: ScanOutcome): string {
  if ("error" in outcome) {
    const why = `not scanned (${outcome.error.error_type}): ${outcome.error.error}`;
    return `| ${cell(outcome.url)} | — | — | ${cell(why)} | | | |`;
  }
  const { report } = outcome;
  return `| ${cell(report.normalized_url)} | **${report.grade}** | ${report.score} | ${severityCounts(report).join(" | ")} |`;
}

function details(report: SnapshotResult): string {
  const view = reportView(report);
  const lines = [
    `<details><summary>${cell(report.normalized_url)}: grade ${report.grade}, score ${report.score}/100, ${report.findings.length} findings</summary>`,
    "",
  ];
  if (view.grade.cappedBy.length > 0) {
    lines.push(
      `The score alone gives ${view.grade.scoreGrade}; the grade is capped by: ${view.grade.cappedBy.map(cell).join("; ")}.`,
      "",
    );
  }
  if (view.findings.length > 0) {
    lines.push("| Severity | Finding | Cost | Fix |", "| --- | --- | --- | --- |");
    for (const f of view.findings) {
      const cost = `−${f.points}${f.cap ? `, ${f.cap} at best` : ""}`;
      lines.push(
        `| ${f.severity} | ${cell(f.message)} (\`${f.id}\`) | ${cost} | ${cell(f.recommendation)} |`,
      );
    }
    lines.push("");
  }
  lines.push("</details>", "");
  return lines.join("\n");
}

/** The comment for every outcome, in their order. */
export function markdownOf(outcomes: readonly ScanOutcome[]): string {
  const head = [
    "## secsnap scan",
    "",
    "| Site | Grade | Score | High | Medium | Low | Info |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...outcomes.map(summaryRow),
    "",
  ].join("\n");
  let body = head;
  for (const outcome of outcomes) {
    if (!("report" in outcome)) continue;
    const part = details(outcome.report);
    if (body.length + part.length > COMMENT_LIMIT) {
      body += "\nThe details of the other sites are left out: run `secsnap scan` for them.\n";
      break;
    }
    body += "\n" + part;
  }
  return body;
}
