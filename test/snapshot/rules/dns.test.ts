/** The domain judges over hand-made answers: good, weak and invalid records. */
import { describe, expect, it } from "vitest";
import type { DomainEvidence } from "../../../src/snapshot/rules/evidence.js";
import {
  dmarcPercent,
  dmarcPolicy,
  dnsNotes,
  dnsSection,
  judgeDns,
  mxMatches,
  parseMtaStsPolicy,
  registrableDomain,
  spfAll,
} from "../../../src/snapshot/rules/dns.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const txt = (...records: string[]) => ({ kind: "records" as const, records });
const NONE = { kind: "none" as const };

function domain(over: Partial<DomainEvidence> = {}): DomainEvidence {
  return {
    domain: "example.com",
    caa: { kind: "records", records: [{ tag: "issue", value: "letsencrypt.org" }] },
    txt: txt("v=spf1 -all"),
    dmarc: txt("v=DMARC1; p=reject"),
    mtaStsTxt: txt("v=STSv1; id=1"),
    mx: { kind: "records", records: [{ priority: 10, exchange: "mx.example.com" }] },
    mtaStsPolicy: {
      kind: "response",
      url: "https://mta-sts.example.com/.well-known/mta-sts.txt",
      status: 200,
      contentType: "text/plain; charset=utf-8",
      body: Buffer.from(
        "version: STSv1\r\nmode: enforce\r\nmx: *.example.com\r\nmax_age: 86400\r\n",
      ),
    },
    ...over,
  };
}

const judged = (over: Partial<DomainEvidence> = {}) =>
  idsOf(judgeDns({ ...evidenceOf(), dns: domain(over) }));

describe("registrableDomain", () => {
  it("is the ICANN public suffix list's, and null for IPs and unknown suffixes", () => {
    expect(registrableDomain("www.example.com")).toBe("example.com");
    expect(registrableDomain("a.b.example.co.uk")).toBe("example.co.uk");
    expect(registrableDomain("WWW.Example.COM.")).toBe("example.com");
    expect(registrableDomain("user.github.io")).toBe("github.io");
    expect(registrableDomain("co.uk")).toBeNull();
    expect(registrableDomain("127.0.0.2")).toBeNull();
    expect(registrableDomain("[2001:db8::1]")).toBeNull();
    expect(registrableDomain("site.test")).toBeNull();
    expect(registrableDomain("localhost")).toBeNull();
  });
});

describe("parsers", () => {
  it("spfAll: the qualifier of `all`, `+` when none; null without `all`", () => {
    expect(spfAll("v=spf1 -all")).toBe("-all");
    expect(spfAll("v=spf1 mx ~ALL")).toBe("~all");
    expect(spfAll("v=spf1 all")).toBe("+all");
    expect(spfAll("v=spf1 ?all")).toBe("?all");
    expect(spfAll("v=spf1 include:allmail.example")).toBeNull();
    expect(spfAll("v=spf1 redirect=_spf.example.com")).toBeNull();
  });

  it("dmarcPolicy: p= of none, quarantine or reject; none without it but with rua; else null", () => {
    expect(dmarcPolicy("v=DMARC1; p=Reject; rua=mailto:a@b")).toBe("reject");
    expect(dmarcPolicy("v=DMARC1;p=none")).toBe("none");
    expect(dmarcPolicy("v=DMARC1; sp=reject")).toBeNull();
    expect(dmarcPolicy("v=DMARC1; p=block")).toBeNull();
    // RFC 7489 §6.6.3: no valid p= but a report URI: receivers act as if p=none.
    expect(dmarcPolicy("v=DMARC1; rua=mailto:d@example.com")).toBe("none");
    expect(dmarcPolicy("v=DMARC1; p=block; rua=bogus, mailto:d@example.com")).toBe("none");
    expect(dmarcPolicy("v=DMARC1; rua=bogus")).toBeNull();
    // The first instance of a tag counts.
    expect(dmarcPolicy("v=DMARC1; p=reject; p=none")).toBe("reject");
  });

  it("dmarcPercent: pct= from 0 to 100, 100 without a valid one", () => {
    expect(dmarcPercent("v=DMARC1; p=quarantine; pct=0")).toBe(0);
    expect(dmarcPercent("v=DMARC1; p=quarantine; pct=25")).toBe(25);
    expect(dmarcPercent("v=DMARC1; p=quarantine")).toBe(100);
    expect(dmarcPercent("v=DMARC1; p=quarantine; pct=-1")).toBe(100);
  });

  it("parseMtaStsPolicy: RFC 8461 §3.2 fields, or null", () => {
    expect(
      parseMtaStsPolicy("version: STSv1\nmode: testing\nmx: a.example\nmax_age: 600\n"),
    ).toEqual({
      mode: "testing",
      maxAge: 600,
      mx: ["a.example"],
    });
    expect(parseMtaStsPolicy("version: STSv1\nmode: none\nmax_age: 0")).toMatchObject({
      mode: "none",
    });
    expect(parseMtaStsPolicy("version: STSv2\nmode: enforce\nmx: a\nmax_age: 1")).toBeNull();
    expect(parseMtaStsPolicy("version: STSv1\nmode: enforce\nmax_age: 1")).toBeNull();
    expect(
      parseMtaStsPolicy("version: STSv1\nmode: enforce\nmx: a\nmax_age: 99999999999"),
    ).toBeNull();
    expect(parseMtaStsPolicy("<html>not found</html>")).toBeNull();
  });
});

