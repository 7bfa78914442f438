/**
 * GET /: the page for people (docs/http-api.md "The page and the reference"). Server-rendered
 * with hono's `html` template, which escapes every interpolated string; no script, no external
 * resource, and the one inline stylesheet allowed by its hash.
 */
import { createHash } from "node:crypto";
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { NETWORK_IDS } from "../config.js";
import { CHECKS, SEVERITIES, type SnapshotResult } from "../snapshot/index.js";

type Finding = SnapshotResult["findings"][number];
type Html = HtmlEscapedString;

/** hono's `html`, typed for what it returns here: nothing interpolated is a promise. */
function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
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
}

const NETWORK_NAMES: Readonly<Record<string, string>> = {
  [NETWORK_IDS.base]: "Base",
  [NETWORK_IDS["base-sepolia"]]: "Base Sepolia",
};

const CSS = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;--card:#f6f8fa;--line:#d0d7de;
--ok:#1a7f37;--bad:#cf222e;--unk:#9a6700;--accent:#0969da;--high:#cf222e;--medium:#bc4c00;--low:#9a6700;--info:#57606a}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9da7b3;--card:#161b22;--line:#30363d;
--ok:#3fb950;--bad:#f85149;--unk:#d29922;--accent:#58a6ff;--high:#f85149;--medium:#f0883e;--low:#d29922;--info:#9da7b3}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{max-width:52rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.8rem;margin:.5rem 0}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid var(--line);padding-bottom:.3rem}
a{color:var(--accent)}p,li{overflow-wrap:anywhere}.muted{color:var(--muted)}
code,pre{font:.9em/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.75rem;overflow-x:auto}
.grade{display:flex;gap:1rem;align-items:center;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem}
.grade strong{font-size:2.4rem;line-height:1}
ul.checks,ul.findings{list-style:none;padding:0;margin:.5rem 0}
ul.checks li{display:flex;gap:.6rem;padding:.25rem 0;border-bottom:1px solid var(--line)}
.mark{width:1.4rem;text-align:center;font-weight:700}.ok{color:var(--ok)}.bad{color:var(--bad)}.unk{color:var(--unk)}
ul.findings li{background:var(--card);border:1px solid var(--line);border-left-width:4px;border-radius:6px;padding:.5rem .75rem;margin:.5rem 0}
.sev{font-size:.8rem;font-weight:700;text-transform:uppercase}
.sev-high{border-left-color:var(--high)}.sev-high .sev{color:var(--high)}
.sev-medium{border-left-color:var(--medium)}.sev-medium .sev{color:var(--medium)}
.sev-low{border-left-color:var(--low)}.sev-low .sev{color:var(--low)}
.sev-info{border-left-color:var(--info)}.sev-info .sev{color:var(--info)}
`;

const CSS_HASH = `'sha256-${createHash("sha256").update(CSS).digest("base64")}'`;

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
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=()",
};

const SEVERITY_TITLES: Readonly<Record<Finding["severity"], string>> = {
  high: "High",
  medium: "Medium",
  low: "Low",
  info: "Info",
};

function mark(value: boolean | null): Html {
  if (value === true) return h`<span class="mark ok" title="yes">✓</span>`;
  if (value === false) return h`<span class="mark bad" title="no">✗</span>`;
  return h`<span class="mark unk" title="could not be determined">?</span>`;
}

function checksList(report: SnapshotResult): Html {
  return h`<ul class="checks">
    ${CHECKS.map(
      (check) => h`<li data-check="${check.name}">${mark(report.checks[check.name])}
        <span>${check.label}</span></li>`,
    )}
  </ul>`;
}

function findingsList(findings: readonly Finding[]): Html {
  if (findings.length === 0) return h`<p>No findings.</p>`;
  const bySeverity = SEVERITIES.flatMap((severity) =>
    findings.filter((f) => f.severity === severity),
  );
  return h`<ul class="findings">
    ${bySeverity.map(
      (f) => h`<li class="sev-${f.severity}" data-finding="${f.id}">
        <span class="sev">${SEVERITY_TITLES[f.severity]}</span> <code>${f.id}</code>
        <p>${f.message}</p>
        <p class="muted">Fix: ${f.recommendation}</p>
      </li>`,
    )}
  </ul>`;
}

/** The rendered demo report: grade, the ten checks, the findings by severity. */
function renderReport(report: SnapshotResult): Html {
  return h`<div class="grade">
      <strong data-grade>${report.grade}</strong>
      <span>score <b data-score>${report.score}</b> / 100 for <code>${report.final_url}</code></span>
    </div>
    <h3>Checks</h3>
    ${checksList(report)}
    <h3>Findings</h3>
    ${findingsList(report.findings)}`;
}

function networksText(facts: PageFacts): string {
  const names = facts.networks.map((id) => `${NETWORK_NAMES[id] ?? id} (${id})`);
  const list = names.join(" or ");
  return facts.devnet ? `${list}, here the local devnet: no real money moves` : list;
}

function samples(facts: PageFacts): { v2: string; v1: string; cli: string; curl: string } {
  const endpoint = `${facts.serviceUrl}/v1/snapshot`;
  // x402 v1 names networks; a testnet when one is offered, as `secsnap pay` chooses.
  const v1Network =
    facts.networks.includes(NETWORK_IDS.base) &&
    !facts.networks.includes(NETWORK_IDS["base-sepolia"])
      ? "base"
      : "base-sepolia";
  const request = `{
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ url: "https://example.com" }),
}`;
  return {
    v2: `import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
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
    cli: `${facts.devnet ? "" : "SECSNAP_PRIVATE_KEY=0x… "}secsnap pay https://example.com --api ${facts.serviceUrl}`,
    curl: `curl -si -X POST ${endpoint} -H 'content-type: application/json' -d '{"url":"example.com"}'`,
  };
}

