/**
 * Cookies set by every response of the redirect chain (docs/findings.md), parsed by undici
 * (RFC 6265bis): a cookie set by a redirect is kept by the browser like the final page's.
 */
import { createRequire } from "node:module";
import type * as Tldts from "tldts";
import type * as ToughCookie from "tough-cookie";
import type { Cookie } from "undici";
import { parseSetCookie } from "../net/set-cookie.js";
import type { Hop } from "../types.js";
import { isPotentiallyTrustworthy } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";

/** Names that look like a session or credential; csrf/xsrf tokens are meant to be read by scripts. */
const SESSION_LIKE = /sess|sid|auth|token|jwt|login/i;
const SCRIPT_READABLE = /csrf|xsrf/i;
/**
 * Load balancers' affinity cookies (`heroku-session-affinity`, `ARRAffinity`, `AWSALB`, …): they
 * pick a backend and let nobody in, whatever "session" in their name says.
 */
const AFFINITY = /affinity|sticky|^awsalb|^awselb|^route$|^serverid$|^bigipserver/i;

export const COOKIE_NO_SECURE: FindingDef = {
  id: "cookie-no-secure",
  check: "cookies",
  severity: "medium",
  penalty: 10,
  message: "A cookie is set without Secure on an HTTPS page, so it can leak over plain HTTP.",
  recommendation: "Add `Secure` to every cookie the site sets over HTTPS.",
};
export const COOKIE_NO_HTTPONLY: FindingDef = {
  id: "cookie-no-httponly",
  check: "cookies",
  severity: "medium",
  message:
    "A session cookie is set without HttpOnly, so scripts (and injected scripts) can read it.",
  recommendation: "Add `HttpOnly` to session and authentication cookies.",
};
export const COOKIE_SAMESITE_NONE_INSECURE: FindingDef = {
  id: "cookie-samesite-none-insecure",
  check: "cookies",
  severity: "low",
  message: "A cookie has SameSite=None without Secure; browsers reject it.",
  recommendation: "Add `Secure` to every cookie with `SameSite=None` (or use `SameSite=Lax`).",
};
export const COOKIE_PREFIX_INVALID: FindingDef = {
  id: "cookie-prefix-invalid",
  check: "cookies",
  severity: "low",
  message:
    "A cookie breaks the rules of its name prefix (`__Host-` needs Secure, Path=/ and no Domain; `__Secure-` needs Secure); browsers reject it.",
  recommendation:
    "Set `__Host-` cookies with `Secure; Path=/` and no `Domain`, and `__Secure-` cookies with `Secure`.",
};

export const COOKIE_SAMESITE_INVALID: FindingDef = {
  id: "cookie-samesite-invalid",
  check: "cookies",
  severity: "low",
  // The SameSite meant is dropped, so Firefox and Safari send the cookie cross-site; Observatory
  // takes 20 (docs/findings.md "Score and grade").
  penalty: 15,
  message:
    "A cookie's SameSite is none of Strict, Lax or None; browsers ignore it and apply their own default.",
  recommendation: "Write `SameSite=Lax` (or `Strict`, or `None` with `Secure`), spelt as here.",
};
export const COOKIE_DOMAIN_REJECTED: FindingDef = {
  id: "cookie-domain-rejected",
  check: "cookies",
  severity: "low",
  message:
    "A cookie is set with a Domain that is not the host's own nor one it belongs to; browsers reject it.",
  recommendation:
    "Set `Domain` to the host that sends the cookie or a parent domain of it (or leave it out).",
};

export const COOKIE_NO_SAMESITE: FindingDef = {
  id: "cookie-no-samesite",
  check: "cookies",
  severity: "info",
  message:
    "A session cookie is set without SameSite, so browsers that do not default to Lax send it with cross-site requests (CSRF).",
  recommendation: "Add `SameSite=Lax` (or `Strict`) to session and authentication cookies.",
};

/** The cookie's name if it is short and plain enough to repeat, else a neutral word. */
function nameOf(c: Cookie): string {
  return /^[A-Za-z0-9_.-]{1,40}$/.test(c.name) ? `The cookie "${c.name}"` : "A cookie";
}

function prefixBroken(c: SetCookie): boolean {
  const name = c.name.toLowerCase();
  // An empty Domain is ignored (RFC 6265bis §5.6.3): the cookie stays host-only.
  const domain = c.domain !== undefined && c.domain !== "";
  // `__Host-` needs a Path attribute of "/" (§4.1.3.2). An empty one at the root stores "/" by
  // §5.6.4, but Chromium checks the attribute as written and rejects it: judged as written.
  if (name.startsWith("__host-")) return !c.secure || c.pathAttribute !== "/" || domain;
  if (name.startsWith("__secure-")) return !c.secure;
  return false;
}

