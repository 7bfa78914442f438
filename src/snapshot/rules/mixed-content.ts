/**
 * Mixed content (docs/findings.md "Probes"): `http:` subresources of the final HTTPS page, by
 * what the W3C Mixed Content spec makes of their request's destination. `<script src>` is
 * `script-over-http` (rules/sri.ts).
 */
import { upgradesInsecureRequests } from "./csp.js";
import type { Destination, Evidence, PageEvidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { isMixed, listed } from "./sri.js";
import { defineRule } from "./rule.js";

export const MIXED_CONTENT_ACTIVE: FindingDef = {
  id: "mixed-content-active",
  check: "mixed_content",
  severity: "high",
  message:
    "The HTTPS page loads stylesheets, frames, plugins, preloads or images browsers do not upgrade over plain HTTP: browsers block them (the page breaks), and the network could swap them.",
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

/** An `http:` subresource of the page, its URL parsed. */
interface Mixed {
  r: PageEvidence["insecure"][number];
  url: URL;
}

/** What a fetch of each destination is, as a person names it. */
const KIND: Record<Destination, string> = {
  "": "resource",
  image: "image",
  audio: "media file",
  video: "media file",
  style: "stylesheet",
  font: "font",
  script: "script",
  audioworklet: "script",
  paintworklet: "script",
  serviceworker: "script",
  sharedworker: "script",
  worker: "script",
  iframe: "frame",
  frame: "frame",
  object: "plugin",
  embed: "plugin",
  track: "text track",
};

/** "an image", "an icon", "a preloaded font", "a prefetched resource": what the item is. */
function kindOf({ r }: Mixed): string {
  if (r.rel === "icon") return "icon";
  if (r.rel === "preload" || r.rel === "modulepreload") return `preloaded ${KIND[r.destination]}`;
  if (r.rel === "prefetch") return `prefetched ${KIND[r.destination]}`;
  return KIND[r.destination];
}

/**
 * Upgradeable content (Mixed Content §4.1): a request whose destination is "image", "audio" or
 * "video", unless it is an image fetched with the initiator "imageset" (a `srcset` candidate)
 * or its host is an IP address. Everything else is blocked.
 */
function upgradeable({ r, url }: Mixed): boolean {
  const media = ["image", "audio", "video"].includes(r.destination) && !r.imageset;
  return media && !/^(\d+\.\d+\.\d+\.\d+|\[.*\])$/.test(url.hostname);
}

/** "a stylesheet and 2 frames": each kind counted, in the order first seen. */
function counted(items: readonly Mixed[]): string {
  const counts = new Map<string, number>();
  for (const m of items) counts.set(kindOf(m), (counts.get(kindOf(m)) ?? 0) + 1);
  const parts = [...counts].map(([kind, n]) =>
    n > 1 ? `${n} ${kind}s` : `${/^[aeiou]/.test(kind) ? "an" : "a"} ${kind}`,
  );
  const last = parts.pop() ?? "";
  return parts.length > 0 ? `${parts.join(", ")} and ${last}` : last;
}

function about(def: FindingDef, items: Mixed[]): Finding[] {
  if (items.length === 0) return [];
  const it = items.length === 1 ? "it" : "them";
  const what =
    def === MIXED_CONTENT_ACTIVE
      ? `browsers block ${it}, and anyone on the network could replace ${it} where they do not`
      : `browsers upgrade or flag ${it}, and the network can see or swap ${it}`;
  return [
    found(
      def,
      `The HTTPS page loads ${counted(items)} over plain HTTP (from ${listed(items.map((m) => m.url.host))}); ${what}.`,
    ),
  ];
}

export function judgeMixedContent(e: Evidence): Finding[] {
  const { page, chain } = e;
  if (!page || chain.finalUrl.protocol !== "https:" || page.insecure.length === 0) return [];
  // upgrade-insecure-requests makes browsers ask for every http: subresource over https.
  if (upgradesInsecureRequests(e)) return [];
  // A script the page also runs from a <script src> (a `modulepreload` of it, say) is named by
  // script-over-http already (rules/sri.ts): one finding says it.
  const run = new Set(page.scripts.map((s) => s.src));
  const mixed = page.insecure
    .filter((r) => !(r.destination === "script" && run.has(r.url)))
    .map((r) => ({ r, url: new URL(r.url) }))
    // A potentially trustworthy URL (a loopback host) is no mixed content.
    .filter((m) => isMixed(m.url));
  const blocked = mixed.filter((m) => !upgradeable(m));
  return [
    ...about(MIXED_CONTENT_ACTIVE, blocked),
    ...about(MIXED_CONTENT_PASSIVE, mixed.filter(upgradeable)),
  ];
}

export const mixedContentRule = defineRule({
  topic: "mixed_content",
  findings: [MIXED_CONTENT_ACTIVE, MIXED_CONTENT_PASSIVE],
  judge: judgeMixedContent,
});
