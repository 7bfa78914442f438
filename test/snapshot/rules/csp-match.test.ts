import { describe, expect, it } from "vitest";
import { matchesSourceList } from "../../../src/snapshot/rules/csp-match.js";

const HTTP_PAGE = new URL("http://example.com/dir/page");
const HTTPS_PAGE = new URL("https://example.com/dir/page");

/** Whether `url` matches `list` (space-separated) for a page at `self`. */
const matches = (url: string, list: string, self = HTTPS_PAGE) =>
  matchesSourceList(new URL(url), list.split(" ").filter(Boolean), self);

describe("a URL against a CSP source list (CSP3 URL matching, no redirect)", () => {
  it("'none' alone and the empty list match nothing; 'none' beside a source is no effect", () => {
    expect(matches("https://example.com/", "'none'")).toBe(false);
    expect(matches("https://example.com/", "'NONE'")).toBe(false);
    expect(matches("https://example.com/", "")).toBe(false);
    expect(matches("https://example.com/", "'none' https://example.com")).toBe(true);
  });

  it("* matches http(s) URLs and the page's own scheme, no other", () => {
    expect(matches("http://any.net/", "*")).toBe(true);
    expect(matches("https://any.net/", "*")).toBe(true);
    expect(matches("data:text/html,x", "*")).toBe(false);
    expect(matches("wss://any.net/", "*")).toBe(false);
    expect(matches("ftp://any.net/", "*", new URL("ftp://example.com/"))).toBe(true);
  });

  it("a scheme-source matches its scheme and its secure upgrade (http: then https:, ws: then wss:)", () => {
    expect(matches("https://a.net/", "https:")).toBe(true);
    expect(matches("https://a.net/", "HTTP:")).toBe(true);
    expect(matches("http://a.net/", "https:")).toBe(false);
    expect(matches("data:text/plain,x", "data:")).toBe(true);
    expect(matches("data:text/plain,x", "http:")).toBe(false);
    expect(matches("wss://a.net/", "ws:")).toBe(true);
    expect(matches("https://a.net/", "ws:")).toBe(true);
    expect(matches("https://a.net/", "wss:")).toBe(true);
    expect(matches("ws://a.net/", "wss:")).toBe(false);
  });

  it("a host-source with a scheme: that scheme or its upgrade (ws: reaches http: and https: too)", () => {
    expect(matches("https://cdn.net/x", "https://cdn.net")).toBe(true);
    expect(matches("https://cdn.net/x", "http://cdn.net")).toBe(true);
    expect(matches("http://cdn.net/x", "https://cdn.net")).toBe(false);
    expect(matches("http://cdn.net/x", "ws://cdn.net")).toBe(true);
    expect(matches("http://cdn.net/x", "wss://cdn.net")).toBe(false);
  });

  it("a host-source without a scheme takes the page's, with its upgrade", () => {
    expect(matches("https://cdn.net/", "cdn.net", HTTP_PAGE)).toBe(true);
    expect(matches("http://cdn.net/", "cdn.net", HTTP_PAGE)).toBe(true);
    expect(matches("http://cdn.net/", "cdn.net", HTTPS_PAGE)).toBe(false);
    expect(matches("https://cdn.net/", "cdn.net", HTTPS_PAGE)).toBe(true);
  });

  it("hosts: any case; *. matches subdomains only; * any name; an IP address only as 127.0.0.1", () => {
    expect(matches("https://CDN.Net/", "cdn.NET")).toBe(true);
    expect(matches("https://cdn.net/", "cdn.net.example")).toBe(false);
    expect(matches("https://a.cdn.net/", "*.cdn.net")).toBe(true);
    expect(matches("https://a.b.cdn.net/", "*.CDN.net")).toBe(true);
    expect(matches("https://cdn.net/", "*.cdn.net")).toBe(false);
    expect(matches("https://evilcdn.net/", "*.cdn.net")).toBe(false);
    expect(matches("https://a.cdn.net/", "cdn.net")).toBe(false);
    expect(matches("https://any.net/", "https://*")).toBe(true);
    expect(matches("http://any.net/", "https://*")).toBe(false);
    expect(matches("https://10.0.0.1/", "https://*")).toBe(false);
    expect(matches("https://10.0.0.1/", "10.0.0.1")).toBe(false);
    expect(matches("https://[::1]/", "https://*")).toBe(false);
    expect(matches("http://127.0.0.1/", "http://127.0.0.1")).toBe(true);
    expect(matches("data:text/plain,x", "data://x")).toBe(false);
    expect(matches("foo://cdn.net/", "foo://cdn.net")).toBe(false);
    expect(matches("file:///etc/x", "file://*")).toBe(false);
  });

  it("ports: none is the scheme's default; a number; *; no 80→443 upgrade", () => {
    expect(matches("https://cdn.net/", "https://cdn.net")).toBe(true);
    expect(matches("https://cdn.net:8443/", "https://cdn.net")).toBe(false);
    expect(matches("https://cdn.net/", "https://cdn.net:443")).toBe(true);
    expect(matches("https://cdn.net:8443/", "https://cdn.net:8443")).toBe(true);
    expect(matches("https://cdn.net:8443/", "https://cdn.net:08443")).toBe(true);
    expect(matches("https://cdn.net:8443/", "https://cdn.net:443")).toBe(false);
    expect(matches("https://cdn.net:8443/", "https://cdn.net:*")).toBe(true);
    expect(matches("https://cdn.net/", "http://cdn.net")).toBe(true);
    expect(matches("https://cdn.net/", "http://cdn.net:80")).toBe(false);
    expect(matches("http://cdn.net/", "http://cdn.net:80")).toBe(true);
  });

  it("paths: ending in / a prefix, else exact; compared percent-decoded, segment by segment", () => {
    expect(matches("https://cdn.net/js/a.js", "https://cdn.net/js/")).toBe(true);
    expect(matches("https://cdn.net/js/sub/a.js", "https://cdn.net/js/")).toBe(true);
    expect(matches("https://cdn.net/jsx/a.js", "https://cdn.net/js/")).toBe(false);
    expect(matches("https://cdn.net/js", "https://cdn.net/js/")).toBe(false);
    expect(matches("https://cdn.net/js/a.js", "https://cdn.net/js/a.js")).toBe(true);
    expect(matches("https://cdn.net/js/a.js?v=1", "https://cdn.net/js/a.js")).toBe(true);
    expect(matches("https://cdn.net/js/a.jsx", "https://cdn.net/js/a.js")).toBe(false);
    expect(matches("https://cdn.net/js/a.js/", "https://cdn.net/js/a.js")).toBe(false);
    expect(matches("https://cdn.net/anything", "https://cdn.net/")).toBe(true);
    expect(matches("https://cdn.net/ab/x", "https://cdn.net/%61b/")).toBe(true);
    expect(matches("https://cdn.net/%7Euser/x", "https://cdn.net/~user/")).toBe(true);
    expect(matches("https://cdn.net/a%2Fb", "https://cdn.net/a/b")).toBe(false);
  });

  it("'self': the page's origin, or its host on https (or on http from an http page) at default ports", () => {
    expect(matches("https://example.com/other", "'self'")).toBe(true);
    expect(matches("https://example.com/other", "'SELF'")).toBe(true);
    expect(matches("http://example.com/", "'self'", HTTPS_PAGE)).toBe(false);
    expect(matches("https://example.com/", "'self'", HTTP_PAGE)).toBe(true);
    expect(matches("wss://example.com/", "'self'", HTTP_PAGE)).toBe(true);
    expect(matches("https://example.com:8443/", "'self'", HTTP_PAGE)).toBe(false);
    expect(
      matches("https://example.com:8080/", "'self'", new URL("http://example.com:8080/")),
    ).toBe(true);
    expect(matches("https://www.example.com/", "'self'")).toBe(false);
    expect(matches("data:text/plain,x", "'self'")).toBe(false);
    const ftp = new URL("ftp://example.com/");
    expect(matches("ftp://example.com/x", "'self'", ftp)).toBe(true);
  });

  it("other keywords, nonces and hashes match no URL", () => {
    for (const source of [
      "'unsafe-inline'",
      "'unsafe-eval'",
      "'strict-dynamic'",
      "'nonce-abc'",
      "'sha256-abc='",
      "'report-sample'",
      "self",
    ]) {
      expect(matches("https://example.com/", source), source).toBe(false);
    }
  });

  it("one matching expression among others is enough", () => {
    expect(matches("https://b.net/", "https://a.net 'self' https://b.net")).toBe(true);
    expect(matches("https://c.net/", "https://a.net 'self' https://b.net")).toBe(false);
  });
});
