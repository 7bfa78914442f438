/**
 * The domain (docs/contract.md §9.2, docs/findings.md "The domain"): CAA, SPF, DMARC, MTA-STS and
 * MX of the final host's registrable domain, as the engine's resolver answered them, and the
 * MTA-STS policy file. Pure functions of the evidence; the lookups are net/domain.ts's.
 */
import { createRequire } from "node:module";
import { isIP } from "node:net";
import type * as Tldts from "tldts";
import type { DnsAnswer, DomainEvidence, Evidence, MxRecord, PolicyFetch } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { capReached, cause, undecodableReason } from "./notes.js";
import { defineRule } from "./rule.js";

export type SpfAll = "+all" | "?all" | "~all" | "-all";
export type DmarcPolicy = "none" | "quarantine" | "reject";
export type MtaStsMode = "enforce" | "testing" | "none";

/** The `dns` section of a report; each part null when its answer could not be had. */
export interface DnsSection {
  domain: string;
  caa: { present: boolean; issuers: string[] } | null;
  spf: { present: boolean; record: string | null; all: SpfAll | null } | null;
  dmarc: { present: boolean; record: string | null; policy: DmarcPolicy | null } | null;
  mta_sts: { present: boolean; mode: MtaStsMode | null; max_age: number | null } | null;
  mx: { present: boolean; null_mx: boolean; hosts: string[] } | null;
}

// tldts (the public suffix list) is required on the first named target, not at start-up
// (docs/benchmarks.md, "Start-up"), as in redirects.ts.
const requireCjs = createRequire(import.meta.url);
let tldts: typeof Tldts | undefined;

/**
 * The registrable domain of `hostname` under the ICANN section of the public suffix list, or
 * null: an IP literal, a public suffix itself, or a name under a suffix the list does not know
 * (`.test`, `.internal`, a single label) — no public CA or mail server consults those records.
 */
export function registrableDomain(hostname: string): string | null {
  const host = hostname
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "")
    .toLowerCase();
  if (isIP(host) !== 0) return null;
  tldts ??= requireCjs("tldts") as typeof Tldts;
  const parsed = tldts.parse(host, { allowPrivateDomains: false });
  return parsed.isIcann === true && parsed.domain ? parsed.domain : null;
}

export const DNS_CAA_MISSING: FindingDef = {
  id: "dns-caa-missing",
  check: "dns",
  severity: "low",
  message: "The domain has no CAA record: any certificate authority may issue certificates for it.",
  recommendation:
    'Publish a CAA record naming the authority you use, e.g. `example.com. CAA 0 issue "letsencrypt.org"`.',
};

export const DNS_SPF_MISSING: FindingDef = {
  id: "dns-spf-missing",
  check: "dns",
  severity: "low",
  message:
    "The domain publishes no SPF record: receivers cannot tell its mail servers from others.",
  recommendation:
    "Publish a TXT record listing the servers that send its mail, ending in `-all` or `~all`; a domain that sends no mail publishes `v=spf1 -all`.",
};

export const DNS_SPF_ALLOWS_ALL: FindingDef = {
  id: "dns-spf-allows-all",
  check: "dns",
  severity: "high",
  message:
    "The domain's SPF record ends in `+all`: every server on the Internet passes SPF for it, which helps spoofed mail through.",
  recommendation: "End the SPF record in `-all` (or `~all`) instead of `+all`.",
};

export const DNS_SPF_WEAK: FindingDef = {
  id: "dns-spf-weak",
  check: "dns",
  severity: "low",
  message:
    "The domain's SPF record ends in `?all`: mail from any other server is neutral, not refused.",
  recommendation: "End the SPF record in `-all` (or `~all` while DMARC reports are reviewed).",
};

export const DNS_SPF_INVALID: FindingDef = {
  id: "dns-spf-invalid",
  check: "dns",
  severity: "low",
  message:
    "The domain publishes more than one SPF record; receivers treat that as an error and ignore them all.",
  recommendation: "Merge them into one TXT record starting with `v=spf1`.",
};

