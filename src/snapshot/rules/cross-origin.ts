/**
 * Cross-Origin-Opener-Policy, -Embedder-Policy and -Resource-Policy of the final response, read as
 * browsers read them (HTML "cross-origin opener policies", "embedder policy"; Fetch "CORP"), and
 * whether the page is cross-origin isolated. A section only: no finding, so no grade moves (these
 * are opt-ins most sites need not make; Observatory does not score them either).
 */
import { Token, parseItem } from "structured-headers";
import { finalHeader, isPotentiallyTrustworthy } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { defineRule } from "./rule.js";

const COOP_VALUES = [
  "same-origin",
  "same-origin-allow-popups",
  "noopener-allow-popups",
  "unsafe-none",
] as const;
const COEP_VALUES = ["require-corp", "credentialless", "unsafe-none"] as const;
const CORP_VALUES = ["same-origin", "same-site", "cross-origin"] as const;

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

export const crossOriginRule = defineRule({
  topic: "cross_origin",
  findings: [],
  section: { key: "cross_origin", of: crossOriginSection },
});
