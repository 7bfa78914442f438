/** The judges together: order, missing headers, HTTPS, score and grade, ids and their doc. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SEVERITIES } from "../../../src/snapshot/rules/finding.js";
import { judge } from "../../../src/snapshot/rules/index.js";
import { ALL_FINDINGS } from "../../../src/snapshot/rules/registry.js";
import { scoreOf, gradeOf } from "../../../src/snapshot/rules/score.js";
import { demoSnapshot } from "../../../src/snapshot/index.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const GOOD = {
  "strict-transport-security": "max-age=31536000; includeSubDomains",
  "content-security-policy":
    "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "permissions-policy": "camera=()",
};

describe("judge", () => {
  it("a well-kept site has no finding and scores 100 (A+)", () => {
    const f = judge(evidenceOf(GOOD));
    expect(f).toEqual([]);
    expect(gradeOf(scoreOf(f))).toBe("A+");
  });

  it("most severe first, stable within a severity", () => {
    const f = judge(
      evidenceOf({
        ...GOOD,
        "strict-transport-security": "max-age=60",
        "x-frame-options": "garbage",
        "x-content-type-options": "nosnif",
        "referrer-policy": "unsafe-url",
        "content-security-policy":
          "default-src 'self' 'unsafe-inline' 'unsafe-eval'; object-src 'none'; base-uri 'none'",
      }),
    );
    expect(idsOf(f)).toEqual([
      "csp-unsafe-inline",
      "csp-unsafe-eval",
      "x-frame-options-invalid",
      "hsts-max-age-short",
      "x-content-type-options-invalid",
      "referrer-policy-unsafe",
      "hsts-no-include-subdomains",
      "csp-no-form-action",
    ]);
    const order = f.map((x) => SEVERITIES.indexOf(x.severity));
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it("every missing header is a finding with its note's words; https-failed is high", () => {
    const e = evidenceOf({});
    const f = judge({
      ...e,
      https: { ok: false, url: "https://site.test/", failure: { kind: "refused" } },
    });
    expect(idsOf(f)).toEqual([
      "https-failed",
      "hsts-missing",
      "csp-missing",
      "x-frame-options-missing",
      "x-content-type-options-missing",
      "referrer-policy-missing",
      "permissions-policy-missing",
    ]);
    expect(f[0]?.message).toBe(
      "HTTPS does not work (https://site.test/): the connection was refused.",
    );
    expect(f[1]?.message).toBe("Strict-Transport-Security (HSTS) header is missing.");
  });

  it("every finding has a recommendation and a known severity; ids are unique kebab-case", () => {
    const ids = ALL_FINDINGS.map((d) => d.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const d of ALL_FINDINGS) {
      expect(d.id).toMatch(/^[a-z0-9]+(-[a-z0-9]+)+$/);
      expect(SEVERITIES).toContain(d.severity);
      expect(d.recommendation.length).toBeGreaterThan(10);
      expect(d.message).toMatch(/\.$/);
    }
  });
});

describe("the demo", () => {
  it("its four missing headers are its four findings, notes unchanged, score and grade follow", () => {
    const demo = demoSnapshot();
    expect(idsOf(demo.findings)).toEqual([
      "hsts-missing",
      "csp-missing",
      "x-frame-options-missing",
      "x-content-type-options-missing",
    ]);
    expect(demo.findings.map((f) => f.message)).toEqual(demo.notes);
    expect(demo.score).toBe(scoreOf(demo.findings));
    // 100 − (20 + 25 + 20 + 5), as Observatory would grade it (docs/findings.md "Score and grade").
    expect(demo.score).toBe(30);
    expect(demo.grade).toBe("D");
  });
});

describe("docs/findings.md", () => {
  const doc = readFileSync(new URL("../../../docs/findings.md", import.meta.url), "utf8");
  const rows = [
    ...doc.matchAll(
      /^\|\s*`([a-z0-9-]+)`\s*\|\s*`([a-z0-9_]+)`\s*\|\s*(high|medium|low|info)\s*\|.*\|\s*`(test\/[^`]+)`\s*\|$/gm,
    ),
  ];

  it("gives each finding the message and recommendation its rule module defines", () => {
    const cells = (id: string) =>
      rows
        .find((r) => r[1] === id)?.[0]
        .split(/(?<!\\)\|/)
        .map((c) => c.trim());
    for (const d of ALL_FINDINGS) {
      const [, , , , message, recommendation] = cells(d.id) ?? [];
      expect(message, d.id).toBe(d.message);
      expect(recommendation, d.id).toBe(d.recommendation);
    }
  });

  it("lists exactly every finding id of the registry, in its order, with its check and severity", () => {
    expect(rows.map((r) => r[1])).toEqual(ALL_FINDINGS.map((d) => d.id));
    for (const d of ALL_FINDINGS) {
      const row = rows.find((r) => r[1] === d.id);
      expect(row?.[2], d.id).toBe(d.check);
      expect(row?.[3], d.id).toBe(d.severity);
    }
  });

  it("names a test file that exists and mentions the id, or serves it from the shared cases", () => {
    const read = (path: string) =>
      readFileSync(new URL(`../../../${path}`, import.meta.url), "utf8");
    const cases = read("test/fixtures/finding-cases.ts");
    for (const r of rows) {
      const file = read(r[4] as string);
      const viaCases = file.includes("fixtures/finding-cases.js") && cases.includes(`"${r[1]}"`);
      expect(file.includes(r[1] as string) || viaCases, `${r[1]} in ${r[4]}`).toBe(true);
    }
  });
});

describe("hostile values", () => {
  it("no header value makes a judge throw, and every finding stays a known id", () => {
    // A fixed-seed generator, so a failure can be replayed.
    let seed = 13;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const alphabet = ` ;,="'\\\t()*<>:/-_.aZ09=\u00e9\u0000\uffff`;
    const word = (n: number) =>
      Array.from({ length: n }, () => alphabet[next() % alphabet.length]).join("");
    const known = new Set(ALL_FINDINGS.map((d) => d.id));
    const names = [
      "strict-transport-security",
      "content-security-policy",
      "content-security-policy-report-only",
      "x-frame-options",
      "x-content-type-options",
      "referrer-policy",
      "permissions-policy",
      "feature-policy",
      "set-cookie",
      "cross-origin-opener-policy",
      "cross-origin-embedder-policy",
      "cross-origin-resource-policy",
    ];
    for (let i = 0; i < 1000; i++) {
      const headers: Record<string, string[]> = {};
      for (const name of names) headers[name] = [word(next() % 40), word(next() % 8)];
      const metaCsp = [word(next() % 40)];
      for (const f of judge(
        evidenceOf(headers, { page: { metaCsp, scripts: [], insecure: [], metaReferrer: [] } }),
      )) {
        expect(known).toContain(f.id);
      }
    }
    const long = "a".repeat(64 * 1024);
    expect(() => judge(evidenceOf(Object.fromEntries(names.map((n) => [n, long]))))).not.toThrow();
  });
});