/** The whole page, as a string. */
export function renderPage(facts: PageFacts): string {
  const code = samples(facts);
  const doc = h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>secsnap: a website's security hygiene, paid per call</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<style>${raw(CSS)}</style>
</head>
<body>
<main>
<h1>secsnap</h1>
<p>One public URL in, one JSON report out: whether the site answers, where its redirects end,
whether HTTPS works with a valid certificate, six security headers and how well they are set,
cookies, CORS, script integrity, the <code>http://</code> side, and security.txt, robots.txt and
sitemap.xml, with findings that say what to fix, a score and a grade.</p>

<h2>Price</h2>
<p><strong>${facts.priceUsdc} USDC</strong> per live report (<code>POST /v1/snapshot</code>),
paid with <a href="https://www.x402.org/">x402</a> on ${networksText(facts)}. Invalid or blocked
URLs are refused before payment and never charged. The demo, <code>/health</code> and
<code>/openapi.json</code> are free.</p>

<h2>How to pay</h2>
<p>Ask without paying to see the 402 challenge (in the <code>PAYMENT-REQUIRED</code> header for
x402 v2, in the body for v1):</p>
<pre><code>${code.curl}</code></pre>
<p>From the command line, <code>secsnap pay</code> reads the challenge, prints the network,
amount and payee, signs and prints the report:</p>
<pre><code>${code.cli}</code></pre>
<p>From JavaScript with an x402 v2 client, <code>@x402/fetch</code>:</p>
<pre><code>${code.v2}</code></pre>
<p>Or an x402 v1 client, <code>x402-fetch</code>:</p>
<pre><code>${code.v1}</code></pre>

<h2>Demo report</h2>
<p class="muted">A fixed example (<a href="/demo/snapshot">/demo/snapshot</a>); no site was
fetched.</p>
${renderReport(facts.report)}

<h2>API</h2>
<p><a href="/reference">Interactive API reference</a> over the
<a href="/openapi.json">OpenAPI 3.1 document</a>.</p>
</main>
</body>
</html>
`;
  return String(doc);
}
