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

/** Human labels of the report fields, in report order. */
const CHECK_LABELS: ReadonlyArray<readonly [keyof SnapshotResult, string]> = [
  ["https_ok", "HTTPS with a valid certificate"],
  ["hsts_present", "Strict-Transport-Security (HSTS)"],
  ["csp_present", "Content-Security-Policy (CSP)"],
  ["x_frame_options_present", "X-Frame-Options"],
  ["x_content_type_options_present", "X-Content-Type-Options"],
  ["referrer_policy_present", "Referrer-Policy"],
  ["permissions_policy_present", "Permissions-Policy"],
  ["security_txt_present", "security.txt"],
  ["robots_txt_present", "robots.txt"],
  ["sitemap_xml_present", "sitemap.xml"],
];

/**
 * Colour only for a terminal, and never when NO_COLOR is set to a non-empty value
 * (https://no-color.org).
 */
export function useColor(stream: CliOutput, env: NodeJS.ProcessEnv): boolean {
  return Boolean(stream.isTTY) && !env.NO_COLOR;
}

function painter(color: boolean) {
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
  for (const [field, label] of CHECK_LABELS) {
    const value = result[field];
    const mark =
      value === true
        ? paint("green", "✓ yes    ")
        : value === false
          ? paint("red", "✗ no     ")
          : paint("yellow", "? unknown");
    lines.push(`  ${mark}  ${label}`);
  }
  if (result.notes.length > 0) {
    lines.push("", paint("bold", "Notes:"), ...result.notes.map((note) => `  - ${note}`));
  }
  return lines.join("\n") + "\n";
}

/** The readable terminal line of a SnapshotError. */
export function formatSnapshotError(body: SnapshotErrorBody, color: boolean): string {
  const paint = painter(color);
  return `${paint("red", `error (${body.error_type})`)}: ${body.error}\n  url: ${JSON.stringify(body.requested_url)}\n`;
}
