/**
 * CORS (docs/findings.md "Probes"): the final URL asked with a made-up `Origin`. What its answer
 * allows is judged: credentials with a wildcard, and any origin reflected.
 */
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const CORS_ORIGIN_REFLECTED: FindingDef = {
  id: "cors-origin-reflected",
  check: "cors",
  severity: "high",
  message:
    "The site echoes any Origin in Access-Control-Allow-Origin and allows credentials: any website can read its responses with the visitor's cookies.",
  recommendation:
    "Compare `Origin` with a fixed allow-list before echoing it, and send `Access-Control-Allow-Credentials: true` only to those origins.",
};

export const CORS_CREDENTIALS_WILDCARD: FindingDef = {
  id: "cors-credentials-wildcard",
  check: "cors",
  severity: "low",
  message:
    "The site sends Access-Control-Allow-Origin: * together with Access-Control-Allow-Credentials: true; browsers refuse this combination, so its CORS configuration is broken.",
  recommendation:
    "Send `Access-Control-Allow-Credentials: true` only with an allow-listed origin in `Access-Control-Allow-Origin`; for public data keep `*` and drop the credentials header.",
};

export const CORS_ANY_ORIGIN: FindingDef = {
  id: "cors-any-origin",
  check: "cors",
  severity: "info",
  message:
    "The site echoes any Origin in Access-Control-Allow-Origin (without credentials): every website can read its public responses.",
  recommendation:
    "If the content is not meant for every website, allow only listed origins; if it is, `Access-Control-Allow-Origin: *` says so plainly.",
};

/** The last value of a header (one instance is what a browser accepts; several is an error). */
function last(values: readonly string[] | undefined): string | undefined {
  return values?.[values.length - 1]?.trim();
}

export function judgeCors(evidence: Evidence): Finding[] {
  const cors = evidence.cors;
  if (cors?.kind !== "response") return [];
  const allowOrigin = last(cors.headers["access-control-allow-origin"]);
  // The Fetch standard compares the credentials value case-sensitively with "true".
  const credentials = last(cors.headers["access-control-allow-credentials"]) === "true";
  if (allowOrigin === undefined) return [];
  if (allowOrigin === "*") return credentials ? [found(CORS_CREDENTIALS_WILDCARD)] : [];
  if (allowOrigin.toLowerCase() !== cors.origin.toLowerCase()) return [];
  return [found(credentials ? CORS_ORIGIN_REFLECTED : CORS_ANY_ORIGIN)];
}

export const corsRule = defineRule({
  topic: "cors",
  findings: [CORS_ORIGIN_REFLECTED, CORS_CREDENTIALS_WILDCARD, CORS_ANY_ORIGIN],
  judge: judgeCors,
});