export const DNS_DMARC_MISSING: FindingDef = {
  id: "dns-dmarc-missing",
  check: "dns",
  severity: "medium",
  message:
    "The domain publishes no DMARC policy: mail forging its name in the From line is not refused.",
  recommendation:
    "Publish a TXT record at `_dmarc.<domain>`, e.g. `v=DMARC1; p=quarantine; rua=mailto:dmarc@<domain>`, then move to `p=reject`.",
};

export const DNS_DMARC_NONE: FindingDef = {
  id: "dns-dmarc-none",
  check: "dns",
  severity: "low",
  message:
    "The domain's DMARC policy is `p=none`: receivers report forged mail but still deliver it.",
  recommendation:
    "Once the DMARC reports show your own mail passing, set `p=quarantine`, then `p=reject`.",
};

export const DNS_MTA_STS_MISSING: FindingDef = {
  id: "dns-mta-sts-missing",
  check: "dns",
  severity: "info",
  message:
    "The domain receives mail but has no MTA-STS policy: mail sent to it may be delivered without TLS if an attacker strips STARTTLS.",
  recommendation:
    "Publish `_mta-sts.<domain>` TXT `v=STSv1; id=<serial>` and a policy at `https://mta-sts.<domain>/.well-known/mta-sts.txt` naming its MX hosts.",
};

export const DNS_MTA_STS_TESTING: FindingDef = {
  id: "dns-mta-sts-testing",
  check: "dns",
  severity: "info",
  message:
    "The domain's MTA-STS policy is in `testing` mode: senders report failures but deliver anyway.",
  recommendation: "Once TLS reports show no failures, set `mode: enforce` in the policy file.",
};

export const DNS_MTA_STS_INVALID: FindingDef = {
  id: "dns-mta-sts-invalid",
  check: "dns",
  severity: "low",
  message: "The domain announces MTA-STS but its record or its policy file cannot be used.",
  recommendation:
    "Publish exactly one `_mta-sts.<domain>` TXT record `v=STSv1; id=<serial>`, and serve `https://mta-sts.<domain>/.well-known/mta-sts.txt` as `text/plain` with a valid certificate, with `version: STSv1`, `mode`, `max_age` and `mx` lines.",
};

export const DNS_MTA_STS_MX_MISMATCH: FindingDef = {
  id: "dns-mta-sts-mx-mismatch",
  check: "dns",
  severity: "medium",
  message:
    "The domain's enforced MTA-STS policy matches none of some of its MX hosts: senders that apply it refuse to deliver mail there.",
  recommendation:
    "Name every MX host (or a `*.` pattern that covers it) on an `mx:` line of the policy file, then change the record's `id`.",
};

/** Below a day, an enforced policy lapses between a sender's visits (RFC 8461 §3.2, §10.2). */
export const MTA_STS_MIN_MAX_AGE = 86_400;

export const DNS_MTA_STS_MAX_AGE_SHORT: FindingDef = {
  id: "dns-mta-sts-max-age-short",
  check: "dns",
  severity: "low",
  message:
    "The domain's enforced MTA-STS policy has a `max_age` under one day: senders forget it quickly, and an attacker who blocks the policy fetch after that gets mail delivered without TLS.",
  recommendation:
    "Set `max_age` to a week or more (`max_age: 604800`; RFC 8461 expects weeks), then change the record's `id`.",
};

/** RFC 8461 §4.1: an `mx` pattern is a host name, or `*.` and a name, matching one more label. */
export function mxMatches(pattern: string, host: string): boolean {
  const p = pattern.trim().replace(/\.$/, "").toLowerCase();
  if (!p.startsWith("*.")) return p === host;
  const rest = p.slice(1); // ".example.com"
  return (
    host.endsWith(rest) && !host.slice(0, -rest.length).includes(".") && host.length > rest.length
  );
}

/** The TXT records of `answer` that `version` accepts (each record's chunks already joined). */
function recordsWith(answer: DnsAnswer<string>, version: RegExp): string[] {
  return answer.kind === "records" ? answer.records.filter((r) => version.test(r)) : [];
}

/**
 * RFC 7208 §4.5: a record that begins with exactly `v=spf1`, ended by a space or the record's
 * end; anything else (`v=spf1;…`, a leading space, `v=spf10`) is not SPF and is discarded.
 */
