/**
 * The redirect chain (docs/findings.md "Probes"): a step from https:// down to http://, and a
 * final URL on another registrable domain than the input.
 */
import { createRequire } from "node:module";
import type * as Tldts from "tldts";
import type { Chain } from "../types.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const REDIRECT_HTTPS_TO_HTTP: FindingDef = {
  id: "redirect-https-to-http",
  check: "redirects",
  severity: "high",
  message: "A redirect goes from HTTPS down to plain HTTP.",
  recommendation: "Make every redirect from an `https://` URL point to an `https://` URL.",
};

export const REDIRECT_OTHER_DOMAIN: FindingDef = {
  id: "redirect-other-domain",
  check: "redirects",
  severity: "info",
  message: "The site redirects to another domain.",
  recommendation:
    "Nothing to fix if the redirect is intended; this report describes the final site, so scan the domain you own as well if it serves pages of its own.",
};

/** Every URL the chain requested, in order (the last one may have got no answer). */
function requestedUrls(chain: Chain): string[] {
  const urls = chain.hops.map((h) => h.url);
  if (chain.final === null && urls[urls.length - 1] !== chain.finalUrl.href) {
    urls.push(chain.finalUrl.href);
  }
  return urls;
}

// tldts (the public suffix list, 180 KB) is required on the first redirect to another host, not
// at start-up (docs/benchmarks.md "Start-up"); require() because the judges are synchronous.
const requireCjs = createRequire(import.meta.url);
let tldts: typeof Tldts | undefined;

/** The registrable domain of a host (tldts, public suffix list); an IP literal or a name
 * without one (localhost) is compared as it is. */
function siteOf(hostname: string): string {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  tldts ??= requireCjs("tldts") as typeof Tldts;
  return tldts.getDomain(host, { allowPrivateDomains: false }) ?? host;
}

export function judgeRedirects(evidence: Evidence): Finding[] {
  const { chain, input } = evidence;
  const out: Finding[] = [];
  const urls = requestedUrls(chain);
  for (let i = 0; i + 1 < urls.length; i++) {
    const from = new URL(urls[i] as string);
    const to = new URL(urls[i + 1] as string);
    if (from.protocol === "https:" && to.protocol === "http:") {
      out.push(
        found(
          REDIRECT_HTTPS_TO_HTTP,
          `A redirect goes from HTTPS down to plain HTTP: ${from.href} → ${to.href}.`,
        ),
      );
      break;
    }
  }
  // The same host is the same site: the list is only needed when the host changed.
  if (chain.redirectCount > 0 && input.hostname !== chain.finalUrl.hostname) {
    const from = siteOf(input.hostname);
    const to = siteOf(chain.finalUrl.hostname);
    if (from !== to) {
      out.push(
        found(REDIRECT_OTHER_DOMAIN, `The site redirects to another domain: ${to} (from ${from}).`),
      );
    }
  }
  return out;
}

export const redirectsRule = defineRule({
  topic: "redirects",
  findings: [REDIRECT_HTTPS_TO_HTTP, REDIRECT_OTHER_DOMAIN],
  judge: judgeRedirects,
});
