/**
 * Reports as one self-contained, printable HTML document (`secsnap scan --format html`,
 * docs/contract.md §8.5): the page's own rendering of a report (home.ts), its stylesheet inline
 * and allowed by its hash, no script and nothing fetched from anywhere.
 */
import { raw } from "hono/html";
import type { SnapshotResult } from "../../snapshot/index.js";
import { CSS, CSS_HASH, h, renderReport } from "./home.js";

/** A URL that got no report, and why (the SnapshotError the API would answer). */
export interface NotScanned {
  url: string;
  errorType: string;
  message: string;
}

function notScannedSection(failed: readonly NotScanned[]) {
  if (failed.length === 0) return "";
  return h`<section class="result" data-not-scanned>
<h2>Not scanned</h2>
<ul>${failed.map(
    (f) =>
      h`<li><code>${f.url}</code>: <span class="error">${f.errorType}</span> ${f.message}</li>`,
  )}</ul>
</section>`;
}

function reportSection(report: SnapshotResult) {
  const status = report.reachable ? `HTTP ${report.final_status_code}` : "unreachable";
  return h`<section class="result" data-report="${report.normalized_url}">
<h2>${report.normalized_url}</h2>
<p class="muted">Final URL <code>${report.final_url}</code> (${status}, ${report.redirect_count}
redirects), fetched at ${report.fetched_at}.</p>
${renderReport(report, "h3")}
</section>`;
}

/**
 * The whole document, as a string: one section per report, in the order given, then the URLs
 * that got none.
 */
export function renderReportDocument(
  reports: readonly SnapshotResult[],
  failed: readonly NotScanned[],
  generatedAt: string,
): string {
  const title =
    reports.length === 1 && failed.length === 0
      ? `secsnap report of ${reports[0]?.normalized_url ?? ""}`
      : `secsnap reports of ${reports.length + failed.length} sites`;
  const doc = h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${CSS_HASH}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title}</title>
<style>${raw(CSS)}</style>
</head>
<body>
<main>
<h1>${title}</h1>
<p class="muted">Made by <code>secsnap scan</code> at ${generatedAt}.</p>
${reports.map(reportSection)}
${notScannedSection(failed)}
</main>
</body>
</html>
`;
  return String(doc);
}
