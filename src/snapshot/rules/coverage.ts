/**
 * What one report covers, in the words every description for agents and people uses (llms.txt,
 * /.well-known/x402, the OpenAPI document): one phrase for each topic of the
 * registry, so no description names a part as if it were the whole (test/docs/coverage.test.ts
 * holds each description to every topic).
 */
export const REPORT_COVERAGE =
  "reachability, redirects, whether HTTPS works and the http:// side, TLS and the certificate, " +
  "six security headers (HSTS, CSP, X-Frame-Options, X-Content-Type-Options, Referrer-Policy, " +
  "Permissions-Policy) and how well they are set, cookies, CORS, cross-origin isolation, " +
  "script integrity, mixed content, server version disclosure, security.txt / robots.txt / " +
  "sitemap.xml, the domain's CAA, SPF, DMARC and MTA-STS records, and a paid endpoint's own x402 " +
  "challenge (what it asks, and whether clients can pay it)";
