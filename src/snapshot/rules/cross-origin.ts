/**
 * Cross-Origin-Opener-Policy, -Embedder-Policy and -Resource-Policy of the final response, read as
 * browsers read them (HTML "cross-origin opener policies", "embedder policy"; Fetch "CORP"), and
 * whether the page is cross-origin isolated. These are opt-ins most sites need not make: a missing
 * header is no finding. A value browsers ignore is (low), as Observatory takes 5 for it.
 */
import { Token, parseItem } from "structured-headers";
import { finalHeader, isPotentiallyTrustworthy } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

const COOP_VALUES = [
  "same-origin",
  "same-origin-allow-popups",
  "noopener-allow-popups",
  "unsafe-none",
] as const;
const COEP_VALUES = ["require-corp", "credentialless", "unsafe-none"] as const;
const CORP_VALUES = ["same-origin", "same-site", "cross-origin"] as const;

export const COOP_INVALID: FindingDef = {
  id: "coop-invalid",
  check: "cross_origin",
  severity: "low",
  message:
    "Cross-Origin-Opener-Policy has a value browsers do not know (or is sent twice), so they ignore it.",
  recommendation:
    "Send one `Cross-Origin-Opener-Policy: same-origin` (or `same-origin-allow-popups`), the value as written here.",
};
export const COEP_INVALID: FindingDef = {
  id: "coep-invalid",
  check: "cross_origin",
  severity: "low",
  message:
    "Cross-Origin-Embedder-Policy has a value browsers do not know (or is sent twice), so they ignore it.",
  recommendation:
    "Send one `Cross-Origin-Embedder-Policy: require-corp` (or `credentialless`), the value as written here.",
};
export const CORP_INVALID: FindingDef = {
  id: "corp-invalid",
  check: "cross_origin",
  severity: "low",
  message:
    "Cross-Origin-Resource-Policy has a value browsers do not know (or is sent twice), so any site may embed the response.",
  recommendation:
    "Send one `Cross-Origin-Resource-Policy: same-origin` (or `same-site`), in lower case as written here.",
};

/** The `cross_origin` section of a report. */
export interface CrossOriginSection {
  /**
   * The policy browsers apply: `unsafe-none` when the header is absent or not understood, or the
   * page is no secure context.
   */
  coop: (typeof COOP_VALUES)[number];
  coep: (typeof COEP_VALUES)[number];
  /** null: no header, or one browsers ignore (then any site may embed the response). */
  corp: (typeof CORP_VALUES)[number] | null;
  /** COOP `same-origin` and COEP `require-corp` or `credentialless` (HTML "cross-origin isolated"). */
  cross_origin_isolated: boolean;
}

/**
 * A structured-field token among `known` (RFC 8941 Item, parameters such as `report-to` allowed),
 * else the default: several header instances join with a comma, which is no Item, as in browsers.
 */
function policyToken<T extends string>(values: readonly string[], known: readonly T[]): T | null {
  if (values.length === 0) return null;
  try {
    const [item] = parseItem(values.join(", "));
    if (!(item instanceof Token)) return null;
    const token = item.toString();
    return (known as readonly string[]).includes(token) ? (token as T) : null;
  } catch {
    return null;
  }
}

/** Fetch: the one value, exactly one of the three (case-sensitive), else ignored. */
function corpOf(values: readonly string[]): CrossOriginSection["corp"] {
  if (values.length !== 1) return null;
  const v = values[0] ?? "";
  return (CORP_VALUES as readonly string[]).includes(v) ? (v as CrossOriginSection["corp"]) : null;
}

/**
 * A page that is no secure context gets neither policy (HTML "obtain a cross-origin opener
 * policy", "obtain an embedder policy"), so it is never cross-origin isolated.
 */
export function crossOriginSection(e: Evidence): CrossOriginSection | null {
  if (e.chain.final === null) return null;
  const secure = isPotentiallyTrustworthy(e.chain.finalUrl);
  const header = (name: string) => (secure ? finalHeader(e, name) : []);
  const coop = policyToken(header("cross-origin-opener-policy"), COOP_VALUES) ?? "unsafe-none";
  const coep = policyToken(header("cross-origin-embedder-policy"), COEP_VALUES) ?? "unsafe-none";
  return {
    coop,
    coep,
    corp: corpOf(finalHeader(e, "cross-origin-resource-policy")),
    cross_origin_isolated: coop === "same-origin" && coep !== "unsafe-none",
  };
}

/**
 * A header that is there but that browsers ignore: the owner meant a policy and got none. Judged
 * on any page: on one that is no secure context COOP and COEP are ignored whatever they say.
 */
export function judgeCrossOrigin(e: Evidence): Finding[] {
  if (e.chain.final === null) return [];
  const headers: [string, (values: readonly string[]) => boolean, FindingDef][] = [
    ["cross-origin-opener-policy", (v) => policyToken(v, COOP_VALUES) !== null, COOP_INVALID],
    ["cross-origin-embedder-policy", (v) => policyToken(v, COEP_VALUES) !== null, COEP_INVALID],
    ["cross-origin-resource-policy", (v) => corpOf(v) !== null, CORP_INVALID],
  ];
  return headers.flatMap(([name, valid, def]) => {
    const values = finalHeader(e, name);
    return values.length > 0 && !valid(values) ? [found(def)] : [];
  });
}

export const crossOriginRule = defineRule({
  topic: "cross_origin",
  findings: [COOP_INVALID, COEP_INVALID, CORP_INVALID],
  judge: judgeCrossOrigin,
  section: { key: "cross_origin", of: crossOriginSection },
});
