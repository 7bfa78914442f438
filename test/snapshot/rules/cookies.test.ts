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
        "__Host-id=2; Secure; Path=/; HttpOnly; SameSite=Strict",
        "__Secure-x=3; Secure; Domain=site.test",
        // An empty Domain is ignored (RFC 6265bis §5.6.3): still host-only.
        "__Host-sid=5; Secure; HttpOnly; SameSite=Lax; Path=/; Domain=",
        "__Host-sid2=6; Secure; HttpOnly; SameSite=Lax; Path=/; Domain=.",
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

  it('`__Host-` needs a Path attribute of "/" as written; a missing or odd one stores the directory', () => {
    const at = "https://site.test/app/login";
    for (const c of [
      "__Host-a=1; Secure",
      "__Host-a=1; Secure; Path=",
      "__Host-a=1; Secure; Path=app",
      "__Host-a=1; Secure; Path=/; Path=",
    ]) {
      expect(ids([c], at), c).toContain("cookie-prefix-invalid");
    }
    expect(ids(["__Host-a=1; Secure; Path=; Path=/"], at)).not.toContain("cookie-prefix-invalid");
  });

  it("a cookie is stored under its path: a deletion from another directory leaves it", () => {
    const e = chainOf(
      ["https://site.test/", ["sid=1"]],
      ["https://site.test/app/logout", ["sid=; Max-Age=0"]],
    );
    expect(idsOf(judgeCookies(e))).toEqual([
      "cookie-no-secure",
      "cookie-no-httponly",
      "cookie-no-samesite",
    ]);
    const samePath = chainOf(
      ["https://site.test/", ["sid=1"]],
      ["https://site.test/app/logout", ["sid=; Max-Age=0; Path=/"]],
    );
    expect(idsOf(judgeCookies(samePath))).toEqual([]);
  });

  it("a Secure cookie from plain http is ignored: not stored, and it removes nothing", () => {
    const ignored = chainOf(["http://site.test/", ["sid=1; Secure"]], ["https://site.test/", []]);
    expect(idsOf(judgeCookies(ignored))).toEqual([]);
    const kept = chainOf(
      ["https://site.test/", ["sid=1"]],
      ["http://site.test/", ["sid=; Secure; Max-Age=0"]],
    );
    expect(idsOf(judgeCookies(kept))).toEqual([
      "cookie-no-secure",
      "cookie-no-httponly",
      "cookie-no-samesite",
    ]);
  });

  it("one finding per kind, naming the first cookie and counting the rest; odd names are not repeated", () => {
    const [f] = find(["a=1", "b=2", "c=3"]);
    expect(f?.message).toMatch(/^The cookie "a" \(and 2 more\) is set without Secure/);
    const [odd] = find(["<script>=1"]);
    expect(odd?.message).toMatch(/^A cookie is set without Secure/);
  });

  it("SameSite: a session cookie without it is said, as info; an unknown value, as low", () => {
    const r = find([
      "sid=1; Secure; HttpOnly",
      "theme=dark; Secure",
      "token=2; Secure; HttpOnly; SameSite=Foo",
      "lang=en; Secure; SameSite=Stirct",
      "mode=1; Secure; SameSite",
    ]);
    expect(r.map((f) => [f.id, f.severity])).toEqual([
      ["cookie-samesite-invalid", "low"],
      ["cookie-no-samesite", "info"],
    ]);
    expect(r[0]?.message).toMatch(/^The cookie "token" \(and 2 more\) has a SameSite that is none/);
    expect(r[1]?.message).toMatch(
      /^The cookie "sid" looks like a session cookie but is set without SameSite/,
    );
    // The last SameSite counts (RFC 6265bis §5.7), in any case.
    expect(ids(["lang=en; Secure; SameSite=Foo; samesite=LAX"])).toEqual([]);
    expect(ids(["lang=en; Secure; SameSite=Lax; SameSite=Lux"])).toEqual([
      "cookie-samesite-invalid",
    ]);
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

  it("a cookie being deleted (Max-Age 0 or less, Expires already past) is not judged", () => {
    for (const c of [
      "sessionid=; Max-Age=0; Path=/",
      // undici ignores a negative Max-Age; browsers delete the cookie (RFC 6265bis §5.6.2).
      "sid=; Max-Age=-1",
      "auth_token=deleted; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/",
      "token=x; expires=Thursday, 01-Jan-70 00:00:01 GMT",
      // Max-Age wins over Expires, whatever their order (§5.7).
      "sid=1; Max-Age=0; Expires=Fri, 01 Jan 2100 00:00:00 GMT",
    ]) {
      expect(ids([c]), c).toEqual([]);
    }
    // A later response deleting a cookie removes the one an earlier response set.
    const loggedOut = chainOf(
      ["https://site.test/", ["session=abc"]],
      ["https://site.test/logout", ["session=; Max-Age=0"]],
    );
    expect(idsOf(judgeCookies(loggedOut))).toEqual([]);
  });

  it("a live cookie is judged: a future Expires, one that is no cookie-date, a later Max-Age", () => {
    for (const c of [
      "sid=1; Expires=Fri, 01 Jan 2100 00:00:00 GMT",
      "sid=1; Max-Age=3600; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
      "sid=1; Max-Age=0; Max-Age=60",
      // Not cookie-dates (§5.1.1), so ignored: a session cookie, not a deletion.
      "sid=1; Expires=0",
      "sid=1; Expires=Thu, 31 Feb 1999 00:00:00 GMT",
      "sid=1; Max-Age=-1x",
    ]) {
      expect(ids([c]), c).toEqual(["cookie-no-secure", "cookie-no-httponly", "cookie-no-samesite"]);
    }
  });

  it("Expires is compared with when the response that sets it was read", () => {
    const at = (readAt: string): Evidence => {
      const e = evidenceOf({}, { url: "https://site.test/" });
      const hop = {
        url: "https://site.test/",
        status: 200,
        headers: { "set-cookie": ["theme=dark; Expires=Mon, 01 Jan 2035 00:00:00 GMT"] },
        readAt,
      };
      return { ...e, chain: { ...e.chain, hops: [hop], final: hop } };
    };
    expect(idsOf(judgeCookies(at("2034-12-31T23:59:59.000Z")))).toEqual(["cookie-no-secure"]);
    expect(idsOf(judgeCookies(at("2035-01-01T00:00:00.000Z")))).toEqual([]);
  });

  it("session-likeness: HttpOnly says a credential, an affinity cookie is none whatever its name", () => {
    // A load balancer's affinity cookie picks a backend and lets nobody in.
    for (const affinity of [
      "heroku-session-affinity=ACyD; Secure; Path=/",
      "ARRAffinity=abc; Secure; Path=/",
      "AWSALB=xyz; Secure; Path=/",
    ]) {
      expect(ids([affinity]), affinity).toEqual([]);
    }
    // A cookie the site keeps from scripts is one to guard from cross-site requests too.
    expect(ids(["pref=1; Secure; HttpOnly"])).toEqual(["cookie-no-samesite"]);
    expect(ids(["sessionid=1; Secure; SameSite=Lax"])).toEqual(["cookie-no-httponly"]);
  });

  it("a cookie whose Domain is not the host's is rejected: said (low), not judged as stored", () => {
    const r = find(["sessionid=1; Domain=other.test; Path=/"], "https://www.site.test/");
    expect(r.map((f) => [f.id, f.severity])).toEqual([["cookie-domain-rejected", "low"]]);
    expect(r[0]?.message).toMatch(/^The cookie "sessionid" is set with a Domain that is not/);
    for (const rejected of [
      "a=1; Secure; Domain=evil-site.test",
      "a=1; Secure; Domain=sub.www.site.test",
      // A public suffix (a private one too) is no domain of the host's own.
      "a=1; Secure; Domain=github.io",
    ]) {
      expect(ids([rejected], "https://www.site.test/"), rejected).toEqual([
        "cookie-domain-rejected",
      ]);
    }
    expect(ids(["a=1; Secure; Domain=github.io"], "https://me.github.io/")).toEqual([
      "cookie-domain-rejected",
    ]);
    // Odd Domains are another site's too, and make no judge throw.
    for (const odd of ["..", "-", "%", "\u00e9.test", "[::1]", "1.2.3.4"]) {
      expect(ids([`a=1; Secure; Domain=${odd}`], "https://www.site.test/"), odd).toEqual([
        "cookie-domain-rejected",
      ]);
    }
    expect(ids(["a=1; Secure; Domain=127.0.0.1"], "https://127.0.0.1/")).toEqual([]);
    for (const kept of ["a=1; Secure; Domain=site.test", "a=1; Secure; Domain=.WWW.site.test"]) {
      expect(ids([kept], "https://www.site.test/"), kept).toEqual([]);
    }
    // A rejected cookie replaces nothing: the stored one is still judged.
    const e = chainOf(
      ["https://www.site.test/a", ["theme=dark; Path=/"]],
      ["https://www.site.test/b", ["theme=light; Secure; Path=/; Domain=other.test"]],
    );
    expect(idsOf(judgeCookies(e))).toEqual(["cookie-no-secure", "cookie-domain-rejected"]);
  });
});