/** One finding per id, naming the first cookie that has it and counting the others. */
function about(def: FindingDef, cookies: Cookie[], what: string): Finding[] {
  const [first] = cookies;
  if (!first) return [];
  const more = cookies.length > 1 ? ` (and ${cookies.length - 1} more)` : "";
  return [found(def, `${nameOf(first)}${more} ${what}`)];
}

// tough-cookie is required on the first cookie with an Expires or a Domain, and tldts on the
// first Domain tough-cookie accepts, not at start-up, as tldts is in dns.ts (docs/benchmarks.md,
// "Start-up").
const requireCjs = createRequire(import.meta.url);
let toughCookie: typeof ToughCookie | undefined;
const tough = () => (toughCookie ??= requireCjs("tough-cookie") as typeof ToughCookie);
let tldts: typeof Tldts | undefined;
/** The public suffix of a domain, private ones too (`github.io`), as browsers' list has them. */
function publicSuffix(domain: string): string | null {
  tldts ??= requireCjs("tldts") as typeof Tldts;
  return tldts.getPublicSuffix(domain, { allowPrivateDomains: true });
}

/**
 * An Expires value read as browsers read it (RFC 6265bis §5.1.1: tough-cookie's parser), in ms
 * since the epoch; null for one that is no cookie-date, which browsers ignore (`Expires=0` is
 * none, not 1970).
 */
function cookieDate(value: string): number | null {
  return tough().parseDate(value)?.getTime() ?? null;
}

/** A Set-Cookie attribute, its name lower-cased and its value trimmed (RFC 6265bis §5.6). */
interface Attribute {
  name: string;
  value: string;
}

/** A Set-Cookie's attributes, in order: read once, for deletion and path alike. */
function attributes(raw: string): Attribute[] {
  return raw
    .split(";")
    .slice(1)
    .map((av) => {
      const eq = av.indexOf("=");
      const name = (eq < 0 ? av : av.slice(0, eq)).trim().toLowerCase();
      return { name, value: eq < 0 ? "" : av.slice(eq + 1).trim() };
    });
}

/**
 * Whether a Set-Cookie deletes its cookie instead of setting it (RFC 6265bis §5.7): its last
 * valid Max-Age is 0 or less, or, without one, its last valid Expires is not after `now`
 * (§5.6.1, §5.6.2). Read from the raw attributes: undici ignores a negative Max-Age and reads Expires
 * as a JavaScript date.
 */
function deletes(attrs: readonly Attribute[], now: number): boolean {
  let maxAge: number | undefined;
  let expires: number | undefined;
  for (const { name, value } of attrs) {
    if (name === "max-age" && /^-?\d+$/.test(value)) maxAge = Number(value);
    if (name === "expires") expires = cookieDate(value) ?? expires;
  }
  if (maxAge !== undefined) return maxAge <= 0;
  return expires !== undefined && expires <= now;
}

/** The value of a Set-Cookie's last Path attribute, the one that counts (RFC 6265bis §5.7). */
function pathAttribute(attrs: readonly Attribute[]): string | undefined {
  return attrs.findLast((a) => a.name === "path")?.value;
}

/**
 * The cookie's path as the browser stores it (RFC 6265bis §5.6.4): its Path, or, when that is
 * missing, empty or does not start with "/", the default path of the URL that set it (§5.1.4: its
 * directory). undici answers "/" for those.
 */
function storedPath(path: string | undefined, setBy: URL): string {
  if (path?.startsWith("/")) return path;
  return tough().defaultPath(setBy.pathname);
}

/**
 * A cookie as set by one response of the chain, and whether that response came over https;
 * `path` is the stored one, `pathAttribute` what the site wrote.
 */
interface SetCookie extends Cookie {
  overHttps: boolean;
  pathAttribute: string | undefined;
  /** The value of the last SameSite attribute as written, the one that counts (§5.7). */
  sameSiteAttribute: string | undefined;
}

/**
 * Whether browsers refuse the cookie for its Domain (RFC 6265bis §5.7): the host that set it
 * does not domain-match it, or it is a public suffix other than that host. undici gives the
 * Domain lower-cased, without its leading dot; an empty one is ignored (§5.6.3).
 */
function domainRejected(domain: string | undefined, setBy: URL): boolean {
  if (domain === undefined || domain === "") return false;
  const host = setBy.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (!tough().domainMatch(host, domain, false)) return true;
  return host !== domain && publicSuffix(domain) === domain;
}

/** The cookies the chain's responses leave stored, and those browsers reject for their Domain. */
interface ChainCookies {
  stored: SetCookie[];
  rejected: Cookie[];
}

/**
 * Every cookie the chain's responses leave stored, in order; one per name, domain and path (the
 * last). undici's parser answers null for a cookie it refuses (control characters, name and
 * value over 4096 bytes), as browsers do. A cookie rejected for its Domain stores and removes
 * nothing.
 */
