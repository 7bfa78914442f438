/** security.txt per RFC 9116: the fields read from the file, then Contact and Expires judged. */
import { describe, expect, it } from "vitest";
import type { Evidence, FileVerdict } from "../../../src/snapshot/rules/evidence.js";
import { checkSecurityTxt, judgeSecurityTxt } from "../../../src/snapshot/rules/security-txt.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const READ_AT = new Date("2026-11-26T12:00:00.000Z");
const ABSENT: FileVerdict = { value: false, why: "missing", status: 404 };

/** The verdict of a security.txt served as `text` at the first location. */
function verdictOf(text: string): FileVerdict {
  const probe = {
    kind: "response" as const,
    url: "https://site.test/.well-known/security.txt",
    status: 200,
    contentType: "text/plain",
    body: Buffer.from(text),
  };
  return checkSecurityTxt(probe, null, READ_AT);
}

function withSecurityTxt(v: FileVerdict): Evidence {
  return { ...evidenceOf(), files: { security_txt: v, robots_txt: ABSENT, sitemap_xml: ABSENT } };
}

function judged(text: string) {
  return judgeSecurityTxt(withSecurityTxt(verdictOf(text)));
}

describe("security.txt fields", () => {
  it("a file with Contact and a future Expires has no finding", () => {
    expect(judged("Contact: mailto:s@site.test\nExpires: 2027-06-01T00:00:00.000Z\n")).toEqual([]);
    // Field names in any case, an offset, a PGP-signed file, comments.
    const signed = [
      "-----BEGIN PGP SIGNED MESSAGE-----",
      "Hash: SHA256",
      "",
      "# Our policy",
      "CONTACT: https://site.test/report",
      "expires: 2027-01-01T00:00:00+02:00",
      "-----BEGIN PGP SIGNATURE-----",
      "abc",
      "-----END PGP SIGNATURE-----",
    ].join("\r\n");
    expect(judged(signed)).toEqual([]);
  });

  it("a leap second is a date (RFC 3339 §5.7): judged like any other", () => {
    expect(judged("Contact: x\nExpires: 2027-06-30T23:59:60Z\n")).toEqual([]);
    expect(judged("Contact: x\nexpires: 2028-02-29t12:00:00z\n")).toEqual([]);
    const f = judged("Contact: x\nExpires: 2016-12-31T23:59:60Z\n");
    expect(f.map((x) => x.message)).toEqual(["security.txt expired on 2016-12-31."]);
  });

  it("an Expires before the file was read is expired, with its date", () => {
    const f = judged("Contact: mailto:s@site.test\nExpires: 2025-01-31T23:59:59Z\n");
    expect(idsOf(f)).toEqual(["security-txt-expired"]);
    expect(f[0]?.message).toBe("security.txt expired on 2025-01-31.");
    expect(f[0]?.severity).toBe("low");
  });

  it.each([
    ["no Expires", "Contact: mailto:s@site.test\n", /no Expires field/],
    [
      "two Expires",
      "Contact: x\nExpires: 2027-01-01T00:00:00Z\nExpires: 2028-01-01T00:00:00Z\n",
      /more than one Expires/,
    ],
    [
      "a date that is not RFC 3339",
      "Contact: x\nExpires: Fri, 1 Jan 2027 00:00:00 GMT\n",
      /not an RFC 3339 date/,
    ],
    [
      "a date that does not exist",
      "Contact: x\nExpires: 2027-13-45T00:00:00Z\n",
      /not an RFC 3339 date/,
    ],
    [
      "the 30th of February (which Date.parse takes for March 2nd)",
      "Contact: x\nExpires: 2027-02-30T00:00:00Z\n",
      /not an RFC 3339 date/,
    ],
    ["hour 24", "Contact: x\nExpires: 2027-01-01T24:00:00Z\n", /not an RFC 3339 date/],
    [
      "an offset of 24 hours",
      "Contact: x\nExpires: 2027-01-01T00:00:00+24:00\n",
      /not an RFC 3339 date/,
    ],
    [
      "# Expires commented out",
      "Contact: x\n# Expires: 2027-01-01T00:00:00Z\n",
      /no Expires field/,
    ],
  ])("%s is incomplete", (_what, text, message) => {
    const f = judged(text);
    expect(idsOf(f)).toEqual(["security-txt-incomplete"]);
    expect(f[0]?.message).toMatch(message);
  });

  it("no Contact is incomplete (the engine's file check already refuses such a file)", () => {
    const v: FileVerdict = {
      value: true,
      why: "ok",
      status: 200,
      securityTxt: {
        contacts: 0,
        expires: ["2027-01-01T00:00:00Z"],
        readAt: READ_AT.toISOString(),
      },
    };
    expect(judgeSecurityTxt(withSecurityTxt(v))[0]?.message).toMatch(/no Contact field/);
    expect(verdictOf("Expires: 2027-01-01T00:00:00Z\n").value).toBe(false);
  });

  it("keeps three Expires values at most, whatever the file's size", () => {
    const v = verdictOf(`Contact: x\n${"Expires: 2027-01-01T00:00:00Z\n".repeat(1000)}`);
    expect(v.securityTxt?.expires).toHaveLength(3);
  });

  it("only a file that is there is judged on its fields; a missing one is security-txt-missing", () => {
    expect(idsOf(judgeSecurityTxt(withSecurityTxt(ABSENT)))).toEqual(["security-txt-missing"]);
    expect(judgeSecurityTxt(withSecurityTxt({ value: null, why: "timeout" }))).toEqual([]);
  });
});
