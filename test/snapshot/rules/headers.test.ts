/** X-Frame-Options, X-Content-Type-Options, Referrer-Policy and Permissions-Policy values. */
import { describe, expect, it } from "vitest";
import { judgePermissionsPolicy } from "../../../src/snapshot/rules/permissions-policy.js";
import { judgeReferrerPolicy } from "../../../src/snapshot/rules/referrer-policy.js";
import { judgeXContentTypeOptions } from "../../../src/snapshot/rules/x-content-type-options.js";
import { judgeXFrameOptions } from "../../../src/snapshot/rules/x-frame-options.js";
import type { Judge } from "../../../src/snapshot/rules/rule.js";
import { judge, snapshotNotes } from "../../../src/snapshot/rules/index.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const run = (j: Judge, headers: Record<string, string | string[]>) => idsOf(j(evidenceOf(headers)));

describe("X-Frame-Options", () => {
  const ids = (v: string | string[]) => run(judgeXFrameOptions, { "x-frame-options": v });
  it("good: DENY or SAMEORIGIN, any case, the same value repeated", () => {
    for (const v of ["DENY", "sameorigin", " SameOrigin ", ["DENY", "deny"]])
      expect(ids(v)).toEqual([]);
  });
  it("weak: ALLOW-FROM is obsolete", () => {
    expect(ids("ALLOW-FROM https://a.example")).toEqual(["x-frame-options-invalid"]);
  });
  it("not judged when the CSP's frame-ancestors takes its place", () => {
    expect(
      run(judgeXFrameOptions, {
        "x-frame-options": "garbage",
        "content-security-policy": "frame-ancestors 'self'",
      }),
    ).toEqual([]);
  });
  it("good: several values with DENY, SAMEORIGIN or ALLOWALL among them refuse framing (HTML)", () => {
    for (const v of [
      "DENY, SAMEORIGIN",
      ["SAMEORIGIN", "DENY"],
      "SAMEORIGIN, garbage",
      "ALLOWALL, ALLOW-FROM https://a.example",
      "DENY,",
    ]) {
      expect(ids(v), String(v)).toEqual([]);
    }
  });
  it("invalid: garbage, ALLOWALL alone, or several values none of which refuses", () => {
    expect(ids("garbage")).toEqual(["x-frame-options-invalid"]);
    expect(ids("ALLOWALL")).toEqual(["x-frame-options-invalid"]);
    expect(ids("garbage, ALLOW-FROM https://a.example")).toEqual(["x-frame-options-invalid"]);
    expect(ids(["nope", "never"])).toEqual(["x-frame-options-invalid"]);
  });
});

describe("X-Content-Type-Options", () => {
  const ids = (v: string | string[]) =>
    run(judgeXContentTypeOptions, { "x-content-type-options": v });
  it("good: nosniff", () => {
    expect(ids("nosniff")).toEqual([]);
    expect(ids("NoSniff")).toEqual([]);
  });
  it("weak: a typo is no protection", () => {
    expect(ids("nosnif")).toEqual(["x-content-type-options-invalid"]);
  });
  it("invalid: anything else beside nosniff", () => {
    expect(ids("nosniff, sniff")).toEqual(["x-content-type-options-invalid"]);
    expect(ids("yes")).toEqual(["x-content-type-options-invalid"]);
  });
});

