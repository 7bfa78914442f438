/**
 * Content-Security-Policy (docs/findings.md): the check of `csp_present`, its missing-header
 * finding (waived by a `<meta>` policy), and its values: the header's policies and those of
 * `<meta http-equiv>` tags are all enforced, so a weakness counts only when every policy has it.
 */
import parseContentSecurityPolicy from "content-security-policy-parser";
import { matchesSourceList } from "./csp-match.js";
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

type Policy = Map<string, string[]>;

export const CSP_MISSING: FindingDef = {
  id: "csp-missing",
  check: "csp",
  severity: "medium",
  penalty: 25,
  message: "Content-Security-Policy (CSP) header is missing.",
  recommendation:
    "Set a `Content-Security-Policy`, e.g. `default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'`.",
};
export const CSP_INVALID: FindingDef = {
  id: "csp-invalid",
  check: "csp",
  severity: "medium",
  penalty: 25,
  message:
    "The Content-Security-Policy header has no directive browsers know, so it protects nothing.",
  recommendation:
    "Write the policy as `;`-separated directives, e.g. `Content-Security-Policy: default-src 'self'; object-src 'none'; base-uri 'none'`.",
};
export const CSP_UNSAFE_INLINE: FindingDef = {
  id: "csp-unsafe-inline",
  check: "csp",
  severity: "medium",
  message:
    "The Content-Security-Policy allows inline scripts ('unsafe-inline' without a nonce, hash or 'strict-dynamic'), so it does not stop cross-site scripting.",
  recommendation:
    "Remove `'unsafe-inline'` from `script-src` (or `default-src`); allow inline scripts with a nonce (`'nonce-…'`) or hash (`'sha256-…'`).",
};
export const CSP_SCRIPT_ANY_SOURCE: FindingDef = {
  id: "csp-script-any-source",
  check: "csp",
  severity: "medium",
  message:
    "The Content-Security-Policy lets scripts load from any host or scheme (`*`, `https:`, `http:` or `data:` in script-src or default-src), so an attacker's script passes it too.",
  recommendation:
    "List the hosts scripts come from in `script-src` (or use a nonce with `'strict-dynamic'`), without `*`, `https:`, `http:` or `data:`.",
};
export const CSP_UNSAFE_EVAL: FindingDef = {
  id: "csp-unsafe-eval",
  check: "csp",
  severity: "medium",
  penalty: 10,
  message: "The Content-Security-Policy allows eval() in scripts ('unsafe-eval').",
  recommendation: "Remove `'unsafe-eval'` from `script-src` (or `default-src`).",
};
export const CSP_NO_OBJECT_SRC: FindingDef = {
  id: "csp-no-object-src",
  check: "csp",
  severity: "low",
  message:
    "The Content-Security-Policy does not restrict plugins (no object-src, and no default-src that blocks them).",
  recommendation: "Add `object-src 'none'` to the Content-Security-Policy.",
};
export const CSP_OBJECT_ANY_SOURCE: FindingDef = {
  id: "csp-object-any-source",
  check: "csp",
  severity: "medium",
  message:
    "The Content-Security-Policy's object-src lets plugins load from any host or scheme (`*`, `https:`, `data:`), so it restricts nothing.",
  recommendation: "Set `object-src 'none'` in the Content-Security-Policy.",
};
export const CSP_NO_BASE_URI: FindingDef = {
  id: "csp-no-base-uri",
  check: "csp",
  severity: "info",
  message: "The Content-Security-Policy does not restrict `<base>` (no base-uri).",
  recommendation: "Add `base-uri 'none'` (or `'self'`) to the Content-Security-Policy.",
};
export const CSP_NO_FORM_ACTION: FindingDef = {
  id: "csp-no-form-action",
  check: "csp",
  severity: "info",
  message:
    "The Content-Security-Policy does not restrict where forms submit (no form-action, which does not fall back to default-src).",
  recommendation: "Add `form-action 'self'` (or `'none'`) to the Content-Security-Policy.",
};
export const CSP_REPORT_ONLY: FindingDef = {
  id: "csp-report-only",
  check: "csp",
  severity: "info",
  message:
    "Only Content-Security-Policy-Report-Only is set: it reports violations but blocks nothing.",
  recommendation: "Once its reports are clean, send the same policy as `Content-Security-Policy`.",
};
export const CSP_IN_META: FindingDef = {
  id: "csp-in-meta",
  check: "csp",
  severity: "info",
  message:
    "The Content-Security-Policy is set in a `<meta>` tag, where frame-ancestors, report-uri and sandbox do not apply.",
  recommendation: "Send the policy as a `Content-Security-Policy` response header.",
};

