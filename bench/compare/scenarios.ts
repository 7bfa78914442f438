/**
 * The sites `npm run compare` scans with both scanners: each a named set of response headers and
 * behaviour, mostly the best-practice site with one thing changed, so a grade difference points
 * at one judge.
 */
import type { IncomingMessage, OutgoingHttpHeaders } from "node:http";

/**
 * `same`: both scanners judge what the scenario changes, so the grades should agree within one
 * step. `more`: we judge something Observatory does not (or Observatory passes what browsers
 * ignore), so our grade is expected to be the stricter one.
 */
export type Overlap = "same" | "more";

export interface Scenario {
  /** Also the site's name: `<id>.test`. */
  id: string;
  /** What the site does, for the table. */
  what: string;
  overlap: Overlap;
  /** For `more`: what Observatory does not judge, or passes although browsers do not. */
  why?: string;
  /** `ok`: a certificate from the trusted CA; `untrusted`: a self-signed one; `none`: no :443. */
  https: "ok" | "untrusted" | "none";
  /** What http://<name>/ does: 301 to https://<name>/, 301 to https://www.<name>/, serve the
   * page, or nothing listening on :80. */
  http: "redirect" | "redirect-www" | "serve" | "none";
  /** Headers of the page (every response of the site, the redirects excepted). */
  headers: OutgoingHttpHeaders;
  /** Headers that depend on the request (a CORS reflection). */
  dynamicHeaders?: (req: IncomingMessage) => OutgoingHttpHeaders;
  /** The page's HTML. */
  html: string;
  securityTxt: boolean;
}

const PAGE = "<!doctype html><html><head><title>site</title></head><body>hello</body></html>";

/** Strict values of everything either scanner looks at. */
const BEST_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";
/** The same without frame-ancestors, so X-Frame-Options is what protects against framing. */
const CSP_NO_FRAME_ANCESTORS = BEST_CSP.replace("; frame-ancestors 'none'", "");

