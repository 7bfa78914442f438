/**
 * GET /: the page for people (docs/http-api.md "The page and the reference"), and what its scan
 * form answers (scan-form.ts). Server-rendered with hono's `html` template, which escapes every
 * interpolated string (a report carries a hostile site's strings); no script, no external
 * resource, and the one inline stylesheet allowed by its hash.
 */
import { createHash } from "node:crypto";
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { NETWORK_IDS } from "../../config.js";
import { PATHS } from "../../routes.js";
import {
  REPORT_COVERAGE,
  SEVERITIES,
  reportView,
  type CheckState,
  type ReportView,
  type SnapshotResult,
} from "../../snapshot/index.js";

type Finding = SnapshotResult["findings"][number];
type FindingView = ReportView["findings"][number];
type GradeView = ReportView["grade"];
type Html = HtmlEscapedString;

/** hono's `html`, typed for what it returns here: nothing interpolated is a promise. */
export function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  const out = html(strings, ...values);
  if (out instanceof Promise) throw new TypeError("asynchronous content in the page");
  return out;
}

/** What the page states of this deployment: the same values the 402 challenge carries. */
export interface PageFacts {
  priceUsdc: string;
  /** The offered networks, as CAIP-2 ids (the challenge's `network`). */
  networks: readonly string[];
  /** The networks are the embedded local devnet (docs/contract.md §7.7). */
  devnet: boolean;
  /** The service's base URL, as the sample commands use it. */
  serviceUrl: string;
  /** The report shown: the demo. */
  report: SnapshotResult;
  /** Devnet mode: the funded account the samples and the scan form pay from (public test key). */
  devnetPayer?: { index: number; address: string; privateKey: string };
}

/** What the scan form produced, shown under it. */
export type ScanOutcome =
  | {
      kind: "report";
      url: string;
      report: SnapshotResult;
      /** The settlement's transaction and payer, from the PAYMENT-RESPONSE receipt. */
      receipt?: { transaction: string; payer?: string };
      /** The report's proof, given only once it verified against the service's own keys. */
      verified?: { snapshotId: string; kid: string };
    }
  | { kind: "challenge"; url: string; offers: readonly ChallengeOffer[] }
  | { kind: "refused"; url: string; status: number; message: string; errorType?: string };

/** One offer of a decoded PAYMENT-REQUIRED challenge. */
export interface ChallengeOffer {
  network: string;
  /** USDC units (6 decimals). */
  amount: string;
  asset: string;
  payTo: string;
}

const NETWORK_NAMES: Readonly<Record<string, string>> = {
  [NETWORK_IDS.base]: "Base",
  [NETWORK_IDS["base-sepolia"]]: "Base Sepolia",
};

