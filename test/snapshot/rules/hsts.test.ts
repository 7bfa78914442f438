import { describe, expect, it } from "vitest";
import { judgeHsts, parseHsts } from "../../../src/snapshot/rules/hsts.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const ids = (value: string | string[], url?: string) =>
  idsOf(judgeHsts(evidenceOf({ "strict-transport-security": value }, { url })));

describe("HSTS (RFC 6797 §6.1)", () => {
  it("good: a year with includeSubDomains, or a preload-ready policy, finds nothing", () => {
    expect(ids("max-age=31536000; includeSubDomains")).toEqual([]);
    expect(ids('MAX-AGE="63072000" ; includesubdomains; preload')).toEqual([]);
    expect(ids("max-age=31536000; includeSubDomains; unknown=x")).toEqual([]);
  });

  it("weak: a short max-age, max-age=0, no includeSubDomains, preload not ready", () => {
    expect(ids("max-age=60; includeSubDomains")).toEqual(["hsts-max-age-short"]);
    expect(ids("max-age=15551999; includeSubDomains")).toEqual(["hsts-max-age-short"]);
    expect(ids("max-age=15552000; includeSubDomains")).toEqual([]);
    expect(ids("max-age=0; includeSubDomains")).toEqual(["hsts-max-age-zero"]);
    expect(ids("max-age=31536000")).toEqual(["hsts-no-include-subdomains"]);
    expect(ids("max-age=20000000; includeSubDomains; preload")).toEqual(["hsts-not-preload-ready"]);
    expect(ids("max-age=31536000; preload")).toEqual([
      "hsts-no-include-subdomains",
      "hsts-not-preload-ready",
    ]);
  });

  it("invalid: no max-age, non-digits, duplicates, bad quoting, a comma-joined pair", () => {
    for (const bad of [
      "includeSubDomains",
      "max-age=",
      "max-age=1e9",
      "max-age=-5",
      "max-age=31536000; max-age=31536000",
      'max-age="31536000',
      "max-age=31536000, max-age=60",
      "max age=31536000",
    ]) {
      expect(parseHsts(bad), bad).toBeNull();
      expect(ids(bad), bad).toEqual(["hsts-invalid"]);
    }
  });

  it("only the first header field counts (§8.1)", () => {
    expect(ids(["max-age=31536000; includeSubDomains", "nonsense"])).toEqual([]);
    expect(ids(["max-age=60; includeSubDomains", "max-age=31536000; includeSubDomains"])).toEqual([
      "hsts-max-age-short",
    ]);
  });

  it("over plain HTTP it is no HSTS: hsts-missing, whatever its value (browsers ignore it)", () => {
    expect(ids("max-age=0", "http://site.test/")).toEqual(["hsts-missing"]);
    expect(ids("max-age=63072000; includeSubDomains", "http://site.test/")).toEqual([
      "hsts-missing",
    ]);
  });
});
