import { describe, expect, it } from "vitest";
import { judgeCookies } from "../../../src/snapshot/rules/cookies.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const find = (cookies: string[], url?: string) =>
  judgeCookies(evidenceOf({ "set-cookie": cookies }, { url }));
const ids = (cookies: string[], url?: string) => idsOf(find(cookies, url));

describe("cookies of the final response", () => {
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
    expect(ids(["PHPSESSID=1; Secure"])).toEqual(["cookie-no-httponly"]);
    expect(ids(["auth_token=1; Secure; httponly"])).toEqual([]);
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
});
