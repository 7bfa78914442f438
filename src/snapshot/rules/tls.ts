/**
 * TLS (docs/contract.md §9.1, docs/findings.md "TLS"): the `tls` section — the negotiated protocol
 * and cipher, the certificate, whether TLS 1.0 and 1.1 are still accepted — and its findings: a
 * certificate close to expiry, legacy protocols accepted, an RSA key under 2048 bits.
 */
import type { Evidence, TlsEvidence } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { capReached } from "./notes.js";
import { defineRule } from "./rule.js";

/** The report's `tls` section; null when no TLS handshake to the final host completed. */
export interface TlsSection {
  protocol: string;
  cipher: string;
  certificate: {
    subject: string;
    issuer: string;
    not_after: string;
    days_left: number;
    key_type: string | null;
    key_bits: number | null;
  };
  tls1_0_accepted: boolean | null;
  tls1_1_accepted: boolean | null;
}

/** Certificates with fewer whole days left than these are findings. */
const EXPIRY_HIGH_DAYS = 14;
const EXPIRY_MEDIUM_DAYS = 30;
/** RSA keys shorter than this are weak (NIST SP 800-131A; CA/Browser Forum minimum). */
const RSA_MIN_BITS = 2048;

export const TLS_CERT_EXPIRING_14D: FindingDef = {
  id: "tls-cert-expiring-14d",
  check: "tls",
  severity: "high",
  message: "The TLS certificate expires in less than 14 days.",
  recommendation:
    "Renew the certificate now, and automate renewal (`certbot renew` or your CA's ACME client) well before expiry.",
};

export const TLS_CERT_EXPIRING_30D: FindingDef = {
  id: "tls-cert-expiring-30d",
  check: "tls",
  severity: "medium",
  message: "The TLS certificate expires in less than 30 days.",
  recommendation:
    "Renew the certificate, and automate renewal (`certbot renew` or your CA's ACME client) so it happens 30 days before expiry.",
};

export const TLS_LEGACY_PROTOCOLS: FindingDef = {
  id: "tls-legacy-protocols",
  check: "tls",
  severity: "medium",
  message: "The server still accepts TLS 1.0 or 1.1, deprecated protocols (RFC 8996).",
  recommendation: "Accept TLS 1.2 and 1.3 only (nginx: `ssl_protocols TLSv1.2 TLSv1.3;`).",
};

export const TLS_WEAK_RSA_KEY: FindingDef = {
  id: "tls-weak-rsa-key",
  check: "tls",
  severity: "medium",
  message: "The TLS certificate's RSA key is shorter than 2048 bits.",
  recommendation:
    "Issue a new certificate with an RSA key of at least 2048 bits or an ECDSA P-256 key (`openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256`).",
};

/** "TLS 1.0 and 1.1", "TLS 1.0" or "TLS 1.1": the legacy versions that were accepted. */
function legacyAccepted(tls: TlsEvidence): string {
  const versions = [tls.tls1_0 === true ? "1.0" : null, tls.tls1_1 === true ? "1.1" : null];
  return `TLS ${versions.filter((v) => v !== null).join(" and ")}`;
}

function daysWord(days: number): string {
  return days === 1 ? "1 day" : `${days} days`;
}

export function judgeTls(e: Evidence): Finding[] {
  const { tls } = e;
  if (!tls) return [];
  const findings: Finding[] = [];
  const expiry = `${tls.notAfter.slice(0, 10)}, in ${daysWord(tls.daysLeft)}`;
  if (tls.daysLeft < EXPIRY_HIGH_DAYS) {
    findings.push(
      found(TLS_CERT_EXPIRING_14D, `The TLS certificate expires in less than 14 days (${expiry}).`),
    );
  } else if (tls.daysLeft < EXPIRY_MEDIUM_DAYS) {
    findings.push(
      found(TLS_CERT_EXPIRING_30D, `The TLS certificate expires in less than 30 days (${expiry}).`),
    );
  }
  if (tls.tls1_0 === true || tls.tls1_1 === true) {
    findings.push(
      found(
        TLS_LEGACY_PROTOCOLS,
        `The server still accepts ${legacyAccepted(tls)}, deprecated protocols (RFC 8996).`,
      ),
    );
  }
  const rsa = tls.keyType === "rsa" || tls.keyType === "rsa-pss";
  if (rsa && tls.keyBits !== null && tls.keyBits < RSA_MIN_BITS) {
    findings.push(
      found(
        TLS_WEAK_RSA_KEY,
        `The TLS certificate's RSA key is ${tls.keyBits} bits, shorter than 2048 bits.`,
      ),
    );
  }
  return findings;
}

export function tlsSectionOf(e: Evidence): TlsSection | null {
  const { tls } = e;
  if (!tls) return null;
  return {
    protocol: tls.protocol,
    cipher: tls.cipher,
    certificate: {
      subject: tls.subject,
      issuer: tls.issuer,
      not_after: tls.notAfter,
      days_left: tls.daysLeft,
      key_type: tls.keyType,
      key_bits: tls.keyBits,
    },
    tls1_0_accepted: tls.tls1_0,
    tls1_1_accepted: tls.tls1_1,
  };
}

/** A legacy verdict our own limits left null is said, never judged (docs/contract.md §9.1). */
export function tlsNotes(e: Evidence): string[] {
  const stopped = e.tls?.legacyStopped;
  if (!stopped || (e.tls?.tls1_0 !== null && e.tls?.tls1_1 !== null)) return [];
  const why = stopped.kind === "capped" ? capReached(stopped) : "no answer arrived in time";
  return [`Whether the server still accepts TLS 1.0 and 1.1 could not be checked: ${why}.`];
}

export const tlsRule = defineRule({
  topic: "tls",
  findings: [TLS_CERT_EXPIRING_14D, TLS_CERT_EXPIRING_30D, TLS_LEGACY_PROTOCOLS, TLS_WEAK_RSA_KEY],
  judge: judgeTls,
  notes: tlsNotes,
  section: { key: "tls", of: tlsSectionOf },
});
