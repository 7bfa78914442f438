/**
 * The domain lookups of one snapshot (docs/snapshot-engine.md "The domain"): CAA, TXT and MX at
 * the registrable domain, TXT at `_dmarc.` and `_mta-sts.`, through the engine's DNS servers, all at
 * once; then, only when an MTA-STS record is there, its policy file over the snapshot's pinned
 * dispatcher. Nothing here throws.
 */
import { mtaStsAnnounced } from "../rules/dns.js";
import type { DnsAnswer, DomainEvidence, MxRecord, PolicyFetch } from "../rules/evidence.js";
import { fetchMtaStsPolicy } from "./fetch.js";
import type { FetchContext } from "./fetch.js";
import type { CaaRecordAnswer, RecordAnswer, RecordLookup } from "./resolver.js";

/** The lookups of one domain, each settling on its own. */
export interface DomainLookups {
  domain: string;
  caa: Promise<DnsAnswer<{ tag: string; value: string }>>;
  txt: Promise<DnsAnswer<string>>;
  dmarc: Promise<DnsAnswer<string>>;
  mtaStsTxt: Promise<DnsAnswer<string>>;
  mx: Promise<DnsAnswer<MxRecord>>;
  /** null: no MTA-STS record, so no request. */
  mtaStsPolicy: Promise<PolicyFetch | null>;
}

/** RFC 8659 §4.2–4.4: the tags judged; matching a tag is case-insensitive (§4.1). */
const CAA_TAGS = new Set(["issue", "issuewild", "iodef"]);

/** c-ares' CAA objects carry the tag, as the server spelled it, as a key beside `critical`. */
function caaRecords(
  answer: RecordAnswer<CaaRecordAnswer>,
): DnsAnswer<{ tag: string; value: string }> {
  if (answer.kind !== "records") return answer;
  const records = answer.records.flatMap((r) =>
    Object.entries(r).flatMap(([key, value]) => {
      const tag = key.toLowerCase();
      return CAA_TAGS.has(tag) && typeof value === "string" ? [{ tag, value }] : [];
    }),
  );
  // A CAA set of only other tags still is a CAA set (RFC 8659 §4): present, no issuer named.
  return { kind: "records", records: records.length > 0 ? records : [{ tag: "other", value: "" }] };
}

/** Starts every lookup of `domain` now; the policy file on `port` (443 in production). */
export function startDomainLookups(
  domain: string,
  records: RecordLookup,
  port: number,
  ctx: FetchContext,
): DomainLookups {
  const ask = records.open(ctx.signal);
  const mtaStsTxt = ask.txt(`_mta-sts.${domain}`);
  return {
    domain,
    caa: ask.caa(domain).then(caaRecords),
    txt: ask.txt(domain),
    dmarc: ask.txt(`_dmarc.${domain}`),
    mtaStsTxt,
    mx: ask.mx(domain),
    // RFC 8461 §3.1: the policy is fetched only when exactly one valid record announces it.
    mtaStsPolicy: mtaStsTxt.then((a) =>
      mtaStsAnnounced(a) ? fetchMtaStsPolicy(domain, port, ctx) : null,
    ),
  };
}

/** The evidence of `lookups` as settled within `ms` from now; what comes later is null. */
export async function domainEvidence(lookups: DomainLookups, ms: number): Promise<DomainEvidence> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<null>((r) => (timer = setTimeout(() => r(null), ms)));
  const by = <T>(p: Promise<T>): Promise<T | null> => Promise.race([p, grace]);
  try {
    const [caa, txt, dmarc, mtaStsTxt, mx, mtaStsPolicy] = await Promise.all([
      by(lookups.caa),
      by(lookups.txt),
      by(lookups.dmarc),
      by(lookups.mtaStsTxt),
      by(lookups.mx),
      by(lookups.mtaStsPolicy),
    ]);
    return { domain: lookups.domain, caa, txt, dmarc, mtaStsTxt, mx, mtaStsPolicy };
  } finally {
    clearTimeout(timer);
  }
}
