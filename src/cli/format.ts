import { CHECKS, SEVERITIES } from "../snapshot/index.js";
import type { SnapshotErrorBody, SnapshotResult } from "../snapshot/index.js";
import type { CliOutput } from "./command.js";

/**
 * Plain ANSI SGR codes rather than node:util styleText: across Node 20 releases styleText
 * sometimes checks process.stdout itself and sometimes not, and we decide once (useColor).
 */
const SGR = {
  bold: [1, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
} as const;
type Style = keyof typeof SGR;

/**
 * Colour only for a terminal, and never when NO_COLOR is set to a non-empty value
 * (https://no-color.org).
 */
export function useColor(stream: CliOutput, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR;
}

type Finding = SnapshotResult["findings"][number];
type Painter = (style: Style, text: string) => string;

function painter(color: boolean): Painter {
  return (style: Style, text: string) =>
    color ? `\u001b[${SGR[style][0]}m${text}\u001b[${SGR[style][1]}m` : text;
}

/** The readable terminal summary of a report. */
export function formatReport(result: SnapshotResult, color: boolean): string {
  const paint = painter(color);
  const status = result.reachable
    ? paint("green", `HTTP ${result.final_status_code}`)
    : paint("red", "unreachable");
  const redirects = `${result.redirect_count} redirect${result.redirect_count === 1 ? "" : "s"}`;
  const lines = [
    paint("bold", result.normalized_url),
    `  final: ${result.final_url} (${status}, ${redirects})`,
    `  fetched at ${result.fetched_at}`,
    "",
  ];
  for (const { field, label } of CHECKS) {
    const value = result[field];
    const mark =
      value === true
        ? paint("green", "✓ yes    ")
        : value === false
          ? paint("red", "✗ no     ")
          : paint("yellow", "? unknown");
    lines.push(`  ${mark}  ${label}`);
  }
  lines.push("", `  ${paint("bold", `Grade ${result.grade}`)} (score ${result.score}/100)`);
  lines.push(...findingLines(result.findings, paint));
  // Each finding's message is also a note: the notes list only what the findings do not say.
  const said = new Set(result.findings.map((f) => f.message));
  const notes = result.notes.filter((note) => !said.has(note));
  if (notes.length > 0) {
    lines.push("", paint("bold", "Notes:"), ...notes.map((note) => `  - ${note}`));
  }
  return lines.join("\n") + "\n";
}

const SEVERITY_STYLE: Readonly<Record<Finding["severity"], Style | null>> = {
  high: "red",
  medium: "yellow",
  low: "yellow",
  info: null,
};

/** The findings, most severe first, each with its recommendation on the next line. */
function findingLines(findings: readonly Finding[], paint: Painter): string[] {
  if (findings.length === 0) return [];
  const lines = ["", paint("bold", "Findings:")];
  for (const severity of SEVERITIES) {
    const style = SEVERITY_STYLE[severity];
    const tag = severity.toUpperCase().padEnd(6);
    for (const f of findings.filter((finding) => finding.severity === severity)) {
      lines.push(`  ${style ? paint(style, tag) : tag}  ${f.message} (${f.id})`);
      lines.push(`          fix: ${f.recommendation}`);
    }
  }
  return lines;
}

/** The readable terminal line of a SnapshotError. */
export function formatSnapshotError(body: SnapshotErrorBody, color: boolean): string {
  const paint = painter(color);
  return `${paint("red", `error (${body.error_type})`)}: ${body.error}\n  url: ${JSON.stringify(body.requested_url)}\n`;
}
