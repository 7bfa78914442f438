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

/** A header as the Fetch standard gets it: every instance, combined with ", "; null if absent. */
function combined(values: readonly string[] | undefined): string | null {
  if (values === undefined || values.length === 0) return null;
  return values.map((v) => v.trim()).join(", ");
}

/**
 * Fetch's CORS check: the combined Access-Control-Allow-Origin must be `*` or the request's
 * origin byte for byte, so several values ("a, b") or another case let nothing through; the
 * combined credentials value must be exactly `true` (case-sensitive).
 */
export function judgeCors(evidence: Evidence): Finding[] {
  const cors = evidence.cors;
  if (cors?.kind !== "response") return [];
  const allowOrigin = combined(cors.headers["access-control-allow-origin"]);
  const credentials = combined(cors.headers["access-control-allow-credentials"]) === "true";
  if (allowOrigin === null) return [];
  if (allowOrigin === "*") return credentials ? [found(CORS_CREDENTIALS_WILDCARD)] : [];
  if (allowOrigin !== cors.origin) return [];
  return [found(credentials ? CORS_ORIGIN_REFLECTED : CORS_ANY_ORIGIN)];
}

export const corsRule = defineRule({
  topic: "cors",
  findings: [CORS_ORIGIN_REFLECTED, CORS_CREDENTIALS_WILDCARD, CORS_ANY_ORIGIN],
  judge: judgeCors,
});