const SPF_VERSION = /^v=spf1( |$)/i;

/** RFC 7489 §6.4: `v` *WSP `=` *WSP `DMARC1` (the name case-sensitive), then `;` or the end. */
const DMARC_VERSION = /^\s*[vV][ \t]*=[ \t]*DMARC1[ \t]*(;|$)/;

/** RFC 8461 §3.1: a record that begins `v=STSv1` (case-sensitive) claims MTA-STS. */
const MTA_STS_VERSION = /^v=STSv1([ \t;]|$)/;

/**
 * Why the domain's MTA-STS records announce no policy, or null when they do: RFC 8461 §3.1 wants
 * exactly one, `v=STSv1`, `;`, and an `id` of 1–32 letters and digits; otherwise senders "MUST
 * assume the recipient domain does not have an available MTA-STS Policy".
 */
export function mtaStsRecordProblem(answer: DnsAnswer<string>): string | null {
  const records = recordsWith(answer, MTA_STS_VERSION);
  if (records.length !== 1) return `it publishes ${records.length} MTA-STS records, not one`;
  const [version, ...fields] = (records[0] as string).split(";");
  if (!/^v=STSv1[ \t]*$/.test(version ?? "")) return "its record is not `v=STSv1; id=…`";
  const id = fields.map((f) => /^[ \t]*id=([^ \t]*)[ \t]*$/.exec(f)?.[1]).find((v) => v);
  if (id === undefined || !/^[A-Za-z0-9]{1,32}$/.test(id)) {
    return "its record has no valid `id` (1 to 32 letters and digits)";
  }
  return null;
}

/** The `all` of an SPF record (RFC 7208 §5.1; no qualifier means `+`), or null without one. */
export function spfAll(record: string): SpfAll | null {
  for (const term of record.split(/\s+/).slice(1)) {
    const m = /^([+?~-]?)all$/i.exec(term);
    if (m) return `${m[1] || "+"}all` as SpfAll;
  }
  return null;
}

/** The tags of a DMARC record (RFC 7489 §6.4), names lower-cased; the first of a name counts. */
function tagsOf(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(";")) {
    const eq = part.indexOf("=");
    const name = part.slice(0, eq).trim().toLowerCase();
    if (eq > 0 && !tags.has(name)) tags.set(name, part.slice(eq + 1).trim());
  }
  return tags;
}

/**
 * The policy receivers apply: its `p=`; without a valid one but with a report address (`rua`),
 * `none` (RFC 7489 §6.6.3: they act as if it said `p=none`); else null, no DMARC at all.
 */
export function dmarcPolicy(record: string): DmarcPolicy | null {
  const tags = tagsOf(record);
  const p = tags.get("p")?.toLowerCase();
  if (p === "none" || p === "quarantine" || p === "reject") return p;
  const rua = tags.get("rua") ?? "";
  return rua.split(",").some((uri) => /^\s*[a-z][a-z0-9+.-]*:\S+/i.test(uri)) ? "none" : null;
}

/** The record's `pct` (RFC 7489 §6.6.4: the share of failing mail the policy applies to). */
export function dmarcPercent(record: string): number {
  const pct = tagsOf(record).get("pct");
  return pct !== undefined && /^\d{1,3}$/.test(pct) ? Math.min(Number(pct), 100) : 100;
}

export interface MtaStsPolicy {
  mode: MtaStsMode;
  maxAge: number;
  mx: string[];
}

/** RFC 8461 §3.2: `key: value` lines; version STSv1, a mode, a max_age ≤ 31557600, mx (enforce/testing). */
export function parseMtaStsPolicy(text: string): MtaStsPolicy | null {
  const fields = new Map<string, string>();
  const mx: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const key = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (key === "mx") mx.push(value);
    else if (!fields.has(key)) fields.set(key, value);
  }
  const mode = fields.get("mode");
  const maxAge = fields.get("max_age") ?? "";
  if (fields.get("version") !== "STSv1") return null;
  if (mode !== "enforce" && mode !== "testing" && mode !== "none") return null;
  if (!/^\d{1,10}$/.test(maxAge) || Number(maxAge) > 31_557_600) return null;
  if (mode !== "none" && mx.length === 0) return null;
  return { mode, maxAge: Number(maxAge), mx };
}