/** The directives of CSP Level 3 and its companions; a policy with none of them does nothing. */
const KNOWN_DIRECTIVES = new Set([
  "default-src",
  "script-src",
  "script-src-elem",
  "script-src-attr",
  "style-src",
  "style-src-elem",
  "style-src-attr",
  "img-src",
  "font-src",
  "connect-src",
  "media-src",
  "object-src",
  "frame-src",
  "child-src",
  "worker-src",
  "manifest-src",
  "prefetch-src",
  "fenced-frame-src",
  "base-uri",
  "form-action",
  "frame-ancestors",
  "sandbox",
  "upgrade-insecure-requests",
  "block-all-mixed-content",
  "require-trusted-types-for",
  "trusted-types",
  "report-uri",
  "report-to",
]);

/** A header value is a comma-separated list of policies, each enforced (CSP3 §3.1). */
function policiesOf(values: readonly string[]): Policy[] {
  return values
    .flatMap((v) => v.split(","))
    .map((p) => parseContentSecurityPolicy(p))
    .filter((p) => [...p.keys()].some((name) => KNOWN_DIRECTIVES.has(name)));
}

/** The policies of the Content-Security-Policy header(s) of the final response. */
export function headerPolicies(e: Evidence): Policy[] {
  return policiesOf(finalHeader(e, "content-security-policy"));
}

/**
 * The `base-uri` source list of each enforced policy of these Content-Security-Policy header
 * values that has one: what page.ts holds a `<base href>` to. Report-only policies block nothing.
 */
export function headerBaseUri(values: readonly string[]): string[][] {
  return listsOf(policiesOf(values), "base-uri");
}

/** The source list of `directive` in each policy that has it. */
function listsOf(policies: readonly Policy[], directive: string): string[][] {
  return policies.flatMap((p) => {
    const v = p.get(directive);
    return v === undefined ? [] : [v];
  });
}

/** The `base-uri` source list of one `<meta>` policy, or null when it has none. */
export function metaBaseUri(content: string): string[] | null {
  return metaPolicy(content)?.get("base-uri") ?? null;
}

/**
 * CSP3 "Is base allowed for Document?" (§6.3.1.1): `base` is blocked when it does not match the
 * `base-uri` list of some enforced policy (`lists`, one per policy that has the directive) of the
 * page at `pageUrl`. A policy without `base-uri` allows any base.
 */
export function isBaseAllowed(base: URL, lists: readonly string[][], pageUrl: URL): boolean {
  return lists.every((sources) => matchesSourceList(base, sources, pageUrl));
}

/** Directives a `<meta>` policy loses before it is enforced (HTML http-equiv, CSP3 §3.3). */
const NOT_IN_META = ["report-uri", "frame-ancestors", "sandbox"];

/**
 * A `<meta>` content is one policy: a comma there is not a separator (CSP3 §4.2.1). Without
 * the directives it loses; one left with no known directive is no policy (null).
 */
function metaPolicy(content: string): Policy | null {
  const all = parseContentSecurityPolicy(content);
  const p = new Map([...all].filter(([name]) => !NOT_IN_META.includes(name)));
  return [...p.keys()].some((name) => KNOWN_DIRECTIVES.has(name)) ? p : null;
}

function metaPolicies(e: Evidence): Policy[] {
  return (e.page?.metaCsp ?? []).map(metaPolicy).filter((p) => p !== null);
}

/** Whether a policy in force makes browsers fetch `http:` subresources over https (CSP UIR). */
export function upgradesInsecureRequests(e: Evidence): boolean {
  return [...headerPolicies(e), ...metaPolicies(e)].some((p) => p.has("upgrade-insecure-requests"));
}

