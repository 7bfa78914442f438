import { SEVERITIES, reportView } from "../snapshot/index.js";
import type {
  CheckState,
  ReportView,
  SectionView,
  SnapshotErrorBody,
  SnapshotResult,
} from "../snapshot/index.js";
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
type FindingView = ReportView["findings"][number];
type Painter = (style: Style, text: string) => string;

function painter(color: boolean): Painter {
  return (style: Style, text: string) =>
    color ? `\u001b[${SGR[style][0]}m${text}\u001b[${SGR[style][1]}m` : text;
}

/** Each judged state on the terminal: its mark and words, and its colour. */
const STATE_MARKS: Readonly<Record<CheckState, [string, Style]>> = {
  pass: ["✓ yes", "green"],
  flawed: ["! flawed", "yellow"],
  fail: ["✗ no", "red"],
  not_judged: ["– not judged", "yellow"],
  unknown: ["? unknown", "yellow"],
};
const MARK_WIDTH = Math.max(...Object.values(STATE_MARKS).map(([text]) => text.length));

/**
 * The readable terminal summary of a report (docs/contract.md §8.5, the human view): each check as
 * the findings judge it, the grade and what capped it, each finding's cost, the sections.
 */
export function formatReport(result: SnapshotResult, color: boolean): string {
  const paint = painter(color);
  const view = reportView(result);
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
  for (const check of view.checks) {
    const [text, style] = STATE_MARKS[check.state];
    const why = check.state === "flawed" ? `: ${check.findings.map((f) => f.id).join(", ")}` : "";
    lines.push(`  ${paint(style, text.padEnd(MARK_WIDTH))}  ${check.label}${why}`);
  }
  lines.push("", ...gradeLines(view.grade, paint));
  lines.push(...findingLines(view.findings, paint));
  for (const section of view.sections) lines.push("", ...sectionLines(section, paint));
  // Each finding's message is also a note: the notes list only what the findings do not say.
  const said = new Set(result.findings.map((f) => f.message));
  const notes = result.notes.filter((note) => !said.has(note));
  if (notes.length > 0) {
    lines.push("", paint("bold", "Notes:"), ...notes.map((note) => `  - ${note}`));
  }
  return lines.join("\n") + "\n";
}

/** "Grade D (score 45/100)", then why it is not the score's own grade. */
function gradeLines(grade: ReportView["grade"], paint: Painter): string[] {
  const lines = [`  ${paint("bold", `Grade ${grade.grade}`)} (score ${grade.score}/100)`];
  if (grade.cappedBy.length > 0) {
    lines.push(`  The score alone gives ${grade.scoreGrade}; the grade is capped by:`);
    lines.push(...grade.cappedBy.map((why) => `    - ${why}`));
  }
  return lines;
}

/** A section as a two-column table under its title. */
function sectionLines(section: SectionView, paint: Painter): string[] {
  const width = Math.max(...section.rows.map(([label]) => label.length));
  return [
    paint("bold", `${section.title}:`),
    ...section.rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
  ];
}

const SEVERITY_STYLE: Readonly<Record<Finding["severity"], Style | null>> = {
  high: "red",
  medium: "yellow",
  low: "yellow",
  info: null,
};

/** What a finding cost: "−25 points", and the grade it caps. */
function costOf(f: FindingView): string {
  const points = f.points === 0 ? "no points" : `−${f.points} point${f.points === 1 ? "" : "s"}`;
  return f.cap ? `${points}, grade ${f.cap} at best` : points;
}

/** The findings, most severe first, each with its cost and its recommendation on the next line. */
function findingLines(findings: readonly FindingView[], paint: Painter): string[] {
  if (findings.length === 0) return [];
  const lines = ["", paint("bold", "Findings:")];
  for (const severity of SEVERITIES) {
    const style = SEVERITY_STYLE[severity];
    const tag = severity.toUpperCase().padEnd(6);
    for (const f of findings.filter((finding) => finding.severity === severity)) {
      lines.push(`  ${style ? paint(style, tag) : tag}  ${f.message} (${f.id}) [${costOf(f)}]`);
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