/** Why a policy file cannot be used, or the policy; "ours" when a limit of ours stopped it. */
type PolicyOutcome =
  | { kind: "policy"; policy: MtaStsPolicy }
  | { kind: "unusable"; why: string }
  | { kind: "ours"; why: string };

function policyOutcome(fetch: PolicyFetch): PolicyOutcome {
  if (fetch.kind === "failed") {
    const f = fetch.failure;
    if (f.kind === "capped") return { kind: "ours", why: capReached(f) };
    if (f.kind === "blocked")
      return { kind: "ours", why: "it is not allowed by this service's settings" };
    if (f.kind === "timeout") return { kind: "ours", why: "no answer arrived in time" };
    return { kind: "unusable", why: cause(f) };
  }
  if (fetch.status !== 200) return { kind: "unusable", why: `it answers HTTP ${fetch.status}` };
  const type = fetch.contentType?.split(";")[0]?.trim().toLowerCase();
  if (type !== "text/plain") return { kind: "unusable", why: "it is not served as text/plain" };
  if (fetch.undecodable) {
    return { kind: "unusable", why: undecodableReason(fetch.undecodable) };
  }
  const policy = fetch.body ? parseMtaStsPolicy(new TextDecoder().decode(fetch.body)) : null;
  return policy
    ? { kind: "policy", policy }
    : { kind: "unusable", why: "it is not a valid policy" };
}

/** The domain evidence, when there is one. */
function dnsOf(e: Evidence): DomainEvidence | null {
  return e.dns ?? null;
}

export function dnsSection(e: Evidence): DnsSection | null {
  const d = dnsOf(e);
  if (!d) return null;
  const usable = <T>(a: DnsAnswer<T> | null): a is Exclude<DnsAnswer<T>, { kind: "failed" }> =>
    a !== null && a.kind !== "failed";
  const spf = usable(d.txt) ? recordsWith(d.txt, SPF_VERSION) : null;
  const dmarc = usable(d.dmarc) ? recordsWith(d.dmarc, DMARC_VERSION).map((r) => r.trim()) : null;
  const sts = usable(d.mtaStsTxt) ? recordsWith(d.mtaStsTxt, MTA_STS_VERSION) : null;
  const announced = d.mtaStsTxt !== null && mtaStsAnnounced(d.mtaStsTxt);
  const outcome = announced && d.mtaStsPolicy ? policyOutcome(d.mtaStsPolicy) : null;
  const policy = outcome?.kind === "policy" ? outcome.policy : null;
  return {
    domain: d.domain,
    caa: usable(d.caa)
      ? {
          present: d.caa.kind === "records",
          issuers: [
            ...new Set(
              (d.caa.kind === "records" ? d.caa.records : [])
                .filter((r) => r.tag === "issue" || r.tag === "issuewild")
                .map((r) => r.value.split(";")[0]?.trim().toLowerCase() ?? "")
                .filter((v) => v !== ""),
            ),
          ],
        }
      : null,
    spf: spf && {
      present: spf.length > 0,
      record: spf[0] ?? null,
      all: spf.length === 1 ? spfAll(spf[0] as string) : null,
    },
    dmarc: dmarc && {
      present: dmarc.length > 0,
      record: dmarc[0] ?? null,
      policy: dmarc.length === 1 ? dmarcPolicy(dmarc[0] as string) : null,
    },
    mta_sts: sts && {
      present: sts.length > 0,
      mode: policy?.mode ?? null,
      max_age: policy?.maxAge ?? null,
    },
    mx: usable(d.mx) ? mxOf(d.mx) : null,
  };
}

/** The mail exchangers by preference; a lone `0 .` is a null MX: no mail (RFC 7505). */
function mxOf(
  answer: Exclude<DnsAnswer<MxRecord>, { kind: "failed" }>,
): NonNullable<DnsSection["mx"]> {
  const records = answer.kind === "records" ? answer.records : [];
  const hosts = [...records]
    .sort((a, b) => a.priority - b.priority)
    .map((r) => r.exchange.replace(/\.$/, "").toLowerCase());
  const nullMx = hosts.length === 1 && hosts[0] === "";
  // A null MX beside other records is invalid (RFC 7505 §3); its empty name is no host.
  return { present: records.length > 0, null_mx: nullMx, hosts: hosts.filter((h) => h !== "") };
}

