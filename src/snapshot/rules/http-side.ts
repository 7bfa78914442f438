/**
 * The http:// side of the input host (docs/findings.md "Probes"): `GET http://<host>/` should
 * redirect to https:// on the same host first. Nothing is said when it does, or when plain HTTP
 * does not answer at all (port 80 closed is fine).
 */
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { httpsNotChecked } from "./https.js";
import { defineRule } from "./rule.js";

export const HTTP_ONLY: FindingDef = {
  id: "http-only",
  check: "http_side",
  severity: "high",
  gradeCap: "F",
  // The more specific statement of a broken HTTPS when plain HTTP carries the site.
  supersedes: ["https-failed"],
  message: "The site is served over plain HTTP only: http:// answers and HTTPS does not work.",
  recommendation:
    "Serve the site over HTTPS with a valid certificate, and redirect every `http://` request to it with `301`.",
};

export const HTTP_NO_REDIRECT: FindingDef = {
  id: "http-no-redirect",
  check: "http_side",
  severity: "medium",
  message: "http:// answers without redirecting to HTTPS.",
  recommendation:
    "Answer every `http://` request with `301 Moved Permanently` to the same URL on `https://` on the same host.",
};

export const HTTP_REDIRECTS_TO_HTTP: FindingDef = {
  id: "http-redirects-to-http",
  check: "http_side",
  severity: "medium",
  message: "http:// redirects to another plain-HTTP URL instead of to HTTPS.",
  recommendation:
    "Make the first redirect of `http://<host>/` go to `https://<host>/` on the same host.",
};

export const HTTP_REDIRECTS_ELSEWHERE: FindingDef = {
  id: "http-redirects-elsewhere",
  check: "http_side",
  severity: "low",
  message: "http:// redirects to HTTPS on another host, not to HTTPS on the same host first.",
  recommendation:
    "Redirect `http://<host>/` to `https://<host>/` first (HSTS needs it, and preload lists require it), then on to the other host.",
};

export function judgeHttpSide(evidence: Evidence): Finding[] {
  const { httpSide, input } = evidence;
  if (httpSide === null || httpSide.kind === "failed") return [];
  // A loopback site in local mode needs no HTTPS (a secure context): nor a redirect to it.
  if (!evidence.https.ok && evidence.https.failure.kind === "secure_context") return [];
  // The URL asked: port 80's (or the input itself when it was http://), not the input's port.
  const probed = httpSide.url;
  let target: URL | null = null;
  if (httpSide.kind === "redirect") {
    try {
      target = new URL(httpSide.location, probed);
    } catch {
      // An unusable Location is no redirect: the answer is the page itself.
    }
  }
  // Plain HTTP carries the site (a page, or a redirect that stays on http) and HTTPS is broken.
  // An HTTPS probe our own cap or policy stopped says nothing about the site (docs/contract.md
  // §4.4): the findings below, which do not depend on it, still apply.
  const httpsBroken = !evidence.https.ok && !httpsNotChecked(evidence.https);
  if (httpsBroken && target?.protocol !== "https:") {
    return [
      found(
        HTTP_ONLY,
        `The site is served over plain HTTP only: ${probed} answers (status ${httpSide.status}) and HTTPS does not work.`,
      ),
    ];
  }
  if (target === null) {
    return [
      found(
        HTTP_NO_REDIRECT,
        `${probed} answers (status ${httpSide.status}) without redirecting to HTTPS.`,
      ),
    ];
  }
  if (target.protocol === "https:" && target.hostname === input.hostname) return [];
  if (target.protocol === "https:") {
    return [
      found(
        HTTP_REDIRECTS_ELSEWHERE,
        `${probed} redirects to ${target.href}, not to HTTPS on ${input.hostname} first.`,
      ),
    ];
  }
  return [
    found(
      HTTP_REDIRECTS_TO_HTTP,
      `${probed} redirects to ${target.href}, another plain-HTTP URL, instead of to HTTPS.`,
    ),
  ];
}

export const httpSideRule = defineRule({
  topic: "http_side",
  findings: [HTTP_ONLY, HTTP_NO_REDIRECT, HTTP_REDIRECTS_TO_HTTP, HTTP_REDIRECTS_ELSEWHERE],
  judge: judgeHttpSide,
});