describe("Referrer-Policy", () => {
  const find = (v: string | string[]) => judgeReferrerPolicy(evidenceOf({ "referrer-policy": v }));
  const ids = (v: string | string[]) => idsOf(find(v));
  it("good: a safe policy; the last valid token wins", () => {
    expect(ids("strict-origin-when-cross-origin")).toEqual([]);
    expect(ids("unsafe-url, no-referrer")).toEqual([]);
    expect(ids("no-referrer, made-up-policy")).toEqual([]);
  });
  it("weak: unsafe-url and no-referrer-when-downgrade, named in the message", () => {
    expect(ids("unsafe-url")).toEqual(["referrer-policy-unsafe"]);
    expect(ids(["no-referrer", "no-referrer-when-downgrade"])).toEqual(["referrer-policy-unsafe"]);
    expect(find("UNSAFE-URL")[0]?.message).toMatch(/unsafe-url/);
  });
  it("weak: origin and origin-when-cross-origin send the origin to plain-HTTP sites too (low)", () => {
    for (const policy of ["origin", "Origin-When-Cross-Origin", "no-referrer, origin"]) {
      const [f, ...rest] = find(policy);
      expect(rest, policy).toEqual([]);
      expect(f, policy).toMatchObject({ id: "referrer-policy-origin", severity: "low" });
      expect(f?.message, policy).toMatch(
        /^Referrer-Policy is origin(-when-cross-origin)?, which sends/,
      );
    }
    // Their strict- forms send nothing on a downgrade: good.
    expect(ids("strict-origin")).toEqual([]);
    expect(ids("origin, strict-origin-when-cross-origin")).toEqual([]);
  });
  it("invalid: no valid token at all", () => {
    expect(ids("never")).toEqual(["referrer-policy-invalid"]);
    expect(ids("origin-only, strict")).toEqual(["referrer-policy-invalid"]);
  });
});

describe("<meta name=referrer>", () => {
  const withMeta = (metaReferrer: string[], headers: Record<string, string> = {}) =>
    evidenceOf(headers, {
      page: { metaCsp: [], scripts: [], insecure: [], metaReferrer },
    });
  const ids = (e: ReturnType<typeof evidenceOf>) =>
    idsOf(judge(e)).filter((id) => id.startsWith("referrer-policy"));

  it("a valid one counts as a Referrer-Policy: the missing finding is waived, a note says so", () => {
    const e = withMeta(["no-referrer"]);
    expect(ids(e)).toEqual([]);
    expect(snapshotNotes(e)).toEqual(
      expect.arrayContaining([
        "Referrer-Policy header is missing.",
        'The page sets its referrer policy in a <meta name="referrer"> tag (no-referrer).',
      ]),
    );
    // Legacy names (HTML §4.2.5.1) and any case.
    expect(ids(withMeta(["Never"]))).toEqual([]);
    expect(ids(withMeta(["always"]))).toEqual(["referrer-policy-unsafe"]);
  });

  it("it replaces the header's policy; an invalid one is ignored (the last valid wins)", () => {
    expect(ids(withMeta(["strict-origin"], { "referrer-policy": "unsafe-url" }))).toEqual([]);
    expect(ids(withMeta(["unsafe-url"], { "referrer-policy": "no-referrer" }))).toEqual([
      "referrer-policy-unsafe",
    ]);
    expect(ids(withMeta(["no-referrer", "bogus"]))).toEqual([]);
    expect(ids(withMeta(["bogus"]))).toEqual(["referrer-policy-missing"]);
    // One token: a comma list is no policy.
    expect(ids(withMeta(["no-referrer, origin"]))).toEqual(["referrer-policy-missing"]);
  });
});

describe("Permissions-Policy", () => {
  const ids = (h: Record<string, string>) => run(judgePermissionsPolicy, h);
  it("good: a structured-field dictionary of allowlists", () => {
    expect(
      ids({ "permissions-policy": 'camera=(), geolocation=(self "https://a.example")' }),
    ).toEqual([]);
    expect(ids({ "permissions-policy": "fullscreen=*, autoplay=self" })).toEqual([]);
  });
  it("weak: only the legacy Feature-Policy", () => {
    expect(ids({ "feature-policy": "camera 'none'" })).toEqual(["permissions-policy-legacy"]);
    expect(ids({ "feature-policy": "camera 'none'", "permissions-policy": "camera=()" })).toEqual(
      [],
    );
  });
  it("invalid: Feature-Policy syntax, or a value that is not an allowlist", () => {
    expect(ids({ "permissions-policy": "camera 'none'" })).toEqual(["permissions-policy-invalid"]);
    expect(ids({ "permissions-policy": "camera=(self" })).toEqual(["permissions-policy-invalid"]);
    expect(ids({ "permissions-policy": 'camera="self"' })).toEqual(["permissions-policy-invalid"]);
  });
});