describe("dnsSection", () => {
  it("CAA issuers are domain names: lower-cased, each once", () => {
    const caa = {
      kind: "records" as const,
      records: [
        { tag: "issue", value: "LetsEncrypt.org" },
        { tag: "issuewild", value: "letsencrypt.org; validationmethods=dns-01" },
        { tag: "iodef", value: "mailto:ca@example.com" },
      ],
    };
    expect(dnsSection({ ...evidenceOf(), dns: domain({ caa }) })?.caa).toEqual({
      present: true,
      issuers: ["letsencrypt.org"],
    });
  });
});

describe("judgeDns", () => {
  it("a well-kept domain has no finding; no dns evidence, no finding", () => {
    expect(judged()).toEqual([]);
    expect(judgeDns(evidenceOf())).toEqual([]);
    expect(dnsSection(evidenceOf())).toBeNull();
  });

  it("SPF: missing, +all, ?all, no all, several records; ~all and redirect= are fine", () => {
    expect(judged({ txt: NONE })).toEqual(["dns-spf-missing"]);
    expect(judged({ txt: txt("unrelated") })).toEqual(["dns-spf-missing"]);
    expect(judged({ txt: txt("v=spf1 +all") })).toEqual(["dns-spf-allows-all"]);
    expect(judged({ txt: txt("v=spf1 ?all") })).toEqual(["dns-spf-weak"]);
    expect(judged({ txt: txt("v=spf1 mx") })).toEqual(["dns-spf-weak"]);
    expect(judged({ txt: txt("v=spf1 -all", "v=spf1 ~all") })).toEqual(["dns-spf-invalid"]);
    expect(judged({ txt: txt("v=spf1 mx ~all") })).toEqual([]);
    expect(judged({ txt: txt("v=spf1 redirect=_spf.example.net") })).toEqual([]);
    // RFC 7208 §4.5: exactly `v=spf1`, ended by a space or the end; receivers discard the rest.
    expect(judged({ txt: txt("v=spf1;-all") })).toEqual(["dns-spf-missing"]);
    expect(judged({ txt: txt(" v=spf1 +all") })).toEqual(["dns-spf-missing"]);
    expect(judged({ txt: txt("v=spf10 +all") })).toEqual(["dns-spf-missing"]);
    expect(judged({ txt: txt("V=SPF1 -all") })).toEqual([]);
    expect(judged({ txt: txt("v=spf1") })).toEqual(["dns-spf-weak"]);
  });

  it("DMARC: missing, p=none, no valid p; quarantine is fine", () => {
    expect(judged({ dmarc: NONE })).toEqual(["dns-dmarc-missing"]);
    expect(judged({ dmarc: txt("v=DMARC1; p=none") })).toEqual(["dns-dmarc-none"]);
    expect(judged({ dmarc: txt("v=DMARC1; p=block") })).toEqual(["dns-dmarc-missing"]);
    expect(judged({ dmarc: txt("v=DMARC1; p=quarantine") })).toEqual([]);
    // RFC 7489 §6.4: spaces around `=` in the version are allowed; `DMARC1` is case-sensitive.
    expect(judged({ dmarc: txt("v = DMARC1 ; p=reject") })).toEqual([]);
    expect(judged({ dmarc: txt("v=dmarc1; p=reject") })).toEqual(["dns-dmarc-missing"]);
    expect(judged({ dmarc: txt("v=DMARC1p=reject") })).toEqual(["dns-dmarc-missing"]);
    // No valid p= but a report address: receivers apply p=none (RFC 7489 §6.6.3).
    const [fallback] = judgeDns({
      ...evidenceOf(),
      dns: domain({ dmarc: txt("v=DMARC1; rua=mailto:d@example.com") }),
    });
    expect(fallback).toMatchObject({ id: "dns-dmarc-none", severity: "low" });
    expect(fallback?.message).toBe(
      "The DMARC record of example.com has no valid `p=` but a report address, so receivers apply `p=none`: they report forged mail but still deliver it.",
    );
    // Mail outside pct gets the policy one level down (RFC 7489 §6.6.4): quarantine's rest is
    // delivered (none), reject's is quarantined.
    expect(judged({ dmarc: txt("v=DMARC1; p=quarantine; pct=0") })).toEqual(["dns-dmarc-none"]);
    const [partial] = judgeDns({
      ...evidenceOf(),
      dns: domain({ dmarc: txt("v=DMARC1; p=quarantine; pct=25") }),
    });
    expect(partial?.message).toBe(
      "The DMARC record of example.com sets `p=quarantine` with `pct=25`: receivers quarantine 25 % of the forged mail and deliver the rest (`p=none`).",
    );
    expect(judged({ dmarc: txt("v=DMARC1; p=quarantine; pct=99") })).toEqual(["dns-dmarc-none"]);
    expect(judged({ dmarc: txt("v=DMARC1; p=quarantine; pct=100") })).toEqual([]);
    expect(judged({ dmarc: txt("v=DMARC1; p=reject; pct=0") })).toEqual([]);
    expect(judged({ dmarc: txt("v=DMARC1; p=reject; pct=50") })).toEqual([]);
  });

  it("MTA-STS records: exactly one, `v=STSv1;` (case-sensitive) and an id, or senders ignore it", () => {
    const ignored = (...records: string[]) => {
      const e = { ...evidenceOf(), dns: domain({ mtaStsTxt: txt(...records) }) };
      return { ids: idsOf(judgeDns(e)), message: judgeDns(e)[0]?.message, sts: dnsSection(e) };
    };
    expect(ignored("v=STSv1; id=20261126T1").ids).toEqual([]);
    expect(ignored("v=STSv1 ; id=abc ;").ids).toEqual([]);
    expect(ignored("v=STSv1").message).toBe(
      "The domain example.com announces MTA-STS but senders ignore it: its record has no valid `id` (1 to 32 letters and digits).",
    );
    expect(ignored("v=STSv1; id=").ids).toEqual(["dns-mta-sts-invalid"]);
    expect(ignored("v=STSv1; id=a-b").ids).toEqual(["dns-mta-sts-invalid"]);
    expect(ignored(`v=STSv1; id=${"a".repeat(33)}`).ids).toEqual(["dns-mta-sts-invalid"]);
    expect(ignored("v=STSv1 id=1").message).toBe(
      "The domain example.com announces MTA-STS but senders ignore it: its record is not `v=STSv1; id=…`.",
    );
    expect(ignored("v=STSv1; id=1", "v=STSv1; id=2").message).toBe(
      "The domain example.com announces MTA-STS but senders ignore it: it publishes 2 MTA-STS records, not one.",
    );
    // Not a record at all (the version is case-sensitive): no MTA-STS, and no note about a fetch.
    const lower = ignored("v=stsv1; id=1");
    expect(lower.ids).toEqual(["dns-mta-sts-missing"]);
    expect(lower.sts?.mta_sts).toEqual({ present: false, mode: null, max_age: null });
    const e = {
      ...evidenceOf(),
      dns: domain({ mtaStsTxt: txt("v=stsv1; id=1"), mtaStsPolicy: null }),
    };
    expect(dnsNotes(e)).toEqual([]);
  });

  it("CAA and MTA-STS: missing, testing, mode none, unusable policy files", () => {
    expect(judged({ caa: NONE })).toEqual(["dns-caa-missing"]);
    expect(judged({ mtaStsTxt: NONE, mtaStsPolicy: null })).toEqual(["dns-mta-sts-missing"]);
    const policy = (body: string, status = 200, contentType = "text/plain") => ({
      mtaStsPolicy: {
        kind: "response" as const,
        url: "u",
        status,
        contentType,
        body: Buffer.from(body),
      },
    });
    const testing = "version: STSv1\nmode: testing\nmx: a\nmax_age: 60";
    expect(judged(policy(testing))).toEqual(["dns-mta-sts-testing"]);
    expect(judged(policy("version: STSv1\nmode: none\nmax_age: 60"))).toEqual([
      "dns-mta-sts-missing",
    ]);
    expect(judged(policy(testing, 404))).toEqual(["dns-mta-sts-invalid"]);
    expect(judged(policy(testing, 200, "text/html"))).toEqual(["dns-mta-sts-invalid"]);
    const gzipped = {
      mtaStsPolicy: {
        ...policy(testing).mtaStsPolicy,
        body: null,
        undecodable: { why: "unsupported_coding" as const, coding: "zstd" },
      },
    };
    const [undecodable] = judgeDns({ ...evidenceOf(), dns: domain(gzipped) });
    expect(undecodable?.message).toBe(
      'The domain example.com announces MTA-STS but its policy file cannot be used: its Content-Encoding "zstd" is not supported.',
    );
    const tls = {
      mtaStsPolicy: {
        kind: "failed" as const,
        failure: { kind: "tls" as const, reason: "expired" as const, code: undefined },
      },
    };
    const [finding] = judgeDns({ ...evidenceOf(), dns: domain(tls) });
    expect(finding?.message).toBe(
      "The domain example.com announces MTA-STS but its policy file cannot be used: the TLS certificate has expired.",
    );
  });

  it("an enforced policy must match every MX host (RFC 8461 §4.1 patterns)", () => {
    expect(mxMatches("mx.example.com", "mx.example.com")).toBe(true);
    expect(mxMatches("MX.Example.com.", "mx.example.com")).toBe(true);
    expect(mxMatches("*.example.com", "mx1.example.com")).toBe(true);
    expect(mxMatches("*.example.com", "a.b.example.com")).toBe(false);
    expect(mxMatches("*.example.com", "example.com")).toBe(false);
    expect(mxMatches("*.example.com", "mx.example.com.evil")).toBe(false);
    expect(mxMatches("mx.example.com", "mx2.example.com")).toBe(false);
    const hosts = (...exchange: string[]) => ({
      mx: {
        kind: "records" as const,
        records: exchange.map((e, i) => ({ priority: i, exchange: e })),
      },
    });
    // The default policy has `mx: *.example.com`.
    expect(judged(hosts("mx.example.com", "backup.example.com"))).toEqual([]);
    const e = { ...evidenceOf(), dns: domain(hosts("mx.example.com", "mx.other.net")) };
    expect(idsOf(judgeDns(e))).toEqual(["dns-mta-sts-mx-mismatch"]);
    expect(judgeDns(e)[0]?.message).toBe(
      "The enforced MTA-STS policy of example.com matches none of its MX hosts mx.other.net (its mx lines: *.example.com): senders that apply it refuse to deliver mail there.",
    );
  });

  it("an enforced policy's max_age under one day is short; a day is enough; testing is not judged for it", () => {
    const policy = (mode: string, maxAge: number) => ({
      mtaStsPolicy: {
        kind: "response" as const,
        url: "https://mta-sts.example.com/.well-known/mta-sts.txt",
        status: 200,
        contentType: "text/plain",
        body: Buffer.from(`version: STSv1\nmode: ${mode}\nmx: *.example.com\nmax_age: ${maxAge}\n`),
      },
    });
    expect(judged(policy("enforce", 86_400))).toEqual([]);
    expect(judged(policy("enforce", 31_557_600))).toEqual([]);
    expect(judged(policy("enforce", 86_399))).toEqual(["dns-mta-sts-max-age-short"]);
    expect(judged(policy("testing", 300))).toEqual(["dns-mta-sts-testing"]);
    const [finding] = judgeDns({ ...evidenceOf(), dns: domain(policy("enforce", 300)) });
    expect(finding?.message).toBe(
      "The enforced MTA-STS policy of example.com has `max_age: 300` (under one day, 86400 s): senders forget it quickly, and an attacker who blocks the policy fetch after that gets mail delivered without TLS.",
    );
    expect(finding?.severity).toBe("low");
  });

  it("MX: MTA-STS is asked for only of a domain that receives mail", () => {
    const noSts = { mtaStsTxt: NONE, mtaStsPolicy: null };
    const mx = (...records: { priority: number; exchange: string }[]) => ({
      mx: { kind: "records" as const, records },
    });
    // No MX, or a null MX (RFC 7505): no mail to protect, no finding; SPF and DMARC still count.
    expect(judged({ ...noSts, mx: NONE })).toEqual([]);
    expect(judged({ ...noSts, ...mx({ priority: 0, exchange: "" }) })).toEqual([]);
    expect(judged({ ...noSts, ...mx({ priority: 0, exchange: "." }), dmarc: NONE })).toEqual([
      "dns-dmarc-missing",
    ]);
    expect(
      dnsSection({
        ...evidenceOf(),
        dns: domain(
          mx(
            { priority: 20, exchange: "b.example.com." },
            { priority: 5, exchange: "A.example.com" },
          ),
        ),
      })?.mx,
    ).toEqual({ present: true, null_mx: false, hosts: ["a.example.com", "b.example.com"] });
    expect(
      dnsSection({ ...evidenceOf(), dns: domain(mx({ priority: 0, exchange: "" })) })?.mx,
    ).toEqual({ present: true, null_mx: true, hosts: [] });
    expect(dnsSection({ ...evidenceOf(), dns: domain({ mx: NONE }) })?.mx).toEqual({
      present: false,
      null_mx: false,
      hosts: [],
    });
    // A null MX beside real ones is invalid (RFC 7505 §3): not a null MX, and no empty host.
    const mixed = domain(
      mx({ priority: 0, exchange: "" }, { priority: 10, exchange: "mx.other.net" }),
    );
    expect(dnsSection({ ...evidenceOf(), dns: mixed })?.mx).toEqual({
      present: true,
      null_mx: false,
      hosts: ["mx.other.net"],
    });
    expect(judgeDns({ ...evidenceOf(), dns: mixed })[0]?.message).toContain(
      "matches none of its MX hosts mx.other.net (",
    );
    // MX unknown: no finding about it, a note.
    const unknown = {
      ...evidenceOf(),
      dns: domain({ ...noSts, mx: { kind: "failed", code: "ETIMEOUT" } }),
    };
    expect(idsOf(judgeDns(unknown))).toEqual([]);
    expect(dnsSection(unknown)?.mx).toBeNull();
    expect(dnsNotes(unknown)).toEqual([
      "The MX records of example.com could not be looked up: the DNS servers gave no usable answer.",
    ]);
  });

  it("what could not be had is null with a note, never a finding", () => {
    const e = {
      ...evidenceOf(),
      dns: domain({
        caa: null,
        dmarc: { kind: "failed", code: "ESERVFAIL" },
        mtaStsPolicy: { kind: "failed", failure: { kind: "capped", limit: "requests", max: 32 } },
      }),
    };
    expect(idsOf(judgeDns(e))).toEqual([]);
    expect(dnsSection(e)).toMatchObject({
      caa: null,
      dmarc: null,
      mta_sts: { present: true, mode: null },
    });
    expect(dnsNotes(e)).toEqual([
      "The CAA records of example.com could not be looked up: no answer arrived in time.",
      "The DMARC record of example.com could not be looked up: the DNS servers gave no usable answer.",
      "The MTA-STS policy of example.com was not fetched: our limit of 32 requests per snapshot was reached.",
    ]);
  });
});
