/**
 * Scripts of the final page (docs/findings.md "Probes"): Subresource Integrity on scripts from
 * other origins, and scripts over plain HTTP on an HTTPS page (mixed content).
 */
import { upgradesInsecureRequests } from "./csp.js";
import { isPotentiallyTrustworthy } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const SRI_MISSING: FindingDef = {
  id: "sri-missing",
  check: "sri",
  severity: "low",
  message: "The page loads scripts from other origins without Subresource Integrity.",
  recommendation:
    'Add `integrity="sha384-…"` and `crossorigin="anonymous"` to every `<script src>` from another origin, or serve those scripts from your own origin.',
};

export const SCRIPT_OVER_HTTP: FindingDef = {
  id: "script-over-http",
  check: "sri",
  severity: "high",
  message: "The HTTPS page loads scripts over plain HTTP.",
  recommendation: "Load every script over `https://` (or from your own origin).",
};

/** A valid integrity metadata token (SRI §3.5: sha256/384/512 and base64); others are ignored. */
const INTEGRITY_TOKEN = /^sha(256|384|512)-[A-Za-z0-9+/_-]+={0,2}(\?.*)?$/;

function hasIntegrity(integrity: string | null): boolean {
  return (integrity ?? "").split(/\s+/).some((t) => INTEGRITY_TOKEN.test(t));
}

/** Whether a URL is mixed content on an https page: `http:` and not potentially trustworthy. */
export function isMixed(url: URL): boolean {
  return url.protocol === "http:" && !isPotentiallyTrustworthy(url);
}

/** The URL upgrade-insecure-requests makes browsers fetch: https: for http: (UIR §4.1). */
function upgrade(url: URL): URL {
  if (url.protocol !== "http:") return url;
  const https = new URL(url);
  // A special scheme to another: the port 80 of the URL was dropped as http's default already.
  https.protocol = "https:";
  return https;
}

/** "a, b and c", or "a, b, c and 2 more": at most three names, plainly. */
export function listed(names: string[]): string {
  const unique = [...new Set(names)];
  const shown = unique.slice(0, 3);
  const more = unique.length - shown.length;
  if (more > 0) return `${shown.join(", ")} and ${more} more`;
  if (shown.length === 1) return shown[0] ?? "";
  return `${shown.slice(0, -1).join(", ")} and ${shown[shown.length - 1] ?? ""}`;
}

export function judgeSri(evidence: Evidence): Finding[] {
  const { page, chain } = evidence;
  if (!page) return [];
  const pageUrl = chain.finalUrl;
  const scripts = page.scripts.map((s) => ({ url: new URL(s.src), integrity: s.integrity }));
  const out: Finding[] = [];
  const overHttp = scripts.filter((s) => isMixed(s.url));
  // upgrade-insecure-requests makes browsers fetch them over https.
  const upgraded = upgradesInsecureRequests(evidence);
  if (pageUrl.protocol === "https:" && overHttp.length > 0 && !upgraded) {
    const hosts = listed(overHttp.map((s) => s.url.host));
    const n = overHttp.length;
    out.push(
      found(
        SCRIPT_OVER_HTTP,
        `The HTTPS page loads ${n === 1 ? "a script" : `${n} scripts`} over plain HTTP (from ${hosts}); anyone on the network can replace ${n === 1 ? "it" : "them"}.`,
      ),
    );
  }
  // A script already named as mixed content is not named again (one finding says it); an
  // upgraded one is an https: script, judged at the origin it is fetched from.
  const mixed = pageUrl.protocol === "https:";
  const unchecked = scripts
    .map((s) => ({ ...s, url: upgraded ? upgrade(s.url) : s.url }))
    .filter(
      (s) =>
        s.url.origin !== pageUrl.origin && !hasIntegrity(s.integrity) && !(mixed && isMixed(s.url)),
    );
  if (unchecked.length > 0) {
    const n = unchecked.length;
    out.push(
      found(
        SRI_MISSING,
        `The page loads ${n === 1 ? "a script" : `${n} scripts`} from other origins without Subresource Integrity (from ${listed(unchecked.map((s) => s.url.host))}).`,
      ),
    );
  }
  return out;
}

export const sriRule = defineRule({
  topic: "sri",
  findings: [SCRIPT_OVER_HTTP, SRI_MISSING],
  judge: judgeSri,
});
