/** COOP, COEP and CORP as browsers read them, and cross-origin isolation. */
import { describe, expect, it } from "vitest";
import { crossOriginSection, judgeCrossOrigin } from "../../../src/snapshot/rules/cross-origin.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const COOP = "cross-origin-opener-policy";
const COEP = "cross-origin-embedder-policy";
const CORP = "cross-origin-resource-policy";

describe("cross_origin section", () => {
  it.each([
    ["same-origin", "require-corp", true],
    ["same-origin", 'credentialless; report-to="e"', true],
    ['same-origin; report-to="coop"', "require-corp", true],
    ["same-origin-allow-popups", "require-corp", false],
    ["same-origin", "unsafe-none", false],
    ["same-origin", undefined, false],
  ])("COOP %s, COEP %s: isolated %s", (coop, coep, isolated) => {
    const s = crossOriginSection(evidenceOf({ [COOP]: coop, ...(coep ? { [COEP]: coep } : {}) }));
    expect(s?.cross_origin_isolated).toBe(isolated);
  });

  it("values browsers do not understand fall back to unsafe-none", () => {
    for (const bad of ["Same-Origin", '"same-origin"', "same-origin, same-origin", "nope", "a b"]) {
      expect(crossOriginSection(evidenceOf({ [COOP]: bad, [COEP]: bad }))).toEqual({
        coop: "unsafe-none",
        coep: "unsafe-none",
        corp: null,
        cross_origin_isolated: false,
      });
    }
    // Two instances join with a comma: no longer one token.
    const twice = crossOriginSection(evidenceOf({ [COOP]: ["same-origin", "same-origin"] }));
    expect(twice?.coop).toBe("unsafe-none");
  });

  it("a page that is no secure context (http:) gets neither COOP nor COEP: never isolated", () => {
    const headers = { [COOP]: "same-origin", [COEP]: "require-corp", [CORP]: "same-site" };
    expect(crossOriginSection(evidenceOf(headers, { url: "http://site.test/" }))).toEqual({
      coop: "unsafe-none",
      coep: "unsafe-none",
      corp: "same-site",
      cross_origin_isolated: false,
    });
    // A loopback host is potentially trustworthy, so a secure context over http too.
    const local = crossOriginSection(evidenceOf(headers, { url: "http://localhost:8080/" }));
    expect(local?.cross_origin_isolated).toBe(true);
  });

  it("CORP is one exact value, else ignored", () => {
    const corp = (v: string | string[]) => crossOriginSection(evidenceOf({ [CORP]: v }))?.corp;
    expect(corp("same-site")).toBe("same-site");
    expect(corp(" cross-origin ")).toBe("cross-origin");
    expect(corp("Same-Origin")).toBeNull();
    expect(corp(["same-origin", "same-site"])).toBeNull();
  });

  it("every value of each header, and none without a response", () => {
    for (const coop of [
      "same-origin",
      "same-origin-allow-popups",
      "noopener-allow-popups",
      "unsafe-none",
    ]) {
      expect(crossOriginSection(evidenceOf({ [COOP]: coop }))?.coop).toBe(coop);
    }
    expect(crossOriginSection(evidenceOf({}))).toEqual({
      coop: "unsafe-none",
      coep: "unsafe-none",
      corp: null,
      cross_origin_isolated: false,
    });
    expect(crossOriginSection(evidenceOf({}, { unreachable: true }))).toBeNull();
  });
});

describe("cross_origin findings: a value browsers ignore is a mistake (low), none is not", () => {
  const ids = (headers: Record<string, string | string[]>, url?: string) =>
    idsOf(judgeCrossOrigin(evidenceOf(headers, { url })));

  it("a valid value, parameters too, or no header at all: no finding", () => {
    expect(ids({})).toEqual([]);
    expect(
      ids({ [COOP]: 'same-origin; report-to="r"', [COEP]: "credentialless", [CORP]: "same-site" }),
    ).toEqual([]);
    expect(ids({ [COOP]: "unsafe-none", [COEP]: "unsafe-none", [CORP]: "cross-origin" })).toEqual(
      [],
    );
  });

  it("an unknown value, another case, quotes, or the header twice: one finding each", () => {
    for (const bad of ["Same-Origin", '"same-origin"', "same-orign", "same-origin same-origin"]) {
      expect(ids({ [COOP]: bad, [COEP]: bad, [CORP]: bad }), bad).toEqual([
        "coop-invalid",
        "coep-invalid",
        "corp-invalid",
      ]);
    }
    expect(ids({ [COOP]: ["same-origin", "same-origin"] })).toEqual(["coop-invalid"]);
    expect(ids({ [CORP]: ["same-origin", "same-site"] })).toEqual(["corp-invalid"]);
    expect(judgeCrossOrigin(evidenceOf({ [COEP]: "require_corp" }))[0]).toMatchObject({
      id: "coep-invalid",
      check: "cross_origin",
      severity: "low",
    });
    // Judged on a plain-HTTP page too: the value is wrong wherever it is sent.
    expect(ids({ [COOP]: "nope" }, "http://site.test/")).toEqual(["coop-invalid"]);
    expect(judgeCrossOrigin(evidenceOf({ [COOP]: "nope" }, { unreachable: true }))).toEqual([]);
  });
});