/** Whether the records announce a policy, so that its file is fetched (and judged). */
export function mtaStsAnnounced(answer: DnsAnswer<string>): boolean {
  return answer.kind === "records" && mtaStsRecordProblem(answer) === null;
}

export function judgeDns(e: Evidence): Finding[] {
  const d = dnsOf(e);
  const s = dnsSection(e);
  if (!d || !s) return [];
  const out: Finding[] = [];
  const { domain } = s;
  if (s.spf && !s.spf.present) {
    out.push(
      found(
        DNS_SPF_MISSING,
        `The domain ${domain} publishes no SPF record: receivers cannot tell its mail servers from others.`,
      ),
    );
  } else if (s.spf) {
    const count = d.txt ? recordsWith(d.txt, SPF_VERSION).length : 0;
    if (count > 1) {
      out.push(
        found(
          DNS_SPF_INVALID,
          `The domain ${domain} publishes ${count} SPF records; receivers treat that as an error and ignore them all.`,
        ),
      );
    } else if (s.spf.all === "+all") {
      out.push(found(DNS_SPF_ALLOWS_ALL));
    } else if (s.spf.all === "?all") {
      out.push(found(DNS_SPF_WEAK));
    } else if (s.spf.all === null && !/(^|\s)redirect=/i.test(s.spf.record ?? "")) {
      out.push(
        found(
          DNS_SPF_WEAK,
          "The domain's SPF record has no `all` term: mail from any other server is neutral, not refused.",
        ),
      );
    }
  }
  if (s.dmarc && !s.dmarc.present) {
    out.push(
      found(
        DNS_DMARC_MISSING,
        `The domain ${domain} publishes no DMARC policy: mail forging its name in the From line is not refused.`,
      ),
    );
  } else if (s.dmarc && s.dmarc.policy === null) {
    out.push(
      found(
        DNS_DMARC_MISSING,
        `The DMARC record of ${domain} sets no valid policy (one record with \`p=\`), so receivers apply none.`,
      ),
    );
  } else if (s.dmarc?.policy === "none") {
    const explicit =
      tagsOf(s.dmarc.record ?? "")
        .get("p")
        ?.toLowerCase() === "none";
    out.push(
      explicit
        ? found(DNS_DMARC_NONE)
        : found(
            DNS_DMARC_NONE,
            `The DMARC record of ${domain} has no valid \`p=\` but a report address, so receivers apply \`p=none\`: they report forged mail but still deliver it.`,
          ),
    );
  } else if (s.dmarc?.policy === "quarantine" && dmarcPercent(s.dmarc.record ?? "") < 100) {
    // Mail outside `pct` gets the next policy down (RFC 7489 §6.6.4): none, so it is delivered.
    const pct = dmarcPercent(s.dmarc.record ?? "");
    out.push(
      found(
        DNS_DMARC_NONE,
        pct === 0
          ? `The DMARC record of ${domain} sets \`p=quarantine\` with \`pct=0\`: receivers quarantine none of the forged mail and apply \`p=none\` to it.`
          : `The DMARC record of ${domain} sets \`p=quarantine\` with \`pct=${pct}\`: receivers quarantine ${pct} % of the forged mail and deliver the rest (\`p=none\`).`,
      ),
    );
  }
  if (s.caa && !s.caa.present) {
    out.push(
      found(
        DNS_CAA_MISSING,
        `The domain ${domain} has no CAA record: any certificate authority may issue certificates for it.`,
      ),
    );
  }
  // MTA-STS protects mail sent to the domain: asked for only of a domain that receives mail.
  const receivesMail = s.mx !== null && s.mx.present && !s.mx.null_mx;
  const recordProblem = d.mtaStsTxt ? mtaStsRecordProblem(d.mtaStsTxt) : null;
  if (s.mta_sts && !s.mta_sts.present) {
    if (receivesMail) out.push(found(DNS_MTA_STS_MISSING));
  } else if (s.mta_sts && recordProblem !== null) {
    out.push(
      found(
        DNS_MTA_STS_INVALID,
        `The domain ${domain} announces MTA-STS but senders ignore it: ${recordProblem}.`,
      ),
    );
  } else if (s.mta_sts && d.mtaStsPolicy) {
    const outcome = policyOutcome(d.mtaStsPolicy);
    if (outcome.kind === "unusable") {
      out.push(
        found(
          DNS_MTA_STS_INVALID,
          `The domain ${domain} announces MTA-STS but its policy file cannot be used: ${outcome.why}.`,
        ),
      );
    } else if (outcome.kind === "policy" && outcome.policy.mode === "testing") {
      out.push(found(DNS_MTA_STS_TESTING));
    } else if (outcome.kind === "policy" && outcome.policy.mode === "enforce") {
      const { mx, maxAge } = outcome.policy;
      if (maxAge < MTA_STS_MIN_MAX_AGE) {
        out.push(
          found(
            DNS_MTA_STS_MAX_AGE_SHORT,
            `The enforced MTA-STS policy of ${domain} has \`max_age: ${maxAge}\` (under one day, ${MTA_STS_MIN_MAX_AGE} s): senders forget it quickly, and an attacker who blocks the policy fetch after that gets mail delivered without TLS.`,
          ),
        );
      }
      const unmatched = (s.mx?.hosts ?? []).filter((h) => !mx.some((p) => mxMatches(p, h)));
      if (unmatched.length > 0) {
        out.push(
          found(
            DNS_MTA_STS_MX_MISMATCH,
            `The enforced MTA-STS policy of ${domain} matches none of its MX hosts ${unmatched.join(", ")} (its mx lines: ${mx.join(", ")}): senders that apply it refuse to deliver mail there.`,
          ),
        );
      }
    } else if (outcome.kind === "policy" && outcome.policy.mode === "none") {
      out.push(
        found(
          DNS_MTA_STS_MISSING,
          `The MTA-STS policy of ${domain} is \`mode: none\`: senders apply no policy.`,
        ),
      );
    }
  }
  return out;
}

