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
    const result = { ...sampleResult("example.com"), csp_present: false };
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
