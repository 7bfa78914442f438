/**
 * The fixed demo of docs/contract.md §2.4: a pre-made report of a sample site, never a live
 * fetch. Its notes come from the same table as live reports, so the wording cannot drift.
 */
import { PATHS } from "../routes.js";
import { headerFindings, headerNotes } from "./rules/index.js";
import type { HeaderPresence } from "./rules/index.js";
import { buildReport } from "./result.js";
import type { DemoSnapshotResult, ReportSections, SnapshotResult } from "./result.js";

/** The sample site's TLS (docs/contract.md §9.1). */
const DEMO_TLS: Pick<ReportSections, "tls"> = {
  tls: {
    protocol: "TLSv1.3",
    cipher: "TLS_AES_256_GCM_SHA384",
    certificate: {
      subject: "CN=example.com",
      issuer: "C=US, O=Let's Encrypt, CN=E6",
      not_after: "2026-03-01T12:00:00.000Z",
      days_left: 59,
      key_type: "ec",
      key_bits: 256,
    },
    tls1_0_accepted: false,
    tls1_1_accepted: false,
  },
};

const DEMO_NOTE = `This is a static example report; no site was fetched. The live operation is the paid POST ${PATHS.snapshot} (0.05 USDC via x402).`;

/** The sample site's domain (§9.2): records that leave nothing to find. */
const DEMO_DNS: Pick<ReportSections, "dns"> = {
  dns: {
    domain: "example.com",
    caa: { present: true, issuers: ["letsencrypt.org"] },
    spf: { present: true, record: "v=spf1 include:_spf.example.com -all", all: "-all" },
    dmarc: {
      present: true,
      record: "v=DMARC1; p=reject; rua=mailto:dmarc@example.com",
      policy: "reject",
    },
    mta_sts: { present: true, mode: "enforce", max_age: 604800 },
    mx: { present: true, null_mx: false, hosts: ["mx1.example.com", "mx2.example.com"] },
  },
};

/** The sample site's cross-origin policies (§9.3): not isolated, as most sites. */
const DEMO_CROSS_ORIGIN: Pick<ReportSections, "cross_origin"> = {
  cross_origin: {
    coop: "same-origin-allow-popups",
    coep: "unsafe-none",
    corp: "same-site",
    cross_origin_isolated: false,
  },
};

/** A report of a sample site at https://example.com with the given headers present, everything
 * else in order. */
function sampleReport(headers: HeaderPresence): SnapshotResult {
  const findings = headerFindings(headers);
  return buildReport(
    {
      requested_url: "https://example.com",
      normalized_url: "https://example.com/",
      final_url: "https://example.com/",
      fetched_at: "2026-01-01T00:00:00.000Z",
      reachable: true,
      final_status_code: 200,
      redirect_count: 0,
    },
    { https: true, ...headers, security_txt: true, robots_txt: true, sitemap_xml: true },
    headerNotes(headers, findings),
    findings,
    structuredClone({ ...DEMO_TLS, ...DEMO_DNS, ...DEMO_CROSS_ORIGIN }),
  );
}

const DEMO: DemoSnapshotResult = {
  ...sampleReport({
    hsts: false,
    csp: false,
    x_frame_options: false,
    x_content_type_options: false,
    referrer_policy: true,
    permissions_policy: true,
  }),
  _demo: true,
  _note: DEMO_NOTE,
};

/** A fresh copy each call, so no caller can change what the next one sees. */
export function demoSnapshot(): DemoSnapshotResult {
  return structuredClone(DEMO);
}