/**
 * Sources that match every host: a whole network scheme, or a host-source whose host is `*`,
 * with or without scheme, port or path (`*`, `https://*`, `https://*:443`, `*:*`; CSP3 §2.3.1).
 */
const ANY_HOST = /^(https?:|(https?:\/\/)?\*(:(\d+|\*))?(\/.*)?)$/;

/** The `frame-ancestors` sources of each header policy that has one (a meta one is ignored). */
function frameAncestors(e: Evidence): string[][] {
  return listsOf(headerPolicies(e), "frame-ancestors").map((l) => l.map((s) => s.toLowerCase()));
}

/**
 * `frame-ancestors` of a header policy protects against framing when none of its sources
 * matches every host (`https:` lets any HTTPS site frame the page). Every policy is enforced,
 * so one that protects is enough.
 */
export function hasFrameAncestors(e: Evidence): boolean {
  return frameAncestors(e).some((sources) => !sources.some((s) => ANY_HOST.test(s)));
}

/**
 * The sources that let any site frame the page when `frame-ancestors` is there but does not
 * protect: browsers then ignore X-Frame-Options (HTML), so it protects nothing either.
 */
export function openFrameAncestors(e: Evidence): string[] {
  if (hasFrameAncestors(e)) return [];
  return [
    ...new Set(frameAncestors(e).flatMap((sources) => sources.filter((s) => ANY_HOST.test(s)))),
  ];
}

/** Whether a meta tag sets a policy: then CSP protects although the header is missing. */
export function hasMetaCsp(e: Evidence): boolean {
  return metaPolicies(e).length > 0;
}

/**
 * A valid nonce-source or hash-source (CSP3 §2.3.1: base64-value is `+ / - _` and letters and
 * digits, then at most two `=`), or 'strict-dynamic': browsers ignore 'unsafe-inline' beside
 * them. An invalid one (`'nonce-{{nonce}}'`, `'nonce-'`) leaves 'unsafe-inline' in force.
 */
const NEUTRALISES_INLINE =
  /^'(?:(?:nonce|sha256|sha384|sha512)-[a-z0-9+/_-]+={0,2}|strict-dynamic)'$/i;

/**
 * The source list that governs one kind of script, by CSP3's fallback (§6.8.3): `<script>`
 * elements by script-src-elem, event handlers and `javascript:` URLs by script-src-attr, eval by
 * script-src (§4.4), each falling back to script-src then default-src; null for none.
 */
type ScriptUse = "elem" | "attr" | "eval";
function scriptSources(p: Policy, use: ScriptUse): string[] | null {
  const own = use === "eval" ? undefined : p.get(`script-src-${use}`);
  const v = own ?? p.get("script-src") ?? p.get("default-src");
  return v ? v.map((s) => s.toLowerCase()) : null;
}

/** Whether the policy restricts scripts at all: some list governs elements or handlers. */
const restrictsScripts = (p: Policy) =>
  scriptSources(p, "elem") !== null || scriptSources(p, "attr") !== null;

/** Whether a list lets all inline script of its kind run: none at all, or 'unsafe-inline' alone. */
function inlineAllowedBy(src: string[] | null): boolean {
  if (src === null) return true;
  return src.includes("'unsafe-inline'") && !src.some((s) => NEUTRALISES_INLINE.test(s));
}

/** Whether injected markup can run inline script: in a `<script>` element or an event handler. */
const allowsInline = (p: Policy) =>
  inlineAllowedBy(scriptSources(p, "elem")) || inlineAllowedBy(scriptSources(p, "attr"));

/**
 * Which kind of inline script a policy leaves unrestricted, when it restricts the other: the
 * message then names it rather than 'unsafe-inline'.
 */
function unrestrictedKind(p: Policy): "handlers" | "elements" | null {
  const elem = scriptSources(p, "elem");
  const attr = scriptSources(p, "attr");
  if (attr === null && elem !== null && !inlineAllowedBy(elem)) return "handlers";
  if (elem === null && attr !== null && !inlineAllowedBy(attr)) return "elements";
  return null;
}