const BEST_HEADERS: OutgoingHttpHeaders = {
  "content-type": "text/html; charset=utf-8",
  "strict-transport-security": "max-age=63072000; includeSubDomains; preload",
  "content-security-policy": BEST_CSP,
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "permissions-policy": "camera=(), microphone=(), geolocation=()",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

/** The best-practice site with `changes` (a null header is removed). */
function best(
  id: string,
  what: string,
  overlap: Overlap,
  changes: Partial<Omit<Scenario, "id" | "what" | "overlap" | "headers">> & {
    headers?: Record<string, string | string[] | null>;
  } = {},
): Scenario {
  const headers: OutgoingHttpHeaders = { ...BEST_HEADERS };
  for (const [name, value] of Object.entries(changes.headers ?? {})) {
    if (value === null) delete headers[name];
    else headers[name] = value;
  }
  return {
    https: "ok",
    http: "redirect",
    html: PAGE,
    securityTxt: true,
    ...changes,
    id,
    what,
    overlap,
    headers,
  };
}

/** Every security header either scanner reads, removed. */
const NO_SECURITY_HEADERS = Object.fromEntries(
  Object.keys(BEST_HEADERS)
    .filter((h) => h !== "content-type")
    .map((h) => [h, null]),
);

export const SCENARIOS: readonly Scenario[] = [
  best("best-practice", "every header strict, HSTS preload-grade, strict CSP", "same"),
  best("no-headers", "HTTPS, `http://` redirects, no security header", "same", {
    headers: NO_SECURITY_HEADERS,
    securityTxt: false,
  }),
  best("http-only", "plain HTTP only (nothing on :443), no security header", "same", {
    https: "none",
    http: "serve",
    headers: NO_SECURITY_HEADERS,
    securityTxt: false,
  }),
  best("untrusted-cert", "self-signed certificate, `http://` serves the page", "more", {
    why: "Observatory grades the headers of the unverified HTTPS answer; no working HTTPS is F (docs/findings.md, Score and grade)",
    https: "untrusted",
    http: "serve",
  }),
  best("http-no-redirect", "HTTPS works but `http://` serves the page", "same", { http: "serve" }),
  best("http-redirect-www", "`http://` redirects to `https://www.<name>/`", "same", {
    http: "redirect-www",
  }),
  best("csp-missing", "no Content-Security-Policy", "same", {
    headers: { "content-security-policy": null },
  }),
  best("csp-unsafe-inline", "`script-src 'self' 'unsafe-inline'`", "same", {
    headers: {
      "content-security-policy": BEST_CSP.replace(
        "script-src 'self'",
        "script-src 'self' 'unsafe-inline'",
      ),
    },
  }),
  best("csp-unsafe-eval", "`script-src 'self' 'unsafe-eval'`", "same", {
    headers: {
      "content-security-policy": BEST_CSP.replace(
        "script-src 'self'",
        "script-src 'self' 'unsafe-eval'",
      ),
    },
  }),
  best("csp-any-https", "`script-src 'self' https: data:`", "same", {
    headers: {
      "content-security-policy": BEST_CSP.replace(
        "script-src 'self'",
        "script-src 'self' https: data:",
      ),
    },
  }),
  best("csp-report-only", "only Content-Security-Policy-Report-Only", "same", {
    headers: { "content-security-policy": null, "content-security-policy-report-only": BEST_CSP },
  }),
  best("csp-meta-only", "CSP only in `<meta http-equiv>`", "same", {
    headers: { "content-security-policy": null },
    html: `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="${CSP_NO_FRAME_ANCESTORS}"><title>site</title></head><body>hello</body></html>`,
  }),
  best("csp-no-object-src", "CSP `default-src 'self'` only (no object-src, base-uri)", "more", {
    why: "Observatory does not judge object-src or base-uri",
    headers: { "content-security-policy": "default-src 'self'" },
  }),
  best("hsts-short", "HSTS `max-age=60`", "same", {
    headers: { "strict-transport-security": "max-age=60" },
  }),
  best("hsts-missing", "no HSTS on a working HTTPS site", "same", {
    headers: { "strict-transport-security": null },
  }),
  best("xfo-missing", "no X-Frame-Options, no frame-ancestors", "same", {
    headers: { "x-frame-options": null, "content-security-policy": CSP_NO_FRAME_ANCESTORS },
  }),
  best("xfo-allow-from", "`X-Frame-Options: ALLOW-FROM` (browsers ignore it)", "more", {
    why: "Observatory passes ALLOW-FROM, which current browsers ignore",
    headers: {
      "x-frame-options": "ALLOW-FROM https://other.test",
      "content-security-policy": CSP_NO_FRAME_ANCESTORS,
    },
  }),
  best("nosniff-missing", "no X-Content-Type-Options", "same", {
    headers: { "x-content-type-options": null },
  }),
  best("referrer-unsafe-url", "`Referrer-Policy: unsafe-url`", "same", {
    headers: { "referrer-policy": "unsafe-url" },
  }),
  best("cookie-insecure", "session cookie without Secure or HttpOnly", "same", {
    headers: { "set-cookie": "sessionid=abc123; Path=/" },
  }),
  best("cookie-no-httponly", "session cookie Secure but without HttpOnly", "same", {
    headers: { "set-cookie": "sessionid=abc123; Path=/; Secure; SameSite=Lax" },
  }),
  best("cors-wildcard-creds", "`Access-Control-Allow-Origin: *` with credentials", "more", {
    why: "Observatory passes `*` whatever the credentials header says",
    headers: {
      "access-control-allow-origin": "*",
      "access-control-allow-credentials": "true",
    },
  }),
  best("cors-reflect-creds", "any Origin echoed, with credentials", "more", {
    // Its CORS test reads the Origin it sent from `response.request.headers`, which Node's
    // ClientRequest does not have, so it never sees a reflection.
    why: "Observatory 1.4.8 misses the reflection (it cannot read back the Origin it sent)",
    dynamicHeaders: (req) =>
      req.headers.origin
        ? {
            "access-control-allow-origin": req.headers.origin,
            "access-control-allow-credentials": "true",
            vary: "Origin",
          }
        : {},
  }),
  best("sri-missing", "a script from another origin without integrity", "same", {
    headers: {
      "content-security-policy": BEST_CSP.replace(
        "script-src 'self'",
        "script-src 'self' https://cdn.other.test",
      ),
    },
    html: `<!doctype html><html><head><script src="https://cdn.other.test/lib.js"></script><title>site</title></head><body>hello</body></html>`,
  }),
  best("permissions-policy-missing", "no Permissions-Policy", "more", {
    why: "Observatory does not read Permissions-Policy",
    headers: { "permissions-policy": null },
  }),
  best("security-txt-missing", "no `/.well-known/security.txt`", "more", {
    why: "Observatory does not read security.txt",
    securityTxt: false,
  }),
  best("csp-object-any", "`object-src *`: plugins from any host", "same", {
    headers: { "content-security-policy": BEST_CSP.replace("object-src 'none'", "object-src *") },
  }),
  best("csp-default-inline-only", "`default-src 'unsafe-inline'`, no object-src", "same", {
    headers: {
      "content-security-policy": BEST_CSP.replace(
        "default-src 'none'",
        "default-src 'unsafe-inline'",
      ).replace("object-src 'none'; ", ""),
    },
  }),
  best("csp-no-form-action", "CSP without form-action (it has no fallback)", "same", {
    headers: { "content-security-policy": BEST_CSP.replace("form-action 'self'; ", "") },
  }),
  best("referrer-origin", "`Referrer-Policy: origin-when-cross-origin`", "same", {
    headers: { "referrer-policy": "origin-when-cross-origin" },
  }),
  best("cookie-affinity", "a load balancer's affinity cookie, Secure, not HttpOnly", "same", {
    headers: { "set-cookie": "heroku-session-affinity=ACyDaANoA24; Secure; Path=/" },
  }),
  best("cookie-other-domain", "a session cookie with a Domain of another site", "same", {
    headers: { "set-cookie": "sessionid=abc123; Path=/; Domain=other.test" },
  }),
  best("cookie-samesite-typo", "`SameSite=Stirct` on a Secure, HttpOnly session cookie", "same", {
    headers: { "set-cookie": "sessionid=abc123; Path=/; Secure; HttpOnly; SameSite=Stirct" },
  }),
  best("corp-invalid", "`Cross-Origin-Resource-Policy: same-orign`", "same", {
    headers: { "cross-origin-resource-policy": "same-orign" },
  }),
  best("coop-coep-invalid", "COOP `same-origin-allowpopups`, COEP `require_corp`", "more", {
    why: "Observatory 1.4.8 does not read COOP or COEP; its current code takes 5 for each invalid one, as we do",
    headers: {
      "cross-origin-opener-policy": "same-origin-allowpopups",
      "cross-origin-embedder-policy": "require_corp",
    },
  }),
];