function chainCookies(hops: readonly Hop[]): ChainCookies {
  const byKey = new Map<string, SetCookie>();
  const rejected: Cookie[] = [];
  for (const hop of hops) {
    const setBy = new URL(hop.url);
    const overHttps = setBy.protocol === "https:";
    const readAt = hop.readAt === undefined ? Date.now() : Date.parse(hop.readAt);
    const values = (hop.headers["set-cookie"] ?? []).map((v) => v.trim()).filter((v) => v !== "");
    for (const raw of values) {
      const c = parseSetCookie(raw);
      // A Secure cookie from plain http is ignored entirely (RFC 6265bis §5.7): not stored, and
      // it removes nothing.
      if (c === null || (c.secure === true && !isPotentiallyTrustworthy(setBy))) continue;
      if (domainRejected(c.domain, setBy)) {
        rejected.push(c);
        continue;
      }
      const attrs = attributes(raw);
      const pathAttr = pathAttribute(attrs);
      const path = storedPath(pathAttr, setBy);
      const key = `${c.name}\u0000${c.domain ?? ""}\u0000${path}`;
      byKey.delete(key);
      const sameSiteAttribute = attrs.findLast((a) => a.name === "samesite")?.value;
      // Expired as it is set: the stored one is removed and this one is never kept.
      if (!deletes(attrs, readAt))
        byKey.set(key, { ...c, path, pathAttribute: pathAttr, sameSiteAttribute, overHttps });
    }
  }
  return { stored: [...byKey.values()], rejected };
}

/**
 * Whether a cookie is a session or credential (docs/findings.md "How values are judged"): its
 * attributes first (HttpOnly: the site itself keeps it from scripts), then its name; never a
 * load balancer's affinity cookie, nor a csrf/xsrf token scripts must read.
 */
function isSession(c: Cookie): boolean {
  if (AFFINITY.test(c.name) || SCRIPT_READABLE.test(c.name)) return false;
  return c.httpOnly === true || SESSION_LIKE.test(c.name);
}

/** A session cookie browsers keep: one that breaks its prefix's rules is said by that alone. */
const keptSession = (c: SetCookie) => isSession(c) && !prefixBroken(c);

/** A SameSite attribute there, but its value none of the three (RFC 6265bis §5.6.7). */
const sameSiteInvalid = (c: SetCookie) =>
  c.sameSiteAttribute !== undefined && !/^(strict|lax|none)$/i.test(c.sameSiteAttribute);

export function judgeCookies(e: Evidence): Finding[] {
  const { stored: cookies, rejected } = chainCookies(e.chain.hops);
  if (cookies.length === 0 && rejected.length === 0) return [];
  return [
    ...about(
      COOKIE_NO_SECURE,
      // Over plain http a cookie cannot be Secure: the lack of HTTPS is said elsewhere.
      cookies.filter((c) => c.overHttps && !c.secure),
      "is set without Secure on an HTTPS page, so it can leak over plain HTTP.",
    ),
    ...about(
      COOKIE_NO_HTTPONLY,
      cookies.filter((c) => keptSession(c) && !c.httpOnly),
      "looks like a session cookie but is set without HttpOnly, so scripts can read it.",
    ),
    ...about(
      COOKIE_SAMESITE_NONE_INSECURE,
      cookies.filter((c) => c.sameSite === "None" && !c.secure),
      "has SameSite=None without Secure; browsers reject it.",
    ),
    ...about(
      COOKIE_PREFIX_INVALID,
      cookies.filter(prefixBroken),
      "breaks the rules of its name prefix (`__Host-` needs Secure, Path=/ and no Domain; `__Secure-` needs Secure); browsers reject it.",
    ),
    ...about(
      COOKIE_SAMESITE_INVALID,
      cookies.filter(sameSiteInvalid),
      "has a SameSite that is none of Strict, Lax or None; browsers ignore it and apply their own default.",
    ),
    ...about(
      COOKIE_DOMAIN_REJECTED,
      rejected,
      "is set with a Domain that is not the host's own nor one it belongs to; browsers reject it.",
    ),
    ...about(
      COOKIE_NO_SAMESITE,
      // An unknown SameSite value is no value (RFC 6265bis §5.6.7), said by its own finding.
      cookies.filter((c) => keptSession(c) && c.sameSite === undefined && !sameSiteInvalid(c)),
      "looks like a session cookie but is set without SameSite, so browsers that do not default to Lax send it with cross-site requests (CSRF).",
    ),
  ];
}

export const cookiesRule = defineRule({
  topic: "cookies",
  findings: [
    COOKIE_NO_SECURE,
    COOKIE_NO_HTTPONLY,
    COOKIE_SAMESITE_NONE_INSECURE,
    COOKIE_PREFIX_INVALID,
    COOKIE_SAMESITE_INVALID,
    COOKIE_DOMAIN_REJECTED,
    COOKIE_NO_SAMESITE,
  ],
  judge: judgeCookies,
});