/** The message of `csp-unsafe-inline` for the policies, each of which allows inline script. */
function inlineMessage(all: readonly Policy[]): string | undefined {
  if (!all.some(restrictsScripts)) {
    return "The Content-Security-Policy does not restrict scripts (no script-src or default-src), so it does not stop cross-site scripting.";
  }
  const kinds = new Set(all.filter(restrictsScripts).map(unrestrictedKind));
  if (kinds.size !== 1) return undefined;
  if (kinds.has("handlers")) {
    return "The Content-Security-Policy restricts `<script>` elements but not event handlers (no script-src-attr, script-src or default-src), so injected markup can still run script.";
  }
  if (kinds.has("elements")) {
    return "The Content-Security-Policy restricts event handlers but not `<script>` elements (no script-src-elem, script-src or default-src), so injected markup can still run script.";
  }
  return undefined;
}

/**
 * The sources of `p` that let `<script src>` come from any host or scheme; none when
 * `'strict-dynamic'` is there, as browsers then ignore host and scheme sources (CSP3 §8.2).
 * Workers, the other script fetch, must be same-origin or a blob, whatever the policy.
 */
function anySources(p: Policy): string[] {
  const src = scriptSources(p, "elem");
  if (src === null || src.includes("'strict-dynamic'")) return [];
  // data: carries the script itself.
  return src.filter((s) => ANY_HOST.test(s) || s === "data:");
}

function allowsEval(p: Policy): boolean {
  const src = scriptSources(p, "eval");
  return src === null || src.includes("'unsafe-eval'");
}

/**
 * Sources that let plugins come from anywhere: any host (`*`, `https://*`) or a whole scheme
 * (`https:`, `data:`, `blob:`), which any site can serve or any page can make.
 */
const broadSource = (s: string) => ANY_HOST.test(s) || /^[a-z][a-z0-9+.-]*:$/.test(s);

/** Whether a source list matches no URL at all: empty, or only keywords such as 'none'. */
const matchesNoUrl = (list: readonly string[]) =>
  list.every((s) => s.startsWith("'") && s !== "'self'");

/**
 * The policy restricts plugins when its object-src has no broad source, or, without one, when
 * its default-src allows none (empty, `'none'`, or only keywords like `'unsafe-inline'`).
 */
function restrictsObjects(p: Policy): boolean {
  const object = p.get("object-src")?.map((s) => s.toLowerCase());
  if (object !== undefined) return !object.some(broadSource);
  const fallback = p.get("default-src")?.map((s) => s.toLowerCase());
  return fallback !== undefined && matchesNoUrl(fallback);
}

/** The broad object-src sources of the policies, when some policy has one. */
function broadObjectSources(all: readonly Policy[]): string[] {
  const sources = all.flatMap((p) => p.get("object-src") ?? []);
  return [...new Set(sources.map((s) => s.toLowerCase()).filter(broadSource))];
}

/** A host no site lists: a base-uri that lets `<base>` point there lets it point anywhere. */
const ANY_OTHER_HOST = new URL("https://elsewhere.invalid/");

/** Whether the policy's base-uri keeps `<base>` from pointing to any host (`*`, `https:`). */
function restrictsBase(p: Policy, pageUrl: URL): boolean {
  const list = p.get("base-uri");
  return list !== undefined && !matchesSourceList(ANY_OTHER_HOST, list, pageUrl);
}

/** Whether the policy's form-action keeps forms from submitting to any host (`*`, `https:`). */
function restrictsForms(p: Policy, pageUrl: URL): boolean {
  const list = p.get("form-action");
  return list !== undefined && !matchesSourceList(ANY_OTHER_HOST, list, pageUrl);
}

/**
 * `csp-object-any-source` when a policy's own object-src names a broad source (Observatory and
 * CSP Evaluator judge it as they judge script from any host), else `csp-no-object-src`.
 */
function objectFinding(all: readonly Policy[]): Finding {
  const broad = broadObjectSources(all);
  if (broad.length === 0) return found(CSP_NO_OBJECT_SRC);
  const named = broad.map((s) => `\`${s}\``).join(", ");
  return found(
    CSP_OBJECT_ANY_SOURCE,
    `The Content-Security-Policy's object-src lets plugins load from any host or scheme (${named.slice(0, 120)}), so it restricts nothing.`,
  );
}

