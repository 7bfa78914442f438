import { describe, expect, it } from "vitest";
import { formatReport, formatSnapshotError, useColor } from "../../src/cli/format.js";
import { sampleResult } from "../http/helpers.js";

const tty = { isTTY: true } as NodeJS.WriteStream;
const pipe = { isTTY: false } as NodeJS.WriteStream;
const ESC = "\u001b[";

describe("terminal output", () => {
  it("colours only a terminal, and not when NO_COLOR is set", () => {
    expect(useColor(tty, {})).toBe(true);
    expect(useColor(tty, { NO_COLOR: "1" })).toBe(false);
    expect(useColor(tty, { NO_COLOR: "" })).toBe(true); // no-color.org: empty means unset
    expect(useColor(pipe, {})).toBe(false);
  });

  it("summarises every check with yes/no/unknown and lists the notes", () => {
    const base = sampleResult("example.com");
    const result = {
      ...base,
      csp_present: false,
      checks: { ...base.checks, csp: false },
      findings: [
        {
          id: "csp-missing",
          check: "csp",
          severity: "medium" as const,
          message: "Content-Security-Policy (CSP) header is missing.",
          recommendation: "Set a CSP.",
        },
      ],
    };
    const plain = formatReport(result, false);
    expect(plain).not.toContain(ESC);
    expect(plain).toMatch(/✓ yes\s+HTTPS with a valid certificate/);
    expect(plain).toMatch(/✗ no\s+Content-Security-Policy \(CSP\)/);
    expect(plain).toMatch(/\? unknown\s+sitemap\.xml/);
    expect(plain).toContain("HTTP 200, 0 redirects");
    expect(plain).toContain("  - sitemap.xml could not be checked.");
    expect(formatReport(result, true)).toContain(ESC);
  });

  it("shows a SnapshotError with its type and the submitted url", () => {
    const text = formatSnapshotError(
      { requested_url: "ftp://x", error: "Only http and https", error_type: "invalid_url" },
      false,
    );
    expect(text).toBe('error (invalid_url): Only http and https\n  url: "ftp://x"\n');
  });
});

describe("terminal summary of findings", () => {
  const report = {
    ...sampleResult("example.com"),
    hsts_present: false,
    checks: { ...sampleResult("example.com").checks, hsts: false },
    notes: [
      "Strict-Transport-Security (HSTS) header is missing.",
      "Cookie sid is sent without Secure.",
      "sitemap.xml could not be checked.",
    ],
    findings: [
      {
        id: "cookie-no-secure",
        check: "cookies",
        severity: "medium" as const,
        message: "Cookie sid is sent without Secure.",
        recommendation: "Add `Secure` to the cookie.",
      },
      {
        id: "referrer-policy-info",
        check: "referrer_policy",
        severity: "info" as const,
        message: "Something to know.",
        recommendation: "Nothing to do.",
      },
      {
        id: "hsts-missing",
        check: "hsts",
        severity: "high" as const,
        message: "Strict-Transport-Security (HSTS) header is missing.",
        recommendation: "Set `Strict-Transport-Security: max-age=31536000; includeSubDomains`.",
      },
      {
        id: "csp-object-src-missing",
        check: "csp",
        severity: "low" as const,
        message: "The CSP does not restrict plugins.",
        recommendation: "Add `object-src 'none'`.",
      },
    ],
    score: 60,
    grade: "C+" as const,
  };

  it("shows the grade and score after the checks, then the findings most severe first", () => {
    const plain = formatReport(report, false);
    const lines = plain.split("\n");
    const grade = lines.findIndex((l) => l.includes("Grade C+ (score 60/100)"));
    const lastCheck = lines.findIndex((l) => /sitemap\.xml$/.test(l));
    expect(grade).toBeGreaterThan(lastCheck);
    const order = [
      "hsts-missing",
      "cookie-no-secure",
      "csp-object-src-missing",
      "referrer-policy-info",
    ];
    const at = order.map((id) => lines.findIndex((l) => l.includes(`(${id})`)));
    expect(at.every((i) => i > grade)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(lines[at[0]!]).toMatch(
      /^ {2}HIGH\s+Strict-Transport-Security \(HSTS\) header is missing\./,
    );
    expect(lines[at[0]! + 1]).toBe(
      "          fix: Set `Strict-Transport-Security: max-age=31536000; includeSubDomains`.",
    );
    expect(lines[at[1]!]).toMatch(/^ {2}MEDIUM\s+Cookie sid is sent without Secure\./);
    expect(lines[at[2]!]).toMatch(/^ {2}LOW\s+/);
    expect(lines[at[3]!]).toMatch(/^ {2}INFO\s+/);
  });

  it("lists under Notes only what no finding already says", () => {
    const plain = formatReport(report, false);
    const notes = plain.slice(plain.indexOf("Notes:"));
    expect(notes).toContain("  - sitemap.xml could not be checked.");
    expect(notes).not.toContain("HSTS");
    expect(notes).not.toContain("Cookie sid");
  });

  it("colours high findings red on a terminal", () => {
    expect(formatReport(report, true)).toContain(`${ESC}31mHIGH  ${ESC}39m`);
  });

  it("shows the grade of a report without findings, and no Findings heading", () => {
    const plain = formatReport(sampleResult("example.com"), false);
    expect(plain).toContain("Grade A+ (score 100/100)");
    expect(plain).not.toContain("Findings:");
  });
});
