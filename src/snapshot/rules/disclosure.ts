/**
 * Software versions the final response discloses (docs/contract.md §9.3): `Server` and
 * `X-Powered-By` naming a product with its version, which tells an attacker which known flaws to
 * try.
 */
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

export const SERVER_VERSION_DISCLOSED: FindingDef = {
  id: "server-version-disclosed",
  check: "disclosure",
  severity: "low",
  message: "The Server or X-Powered-By header names a software version.",
  recommendation:
    "Send `Server` without a version (nginx `server_tokens off;`, Apache `ServerTokens Prod`) and drop `X-Powered-By`.",
};

/** The headers judged, as a person writes them. */
const HEADERS = [
  ["server", "Server"],
  ["x-powered-by", "X-Powered-By"],
] as const;

/**
 * A version: a product token's version (RFC 9110 §10.1.5 `product/version`) that starts with a
 * digit and has a dot or is all digits, as `nginx/1.18.0`, `PHP/8.1.2`, `Microsoft-IIS/10.0`,
 * `gunicorn/20`, or a bare dotted number (`ASP.NET 4.0`). `Express`, `nginx`, `cloudflare`, a
 * comment like `(Ubuntu)` or a node name like `ECS (dcb/7F84)` are not versions.
 */
const VERSION = /[A-Za-z][\w.+-]*\/v?(\d[\w.+-]*)|\b\d+(?:\.\d+)+\b/g;

/** The version-bearing tokens of one header's values (at most three, each at most 40 chars). */
function versionTokens(values: readonly string[]): string[] {
  const tokens = values.flatMap((v) =>
    [...v.matchAll(VERSION)]
      .filter(([, version]) => version === undefined || /^\d+$|\./.test(version))
      .map(([token]) => token),
  );
  return [...new Set(tokens)].slice(0, 3).map((t) => t.slice(0, 40));
}

export function judgeDisclosure(e: Evidence): Finding[] {
  const named = HEADERS.flatMap(([name, label]) => {
    const tokens = versionTokens(finalHeader(e, name));
    return tokens.length > 0 ? [`${label} (${tokens.join(", ")})`] : [];
  });
  if (named.length === 0) return [];
  const headers =
    named.length === 1 ? `header ${named[0]} names` : `headers ${named.join(" and ")} name`;
  return [found(SERVER_VERSION_DISCLOSED, `The ${headers} a software version.`)];
}

export const disclosureRule = defineRule({
  topic: "disclosure",
  findings: [SERVER_VERSION_DISCLOSED],
  judge: judgeDisclosure,
});