/** `csp-no-form-action` when no policy keeps forms to known hosts; form-action has no fallback. */
function formFinding(all: readonly Policy[], pageUrl: URL): Finding[] {
  if (all.some((p) => restrictsForms(p, pageUrl))) return [];
  if (!all.some((p) => p.has("form-action"))) return [found(CSP_NO_FORM_ACTION)];
  const named = [...new Set(all.flatMap((p) => p.get("form-action") ?? []))]
    .map((s) => `\`${s}\``)
    .join(" ");
  return [
    found(
      CSP_NO_FORM_ACTION,
      `The Content-Security-Policy's form-action (${named.slice(0, 120)}) lets forms submit to any host, so it restricts nothing.`,
    ),
  ];
}

export function judgeCsp(e: Evidence): Finding[] {
  if (e.chain.final === null) return [];
  const header = headerPolicies(e);
  const meta = metaPolicies(e);
  const all = [...header, ...meta];
  const out: Finding[] = [];
  if (header.length === 0 && finalHeader(e, "content-security-policy").length > 0) {
    out.push(found(CSP_INVALID));
  }
  if (all.length === 0) {
    // A missing header is CSP_MISSING, found from the check entry.
    if (finalHeader(e, "content-security-policy-report-only").length > 0) {
      out.push(found(CSP_REPORT_ONLY));
    }
    return out;
  }
  if (all.every(allowsInline)) out.push(found(CSP_UNSAFE_INLINE, inlineMessage(all)));
  // Like the inline judge: every policy must let it through (one without script sources does).
  const open = all.map(anySources);
  const everyOpen = all.every(
    (p, i) => scriptSources(p, "elem") === null || (open[i]?.length ?? 0) > 0,
  );
  if (everyOpen && open.some((o) => o.length > 0)) {
    const named = [...new Set(open.flat())].map((s) => `\`${s}\``).join(", ");
    out.push(
      found(
        CSP_SCRIPT_ANY_SOURCE,
        `The Content-Security-Policy lets scripts load from any host or scheme (${named}), so an attacker's script passes it too.`,
      ),
    );
  }
  if (all.some((p) => scriptSources(p, "eval") !== null) && all.every(allowsEval)) {
    out.push(found(CSP_UNSAFE_EVAL));
  }
  if (!all.some(restrictsObjects)) out.push(objectFinding(all));
  if (!all.some((p) => p.has("base-uri"))) {
    out.push(found(CSP_NO_BASE_URI));
  } else if (!all.some((p) => restrictsBase(p, e.chain.finalUrl))) {
    const named = [...new Set(all.flatMap((p) => p.get("base-uri") ?? []))]
      .map((s) => `\`${s}\``)
      .join(" ");
    out.push(
      found(
        CSP_NO_BASE_URI,
        `The Content-Security-Policy's base-uri (${named.slice(0, 120)}) lets \`<base>\` point to any host, so it restricts nothing.`,
      ),
    );
  }
  out.push(...formFinding(all, e.chain.finalUrl));
  if (header.length === 0) out.push(found(CSP_IN_META));
  return out;
}

export const cspRule = defineRule({
  topic: "csp",
  check: {
    kind: "header",
    name: "csp",
    field: "csp_present",
    header: "content-security-policy",
    missing: CSP_MISSING,
    // A Content-Security-Policy in a <meta> tag protects although the header is missing.
    waived: hasMetaCsp,
    label: "Content-Security-Policy (CSP)",
  },
  findings: [
    CSP_MISSING,
    CSP_INVALID,
    CSP_UNSAFE_INLINE,
    CSP_SCRIPT_ANY_SOURCE,
    CSP_UNSAFE_EVAL,
    CSP_OBJECT_ANY_SOURCE,
    CSP_NO_OBJECT_SRC,
    CSP_NO_BASE_URI,
    CSP_NO_FORM_ACTION,
    CSP_REPORT_ONLY,
    CSP_IN_META,
  ],
  judge: judgeCsp,
});
