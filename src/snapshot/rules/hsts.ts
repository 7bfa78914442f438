/**
 * Strict-Transport-Security (docs/findings.md): the check of `hsts_present`, its missing-header
 * finding, its values judged per RFC 6797 §6.1, and HSTS sent over plain HTTP (no HSTS to a browser).
 */
import { finalHeader, finalIsHttps } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { httpsNotChecked } from "./https.js";
import { defineRule } from "./rule.js";

/** 180 days: below this HSTS protects too briefly between visits. */
export const HSTS_MIN_MAX_AGE = 15_552_000;
/** One year: what the preload list asks for. */
export const HSTS_PRELOAD_MAX_AGE = 31_536_000;

const FIX = "Set `Strict-Transport-Security: max-age=31536000; includeSubDomains`.";

export const HSTS_MISSING: FindingDef = {
  id: "hsts-missing",
  check: "hsts",
  severity: "medium",
  message: "Strict-Transport-Security (HSTS) header is missing.",
  recommendation:
    "Serve the site over HTTPS and set `Strict-Transport-Security: max-age=31536000; includeSubDomains`.",
};

export const HSTS_INVALID: FindingDef = {
  id: "hsts-invalid",
  check: "hsts",
  severity: "medium",
  message: "The Strict-Transport-Security header is not valid (RFC 6797), so browsers ignore it.",
  recommendation: FIX,
};
export const HSTS_MAX_AGE_ZERO: FindingDef = {
  id: "hsts-max-age-zero",
  check: "hsts",
  severity: "medium",
  message: "Strict-Transport-Security has max-age=0, which tells browsers to forget HSTS.",
  recommendation: FIX,
};
export const HSTS_MAX_AGE_SHORT: FindingDef = {
  id: "hsts-max-age-short",
  check: "hsts",
  severity: "low",
  penalty: 10,
  message: "Strict-Transport-Security max-age is shorter than 180 days (15552000 seconds).",
  recommendation: FIX,
};
export const HSTS_NO_INCLUDE_SUBDOMAINS: FindingDef = {
  id: "hsts-no-include-subdomains",
  check: "hsts",
  severity: "info",
  message: "Strict-Transport-Security does not include subdomains.",
  recommendation:
    "Add `includeSubDomains` to Strict-Transport-Security once every subdomain serves HTTPS.",
};
export const HSTS_NOT_PRELOAD_READY: FindingDef = {
  id: "hsts-not-preload-ready",
  check: "hsts",
  severity: "info",
  message:
    "Strict-Transport-Security asks for preload but the preload list will not take it (it needs max-age of at least 31536000 and includeSubDomains).",
  recommendation: "Set `Strict-Transport-Security: max-age=63072000; includeSubDomains; preload`.",
};

export interface HstsPolicy {
  maxAge: number;
  includeSubDomains: boolean;
  preload: boolean;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const QUOTED = /^"((?:[^"\\]|\\.)*)"$/;

/**
 * RFC 6797 §6.1 grammar and §6.1.1/§8.1 rules: `;`-separated directives, names case-insensitive,
 * values a token or quoted-string, no directive twice, max-age required and all digits.
 * Hand-written: no maintained parser of this grammar is a dependency, and it is a few lines.
 */
export function parseHsts(value: string): HstsPolicy | null {
  const parts: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string;
    if (quoted && c === "\\") {
      current += c + (value[++i] ?? "");
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ";" && !quoted) {
      parts.push(current);
      current = "";
    } else current += c;
  }
  if (quoted) return null;
  parts.push(current);
  const seen = new Map<string, string | null>();
  for (const raw of parts) {
    const part = raw.trim();
    if (part === "") continue;
    const eq = part.indexOf("=");
    const name = (eq < 0 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (!TOKEN.test(name) || seen.has(name)) return null;
    let v: string | null = null;
    if (eq >= 0) {
      const rawValue = part.slice(eq + 1).trim();
      const q = QUOTED.exec(rawValue);
      if (q) v = (q[1] as string).replace(/\\(.)/g, "$1");
      else if (TOKEN.test(rawValue)) v = rawValue;
      else return null;
    }
    seen.set(name, v);
  }
  const maxAge = seen.get("max-age");
  if (maxAge === undefined || maxAge === null || !/^\d+$/.test(maxAge)) return null;
  return {
    maxAge: Number(maxAge),
    includeSubDomains: seen.has("includesubdomains"),
    preload: seen.has("preload"),
  };
}

const HSTS_OVER_HTTP =
  "Strict-Transport-Security is sent over plain HTTP, where browsers ignore it: the site has no HSTS.";

/** Only an https final response is judged: browsers ignore HSTS over http (a note says so). */
export function judgeHsts(e: Evidence): Finding[] {
  // RFC 6797 §8.1: only the first header field is processed.
  const [first] = finalHeader(e, "strict-transport-security");
  if (first === undefined || e.chain.final === null) return [];
  // Browsers ignore HSTS over plain HTTP: for the findings that is no HSTS (the field stays),
  // unless our own limits kept us from seeing the site's https:// side.
  if (!finalIsHttps(e))
    return httpsNotChecked(e.https) ? [] : [found(HSTS_MISSING, HSTS_OVER_HTTP)];
  const policy = parseHsts(first);
  if (!policy) return [found(HSTS_INVALID)];
  if (policy.maxAge === 0) return [found(HSTS_MAX_AGE_ZERO)];
  const out: Finding[] = [];
  if (policy.maxAge < HSTS_MIN_MAX_AGE) out.push(found(HSTS_MAX_AGE_SHORT));
  if (!policy.includeSubDomains) out.push(found(HSTS_NO_INCLUDE_SUBDOMAINS));
  if (policy.preload && (policy.maxAge < HSTS_PRELOAD_MAX_AGE || !policy.includeSubDomains)) {
    out.push(found(HSTS_NOT_PRELOAD_READY));
  }
  return out;
}

export const hstsRule = defineRule({
  topic: "hsts",
  check: {
    kind: "header",
    name: "hsts",
    field: "hsts_present",
    header: "strict-transport-security",
    missing: HSTS_MISSING,
    label: "Strict-Transport-Security (HSTS)",
    // HSTS is for https: a loopback site in local mode, whose HTTPS is not judged, is not asked.
    waived: (e) => !e.https.ok && e.https.failure.kind === "secure_context",
  },
  findings: [
    HSTS_MISSING,
    HSTS_INVALID,
    HSTS_MAX_AGE_ZERO,
    HSTS_MAX_AGE_SHORT,
    HSTS_NO_INCLUDE_SUBDOMAINS,
    HSTS_NOT_PRELOAD_READY,
  ],
  judge: judgeHsts,
});