/** What could not be looked up, in plain words (a limit of ours or the DNS servers: not the site's fault). */
export function dnsNotes(e: Evidence): string[] {
  const d = dnsOf(e);
  if (!d) return [];
  const notes: string[] = [];
  const unanswered = (what: string, a: DnsAnswer<unknown> | null) => {
    if (a === null)
      notes.push(`The ${what} of ${d.domain} could not be looked up: no answer arrived in time.`);
    else if (a.kind === "failed") {
      notes.push(
        `The ${what} of ${d.domain} could not be looked up: the DNS servers gave no usable answer.`,
      );
    }
  };
  unanswered("CAA records", d.caa);
  unanswered("SPF record", d.txt);
  unanswered("DMARC record", d.dmarc);
  unanswered("MTA-STS record", d.mtaStsTxt);
  unanswered("MX records", d.mx);
  if (d.mtaStsTxt && mtaStsAnnounced(d.mtaStsTxt)) {
    const outcome = d.mtaStsPolicy
      ? policyOutcome(d.mtaStsPolicy)
      : { kind: "ours", why: "no answer arrived in time" };
    if (outcome.kind === "ours") {
      notes.push(`The MTA-STS policy of ${d.domain} was not fetched: ${outcome.why}.`);
    }
  }
  return notes;
}

export const dnsRule = defineRule({
  topic: "dns",
  findings: [
    DNS_SPF_ALLOWS_ALL,
    DNS_SPF_MISSING,
    DNS_SPF_INVALID,
    DNS_SPF_WEAK,
    DNS_DMARC_MISSING,
    DNS_DMARC_NONE,
    DNS_CAA_MISSING,
    DNS_MTA_STS_INVALID,
    DNS_MTA_STS_MX_MISMATCH,
    DNS_MTA_STS_MAX_AGE_SHORT,
    DNS_MTA_STS_MISSING,
    DNS_MTA_STS_TESTING,
  ],
  judge: judgeDns,
  notes: dnsNotes,
  section: { key: "dns", of: dnsSection },
});
