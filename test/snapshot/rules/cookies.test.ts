import { describe, expect, it } from "vitest";
import { judgeCookies } from "../../../src/snapshot/rules/cookies.js";
import type { Evidence } from "../../../src/snapshot/rules/evidence.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

/** A chain of responses, each setting its cookies; the last is the final one. */
function chainOf(...hops: [url: string, cookies: string[]][]): Evidence {
  const e = evidenceOf({}, { url: hops[hops.length - 1]?.[0] });
  const all = hops.map(([url, cookies], i) => ({
    url,
    status: i < hops.length - 1 ? 302 : 200,
    headers: { "set-cookie": cookies },
  }));
  return {
    ...e,
    input: new URL(hops[0]?.[0] ?? ""),
    chain: {
      ...e.chain,
      hops: all,
      final: all[all.length - 1] ?? null,
      redirectCount: all.length - 1,
    },
  };
}

const find = (cookies: string[], url?: string) =>
  judgeCookies(evidenceOf({ "set-cookie": cookies }, { url }));
const ids = (cookies: string[], url?: string) => idsOf(find(cookies, url));

describe("cookies of every response of the chain", () => {
  it("good: Secure, HttpOnly session cookies, valid prefixes", () => {
    expect(
      ids([
        "sid=1; Secure; HttpOnly; SameSite=Lax",
        "theme=dark; Secure",
        "__Host-id=2; Secure; Path=/; HttpOnly",
        "__Secure-x=3; Secure; Domain=site.test",
        "csrf_token=4; Secure; SameSite=Strict",
      ]),
    ).toEqual([]);
  });

  it("weak: no Secure on https, no HttpOnly on a session cookie, SameSite=None without Secure", () => {
    expect(ids(["theme=dark"])).toEqual(["cookie-no-secure"]);
    expect(ids(["PHPSESSID=1; Secure; SameSite=Lax"])).toEqual(["cookie-no-httponly"]);
    expect(ids(["auth_token=1; Secure; httponly; samesite=strict"])).toEqual([]);
    expect(ids(["track=1; SameSite=None"], "http://site.test/")).toEqual([
      "cookie-samesite-none-insecure",
    ]);
    // Over plain http no cookie can be Secure: that is the http finding's business, not this one.
    expect(ids(["theme=dark"], "http://site.test/")).toEqual([]);
  });

  it("invalid: prefix rules broken", () => {
    for (const c of [
      "__Host-a=1; Path=/",
      "__Host-a=1; Secure; Path=/app",
      "__Host-a=1; Secure; Path=/; Domain=site.test",
      "__Secure-a=1; Path=/",
    ]) {
      expect(ids([c]), c).toContain("cookie-prefix-invalid");
    }
  });

  it("one finding per kind, naming the first cookie and counting the rest; odd names are not repeated", () => {
    const [f] = find(["a=1", "b=2", "c=3"]);
    expect(f?.message).toMatch(/^The cookie "a" \(and 2 more\) is set without Secure/);
    const [odd] = find(["<script>=1"]);
    expect(odd?.message).toMatch(/^A cookie is set without Secure/);
  });

  it("SameSite: a session cookie without it (or with an unknown value) is said, as info", () => {
    const r = find([
      "sid=1; Secure; HttpOnly",
      "theme=dark; Secure",
      "token=2; Secure; HttpOnly; SameSite=Foo",
    ]);
    expect(r.map((f) => [f.id, f.severity])).toEqual([["cookie-no-samesite", "info"]]);
    expect(r[0]?.message).toMatch(
      /^The cookie "sid" \(and 1 more\) looks like a session cookie but is set without SameSite/,
    );
    expect(ids(["sid=1; Secure; HttpOnly; SameSite=None"])).toEqual([]);
  });

  it("a cookie set by a redirect is judged like the final page's, by its own response's scheme", () => {
    const e = chainOf(
      ["http://site.test/", ["visit=1"]],
      ["https://site.test/login", ["session=abc; Path=/", "__Host-x=1; Path=/"]],
      ["https://site.test/home", []],
    );
    expect(idsOf(judgeCookies(e))).toEqual([
      "cookie-no-secure",
      "cookie-no-httponly",
      "cookie-prefix-invalid",
      "cookie-no-samesite",
    ]);
    // The http: hop's cookie is not asked to be Secure; the https: one is.
    expect(judgeCookies(e)[0]?.message).toMatch(/^The cookie "session" \(and 1 more\)/);
    // Set again (same name, domain, path) by a later response: the last one counts.
    const fixed = chainOf(
      ["https://site.test/", ["session=abc"]],
      ["https://site.test/home", ["session=abc; Secure; HttpOnly; SameSite=Lax"]],
    );
    expect(idsOf(judgeCookies(fixed))).toEqual([]);
  });
});
