/**
 * Mixed content (docs/findings.md "Probes"): `http:` subresources of the final HTTPS page, by
 * what the W3C Mixed Content spec makes of them. Scripts are `script-over-http` (rules/sri.ts).
 */
import { upgradesInsecureRequests } from "./csp.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { listed } from "./sri.js";
import { defineRule } from "./rule.js";

export const MIXED_CONTENT_ACTIVE: FindingDef = {
  id: "mixed-content-active",
  check: "mixed_content",
  severity: "high",
  message:
    "The HTTPS page loads stylesheets, frames or plugins over plain HTTP: browsers block them (the page breaks), and anyone on the network could replace them where they are not blocked.",
  recommendation:
    "Load every subresource over `https://`, or add `upgrade-insecure-requests` to the Content-Security-Policy.",
};

export const MIXED_CONTENT_PASSIVE: FindingDef = {
  id: "mixed-content-passive",
  check: "mixed_content",
  severity: "low",
  message:
    "The HTTPS page loads images or media over plain HTTP: browsers upgrade them to HTTPS or show them as not secure, and the network can see or swap them.",
  recommendation:
    "Load every image and media file over `https://`, or add `upgrade-insecure-requests` to the Content-Security-Policy.",
};

/** Upgradeable ("optionally-blockable") content (Mixed Content §4.1); everything else blocks. */
const PASSIVE = new Set(["img", "audio", "video", "source"]);

function about(def: FindingDef, urls: URL[], what: string): Finding[] {
  if (urls.length === 0) return [];
  const n = urls.length;
  return [
    found(
      def,
      `The HTTPS page loads ${n === 1 ? `a ${what}` : `${n} ${what}s`} over plain HTTP (from ${listed(urls.map((u) => u.host))}); ${def === MIXED_CONTENT_ACTIVE ? "browsers block it, and anyone on the network could replace it where they do not" : "browsers upgrade or flag it, and the network can see or swap it"}.`,
    ),
  ];
}

export function judgeMixedContent(e: Evidence): Finding[] {
  const { page, chain } = e;
  if (!page || chain.finalUrl.protocol !== "https:" || page.insecure.length === 0) return [];
  // upgrade-insecure-requests makes browsers ask for every http: subresource over https.
  if (upgradesInsecureRequests(e)) return [];
  const active = page.insecure.filter((r) => !PASSIVE.has(r.element)).map((r) => new URL(r.url));
  const passive = page.insecure.filter((r) => PASSIVE.has(r.element)).map((r) => new URL(r.url));
  return [
    ...about(MIXED_CONTENT_ACTIVE, active, "stylesheet, frame or plugin"),
    ...about(MIXED_CONTENT_PASSIVE, passive, "image or media file"),
  ];
}

export const mixedContentRule = defineRule({
  topic: "mixed_content",
  findings: [MIXED_CONTENT_ACTIVE, MIXED_CONTENT_PASSIVE],
  judge: judgeMixedContent,
});