export const CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;--card:#f6f8fa;--line:#d0d7de;
--ok:#1a7f37;--bad:#cf222e;--unk:#9a6700;--accent:#0969da;--high:#cf222e;--medium:#bc4c00;--low:#9a6700;--info:#57606a}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9da7b3;--card:#161b22;--line:#30363d;
--ok:#3fb950;--bad:#f85149;--unk:#d29922;--accent:#58a6ff;--high:#f85149;--medium:#f0883e;--low:#d29922;--info:#9da7b3}}
*{box-sizing:border-box}
body{margin:0;overflow-wrap:anywhere;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:52rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.8rem;margin:.5rem 0}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid var(--line);padding-bottom:.3rem}
a{color:var(--accent)}p,li{overflow-wrap:anywhere}.muted{color:var(--muted)}
code,pre{font:.9em/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.75rem;white-space:pre-wrap;overflow-wrap:anywhere}
.grade{display:flex;gap:1rem;align-items:center;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem}
.grade strong{font-size:2.4rem;line-height:1}
ul.checks,ul.findings{list-style:none;padding:0;margin:.5rem 0}
ul.checks li{display:flex;gap:.6rem;padding:.25rem 0;border-bottom:1px solid var(--line)}
.mark{width:1.4rem;text-align:center;font-weight:700}.ok{color:var(--ok)}.bad{color:var(--bad)}.unk{color:var(--unk)}
form.scan{display:flex;flex-wrap:wrap;gap:.5rem;margin:.5rem 0}
form.scan label{flex-basis:100%}
form.scan input{flex:1 1 16rem;min-width:0;font:inherit;padding:.45rem .6rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
form.scan button{font:inherit;padding:.45rem 1rem;border:1px solid var(--accent);border-radius:6px;background:var(--accent);color:#fff;cursor:pointer}
.result{border:1px solid var(--line);border-radius:8px;padding:.25rem 1rem 1rem;margin:1rem 0}
.error{color:var(--bad);font-weight:600}
.verified{display:inline-block;color:var(--ok);border:1px solid var(--ok);border-radius:6px;padding:.1rem .5rem;font-weight:600}
nav.top{display:flex;flex-wrap:wrap;gap:.4rem 1rem}
dl.offer{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem}dl.offer dd{margin:0;overflow-wrap:anywhere}
ul.findings li{background:var(--card);border:1px solid var(--line);border-left-width:4px;border-radius:6px;padding:.5rem .75rem;margin:.5rem 0}
.sev{font-size:.8rem;font-weight:700;text-transform:uppercase}
.sev-high{border-left-color:var(--high)}.sev-high .sev{color:var(--high)}
.sev-medium{border-left-color:var(--medium)}.sev-medium .sev{color:var(--medium)}
.sev-low{border-left-color:var(--low)}.sev-low .sev{color:var(--low)}
.sev-info{border-left-color:var(--info)}.sev-info .sev{color:var(--info)}
.flawed{color:var(--medium)}.cost{float:right;color:var(--muted);font-size:.85rem}.cap{display:block}
table.section{border-collapse:collapse;width:100%}
table.section th,table.section td{text-align:left;vertical-align:top;padding:.25rem .5rem;border-bottom:1px solid var(--line)}
table.section th{font-weight:600;width:40%}
@media print{:root{--bg:#fff;--fg:#000;--card:#fff}form.scan,nav.top{display:none}main{max-width:none;padding:0}
ul.findings li,table.section tr{break-inside:avoid}}
`;

export const CSS_HASH = `'sha256-${createHash("sha256").update(CSS).digest("base64")}'`;

/** The page may be kept an hour, like the demo it shows. */
export const PAGE_CACHE_CONTROL = "public, max-age=3600";

/** The six security headers of every page, so our own report of ourselves has nothing to say. */
export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "strict-transport-security": "max-age=63072000; includeSubDomains; preload",
  "content-security-policy": [
    "default-src 'none'",
    `style-src ${CSS_HASH}`,
    // The icon (/favicon.svg), from this origin.
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    // The scan form posts to this origin only.
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  // Not no-referrer: under it a browser sends `Origin: null` with the page's own form post, and
  // the form is taken only from the page's own origin (scan-form.ts). Nothing leaves this origin.
  "referrer-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

const SEVERITY_TITLES: Readonly<Record<Finding["severity"], string>> = {
  high: "High",
  medium: "Medium",
  low: "Low",
  info: "Info",
};

/** Text with `inline code` as <code>; every part escaped. */
function prose(text: string): Html[] {
  return text
    .split("`")
    .map((part, i) => (i % 2 === 1 && part !== "" ? h`<code>${part}</code>` : h`${part}`));
}

/** Each judged state's mark, its class and what it means (docs/http-api.md "The page"). */
const STATE_MARKS: Readonly<Record<CheckState, [mark: string, css: string, title: string]>> = {
  pass: ["✓", "ok", "yes"],
  flawed: ["!", "flawed", "present, but a finding says it is ignored or weak"],
  fail: ["✗", "bad", "no"],
  not_judged: ["–", "unk", "not held against the site (see the notes)"],
  unknown: ["?", "unk", "could not be determined"],
};

/** Every check the report carries, in its order, as the findings judge it. */
function checksList(view: ReportView): Html {
  return h`<ul class="checks">
    ${view.checks.map(({ name, label, state, findings }) => {
      const [text, css, title] = STATE_MARKS[state];
      const ids = state === "flawed" ? findings.map((f) => f.id).join(", ") : "";
      return h`<li data-check="${name}" data-state="${state}"><span class="mark ${css}" title="${title}">${text}</span>
        <span>${label}${ids ? h` <span class="muted">(${ids})</span>` : ""}</span></li>`;
    })}
  </ul>`;
}

/** "−25 points", and the grade a finding caps. */
function costText(f: FindingView): string {
  const points = f.points === 0 ? "no points" : `−${f.points} point${f.points === 1 ? "" : "s"}`;
  return f.cap ? `${points}, grade ${f.cap} at best` : points;
}

function findingsList(findings: readonly FindingView[]): Html {
  if (findings.length === 0) return h`<p>No findings.</p>`;
  const rank = (f: FindingView) => {
    const i = SEVERITIES.indexOf(f.severity);
    return i < 0 ? SEVERITIES.length : i;
  };
  const bySeverity = [...findings].sort((a, b) => rank(a) - rank(b));
  return h`<ul class="findings">
    ${bySeverity.map(
      (f) => h`<li class="sev-${f.severity}" data-finding="${f.id}">
        <span class="sev">${SEVERITY_TITLES[f.severity] ?? f.severity}</span> <code>${f.id}</code>
        <span class="cost" data-points="${f.points}">${costText(f)}</span>
        <p>${prose(f.message)}</p>
        <p class="muted">Fix: ${prose(f.recommendation)}</p>
      </li>`,
    )}
  </ul>`;
}

/** A report's own sections (rules add them: tls, dns…), each a table under its title. */
function sectionsList(view: ReportView, level: "h3" | "h4"): Html[] {
  return view.sections.map(
    ({ key, title, rows }) => h`${level === "h3" ? h`<h3>${title}</h3>` : h`<h4>${title}</h4>`}
      <table class="section" data-section="${key}">
        ${rows.map(([label, value]) => h`<tr><th scope="row">${label}</th><td>${value}</td></tr>`)}
      </table>`,
  );
}

/** The grade, its score, and what capped it below the score's own grade. */
function gradeBox(report: SnapshotResult, grade: GradeView): Html {
  return h`<div class="grade">
      <strong data-grade>${report.grade}</strong>
      <span>score <b data-score>${report.score}</b> / 100 for <code>${report.final_url}</code>${
        grade.cappedBy.length > 0
          ? h`<br><span data-capped>The score alone gives ${grade.scoreGrade}; the grade is capped by:
            ${grade.cappedBy.map((why) => h`<span class="cap">${prose(why)}</span>`)}</span>`
          : ""
      }</span>
    </div>`;
}

/** A rendered report: grade, its checks, findings by severity, notes and its own sections. */
export function renderReport(report: SnapshotResult, level: "h3" | "h4"): Html {
  const view = reportView(report);
  const heading = (text: string) => (level === "h3" ? h`<h3>${text}</h3>` : h`<h4>${text}</h4>`);
  return h`${gradeBox(report, view.grade)}
    ${heading("Checks")}
    ${checksList(view)}
    ${heading("Findings")}
    ${findingsList(view.findings)}
    ${
      report.notes.length > 0
        ? h`${heading("Notes")}<ul class="notes">${report.notes.map((n) => h`<li>${prose(n)}</li>`)}</ul>`
        : ""
    }
    ${sectionsList(view, level)}`;
}

function networkName(id: string): string {
  return NETWORK_NAMES[id] ?? id;
}

function networksText(facts: PageFacts): string {
  const names = facts.networks.map((id) => `${networkName(id)} (${id})`);
  const list = names.join(" or ");
  return facts.devnet ? `${list}, here the local devnet: no real money moves` : list;
}

/** USDC units (6 decimals) in USDC, e.g. 50000 → 0.05. */
function usdc(units: string): string {
  if (!/^\d+$/.test(units)) return units;
  const padded = units.padStart(7, "0");
  const whole = padded.slice(0, -6).replace(/^0+(?=\d)/, "");
  const fraction = padded.slice(-6).replace(/0+$/, "");
  return fraction === "" ? whole : `${whole}.${fraction}`;
}

interface Samples {
  v2: string;
  v1: string;
  cli: string;
  curl: string;
}

function samples(facts: PageFacts, target = "https://example.com"): Samples {
  const endpoint = `${facts.serviceUrl}${PATHS.snapshot}`;
  // x402 v1 names networks; a testnet when one is offered, as `secsnap pay` chooses.
  const v1Network =
    facts.networks.includes(NETWORK_IDS.base) &&
    !facts.networks.includes(NETWORK_IDS["base-sepolia"])
      ? "base"
      : "base-sepolia";
  const request = `{
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ url: ${JSON.stringify(target)} }),
}`;
  const payer = facts.devnet ? facts.devnetPayer : undefined;
  // Devnet mode: the key is anvil's public test key of the funded account, written out.
  const key = payer
    ? `// PRIVATE_KEY: the devnet's funded test account ${payer.index} (${payer.address}),
// anvil's public test key ${payer.privateKey}
`
    : "";
  return {
    v2: `${key}import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

const client = new x402Client();
registerExactEvmScheme(client, { signer: privateKeyToAccount(process.env.PRIVATE_KEY) });
const pay = wrapFetchWithPayment(fetch, client);
const res = await pay("${endpoint}", ${request});
console.log(await res.json());`,
    v1: `import { createSigner, wrapFetchWithPayment } from "x402-fetch";

const signer = await createSigner("${v1Network}", process.env.PRIVATE_KEY);
const pay = wrapFetchWithPayment(fetch, signer);
const res = await pay("${endpoint}", ${request});`,
    // Devnet mode: `secsnap pay` takes anvil's funded test key by itself (docs/contract.md §8.1).
    cli: `${facts.devnet ? "" : "SECSNAP_PRIVATE_KEY=0x… "}./bin/secsnap.js pay ${target} --api ${facts.serviceUrl}`,
    curl: `curl -si -X POST ${endpoint} -H 'content-type: application/json' -d '${JSON.stringify({ url: target }).replaceAll("'", "'\\''")}'`,
  };
}

/** How to pay, with the commands for `target`. */
function howToPay(facts: PageFacts, code: Samples): Html {
  const payer = facts.devnet ? facts.devnetPayer : undefined;
  return h`<p>Ask without paying to see the 402 challenge (in the <code>PAYMENT-REQUIRED</code> header for
x402 v2, in the body for v1):</p>
<pre><code data-sample="curl">${code.curl}</code></pre>
<p>From the command line, in a clone of the repository (the package is not published: run its
own <code>bin/secsnap.js</code>), <code>secsnap pay</code> reads the challenge, prints the network,
amount and payee, signs and prints the report${
    payer
      ? h`; here it pays from the devnet's funded test account ${payer.index}
(<code>${payer.address}</code>) by itself`
      : ""
  }:</p>
<pre><code data-sample="cli">${code.cli}</code></pre>
<p>From JavaScript with an x402 v2 client, <code>@x402/fetch</code>${
    payer
      ? h`, with <code>PRIVATE_KEY</code> set to the funded devnet test account ${payer.index}'s
public key (anvil's; never use it on a real network)`
      : ""
  }:</p>
<pre><code data-sample="js">${code.v2}</code></pre>
<p>Or an x402 v1 client, <code>x402-fetch</code>:</p>
<pre><code>${code.v1}</code></pre>`;
}

/** The scan form: in devnet mode it pays from the funded account; else it shows the challenge. */
function scanForm(facts: PageFacts, url: string): Html {
  const payer = facts.devnet ? facts.devnetPayer : undefined;
  const action = payer ? PATHS.payAndScan : PATHS.challenge;
  return h`<form class="scan" method="post" action="${action}">
<label for="scan-url" class="muted">${
    payer
      ? h`Scans a URL, paid ${facts.priceUsdc} USDC by this service from the devnet's funded test account
${payer.index} (<code>${payer.address}</code>): no real money.`
      : h`Shows the payment a scan takes (the 402 challenge) and how to pay it; nothing is charged.`
  }</label>
<input id="scan-url" name="url" type="text" inputmode="url" required maxlength="2048"
  placeholder="https://example.com" value="${url}">
<button type="submit">${payer ? "Pay and scan" : "Show the payment"}</button>
</form>`;
}

/** A paid report whose proof verified: anyone can check it again (docs/proof.md). */
function verifiedBadge({ snapshotId, kid }: { snapshotId: string; kid: string }): Html {
  return h`<p><span class="verified" data-verified>✓ Verified</span> <span class="muted">signed by
this service's key <code>${kid}</code> (<a href="${PATHS.jwks}">${PATHS.jwks}</a>); snapshot
<code>${snapshotId}</code>. <code>secsnap verify</code> checks the JSON report the same way.</span></p>`;
}

function outcomeSection(facts: PageFacts, outcome: ScanOutcome): Html {
  const body = ((): Html => {
    switch (outcome.kind) {
      case "report":
        return h`<h3>Report of <code>${outcome.url}</code></h3>
${
  outcome.receipt
    ? h`<p class="muted" data-receipt>Paid ${facts.priceUsdc} USDC${
        outcome.receipt.payer ? h` from <code>${outcome.receipt.payer}</code>` : ""
      } in transaction <code>${outcome.receipt.transaction}</code>.</p>`
    : ""
}
${outcome.verified ? verifiedBadge(outcome.verified) : ""}
${renderReport(outcome.report, "h4")}`;
      case "challenge":
        return h`<h3>Payment required for <code>${outcome.url}</code></h3>
<p>The service answers <code>402</code> with this challenge (decoded from
<code>PAYMENT-REQUIRED</code>); nothing was charged.</p>
${outcome.offers.map(
  (o) => h`<dl class="offer" data-offer>
  <dt>Price</dt><dd data-price>${usdc(o.amount)} USDC</dd>
  <dt>Network</dt><dd data-network>${networkName(o.network)} (<code>${o.network}</code>)</dd>
  <dt>Pay to</dt><dd data-pay-to><code>${o.payTo}</code></dd>
  <dt>Token</dt><dd><code>${o.asset}</code></dd>
</dl>`,
)}
<h4>How to pay it</h4>
${howToPay(facts, samples(facts, outcome.url))}`;
      case "refused":
        return h`<h3>No report for <code>${outcome.url}</code></h3>
<p class="error" data-refused="${outcome.status}">${outcome.status}${
          outcome.errorType ? h` <code>${outcome.errorType}</code>` : ""
        }: ${outcome.message}</p>
<p class="muted">Nothing was charged.</p>`;
    }
  })();
  return h`<section class="result" id="result" data-outcome="${outcome.kind}">${body}</section>`;
}

/** The whole page, as a string. */
export function renderPage(facts: PageFacts, outcome?: ScanOutcome): string {
  const code = samples(facts);
  const doc = h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>secsnap: a website's security hygiene, paid per call</title>
<link rel="icon" href="${PATHS.faviconSvg}" type="image/svg+xml">
<style>${raw(CSS)}</style>
</head>
<body>
<main>
<h1>secsnap</h1>
<p>One public URL in, one JSON report out: ${REPORT_COVERAGE}; with findings that say what to
fix, a score and a grade.</p>
<nav class="top"><a href="${PATHS.reference}">Interactive API reference</a>
<a href="${PATHS.openApi}">OpenAPI document</a> <a href="${PATHS.llmsTxt}">llms.txt</a>
<a href="#demo">Demo report</a></nav>

<h2>Scan a site</h2>
${scanForm(facts, outcome?.url ?? "")}
${outcome ? outcomeSection(facts, outcome) : ""}

<h2>Price</h2>
<p><strong>${facts.priceUsdc} USDC</strong> per live report (<code>POST ${PATHS.snapshot}</code>),
paid with <a href="https://www.x402.org/">x402</a> on ${networksText(facts)}. Invalid or blocked
URLs are refused before payment and never charged. The demo, <code>${PATHS.health}</code> and
<code>${PATHS.openApi}</code> are free.</p>

<h2>How to pay</h2>
${howToPay(facts, code)}

<section id="demo">
<h2>Demo report</h2>
<p class="muted">A fixed example (<a href="${PATHS.demo}">${PATHS.demo}</a>); no site was
fetched.</p>
${renderReport(facts.report, "h3")}
</section>

<h2>API</h2>
<p>The interactive <a href="${PATHS.reference}">reference</a> over the
<a href="${PATHS.openApi}">OpenAPI 3.1 document</a>.</p>
</main>
</body>
</html>
`;
  return String(doc);
}
