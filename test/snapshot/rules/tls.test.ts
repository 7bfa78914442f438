/** The TLS judge and section over evidence: expiry thresholds, legacy protocols, RSA size. */
import { describe, expect, it } from "vitest";
import type { TlsEvidence } from "../../../src/snapshot/rules/evidence.js";
import { judgeTls, tlsSectionOf } from "../../../src/snapshot/rules/tls.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

/** A well-kept TLS setup: TLS 1.3, an EC key, 60 days left, no legacy protocol. */
const GOOD: TlsEvidence = {
  protocol: "TLSv1.3",
  cipher: "TLS_AES_128_GCM_SHA256",
  subject: "CN=site.test",
  issuer: "CN=secsnap test CA",
  notAfter: "2027-01-25T00:00:00.000Z",
  daysLeft: 60,
  keyType: "ec",
  keyBits: 256,
  tls1_0: false,
  tls1_1: false,
};

const judged = (over: Partial<TlsEvidence>) =>
  idsOf(judgeTls(evidenceOf({}, { tls: { ...GOOD, ...over } })));

describe("TLS judge", () => {
  it("good: no finding; no TLS at all: no finding and a null section", () => {
    expect(judged({})).toEqual([]);
    const none = evidenceOf({}, { tls: null });
    expect(judgeTls(none)).toEqual([]);
    expect(tlsSectionOf(none)).toBeNull();
  });

  it("expiry: under 14 whole days is high, under 30 medium, 30 and more nothing", () => {
    expect(judged({ daysLeft: 0 })).toEqual(["tls-cert-expiring-14d"]);
    expect(judged({ daysLeft: 13 })).toEqual(["tls-cert-expiring-14d"]);
    expect(judged({ daysLeft: 14 })).toEqual(["tls-cert-expiring-30d"]);
    expect(judged({ daysLeft: 29 })).toEqual(["tls-cert-expiring-30d"]);
    expect(judged({ daysLeft: 30 })).toEqual([]);
    const [f] = judgeTls(
      evidenceOf({}, { tls: { ...GOOD, daysLeft: 1, notAfter: "2026-11-27T10:00:00.000Z" } }),
    );
    expect(f).toMatchObject({ severity: "high", check: "tls" });
    expect(f?.message).toBe(
      "The TLS certificate expires in less than 14 days (2026-11-27, in 1 day).",
    );
  });

  it("legacy protocols: either accepted is one medium finding naming which; null is no finding", () => {
    expect(judged({ tls1_0: true, tls1_1: true })).toEqual(["tls-legacy-protocols"]);
    expect(judged({ tls1_0: null, tls1_1: null })).toEqual([]);
    const message = (over: Partial<TlsEvidence>) =>
      judgeTls(evidenceOf({}, { tls: { ...GOOD, ...over } }))[0]?.message;
    expect(message({ tls1_0: true, tls1_1: true })).toMatch(/accepts TLS 1\.0 and 1\.1,/);
    expect(message({ tls1_0: false, tls1_1: true })).toMatch(/accepts TLS 1\.1,/);
    expect(message({ tls1_0: true, tls1_1: null })).toMatch(/accepts TLS 1\.0,/);
  });

  it("RSA under 2048 bits is weak; 2048 RSA and small EC keys are not", () => {
    expect(judged({ keyType: "rsa", keyBits: 1024 })).toEqual(["tls-weak-rsa-key"]);
    expect(judged({ keyType: "rsa-pss", keyBits: 1536 })).toEqual(["tls-weak-rsa-key"]);
    expect(judged({ keyType: "rsa", keyBits: 2048 })).toEqual([]);
    expect(judged({ keyType: "ec", keyBits: 256 })).toEqual([]);
    expect(judged({ keyType: null, keyBits: null })).toEqual([]);
  });

  it("all at once, in the order of the rule; the section says what was seen", () => {
    const e = evidenceOf(
      {},
      { tls: { ...GOOD, daysLeft: 20, tls1_1: true, keyType: "rsa", keyBits: 1024 } },
    );
    expect(idsOf(judgeTls(e))).toEqual([
      "tls-cert-expiring-30d",
      "tls-legacy-protocols",
      "tls-weak-rsa-key",
    ]);
    expect(tlsSectionOf(e)).toEqual({
      protocol: "TLSv1.3",
      cipher: "TLS_AES_128_GCM_SHA256",
      certificate: {
        subject: "CN=site.test",
        issuer: "CN=secsnap test CA",
        not_after: "2027-01-25T00:00:00.000Z",
        days_left: 20,
        key_type: "rsa",
        key_bits: 1024,
      },
      tls1_0_accepted: false,
      tls1_1_accepted: true,
    });
  });
});
