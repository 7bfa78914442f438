/** Server and X-Powered-By naming software versions. */
import { describe, expect, it } from "vitest";
import { judgeDisclosure } from "../../../src/snapshot/rules/disclosure.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const messageOf = (headers: Record<string, string | string[]>) =>
  judgeDisclosure(evidenceOf(headers))[0]?.message;

describe("server-version-disclosed", () => {
  it.each([
    ["nginx/1.18.0 (Ubuntu)", "nginx/1.18.0"],
    ["Apache/2.4.41 (Ubuntu) OpenSSL/1.1.1f", "Apache/2.4.41, OpenSSL/1.1.1f"],
    ["Microsoft-IIS/10.0", "Microsoft-IIS/10.0"],
    ["Jetty(9.4.51.v20230217)", "9.4.51"],
    ["gunicorn/20", "gunicorn/20"],
    ["ECS (dcb/7F84) nginx/1.25.3", "nginx/1.25.3"],
  ])("Server: %s names %s", (server, tokens) => {
    expect(messageOf({ server })).toBe(`The header Server (${tokens}) names a software version.`);
  });

  it("names both headers when both disclose", () => {
    expect(messageOf({ server: "nginx/1.25.3", "x-powered-by": "PHP/8.1.2" })).toBe(
      "The headers Server (nginx/1.25.3) and X-Powered-By (PHP/8.1.2) name a software version.",
    );
    expect(messageOf({ "x-powered-by": ["Express", "Next.js 14.1.0"] })).toBe(
      "The header X-Powered-By (14.1.0) names a software version.",
    );
  });

  it.each([
    "nginx",
    "Express",
    "cloudflare",
    "Apache (Debian)",
    "gws",
    "AmazonS3",
    "h2o/",
    "ASP.NET",
    // A cache node's name: a version starts with a digit and has a dot, or is all digits.
    "ECS (dcb/7F84)",
    "ECAcc (nyd/D13E)",
    "edge/7F84",
  ])("%s alone is no version", (value) => {
    expect(idsOf(judgeDisclosure(evidenceOf({ server: value, "x-powered-by": value })))).toEqual(
      [],
    );
  });

  it("no header, no response: nothing", () => {
    expect(judgeDisclosure(evidenceOf({}))).toEqual([]);
    expect(judgeDisclosure(evidenceOf({}, { unreachable: true }))).toEqual([]);
  });
});
