/**
 * The domain section through the engine (docs/contract.md §9.2): CAA and TXT answers from the real
 * DNS fixture, the MTA-STS policy from a real HTTPS target named `mta-sts.<domain>`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  DOMAIN_CASES,
  DOMAIN_FINDINGS,
  GOOD_HEADERS,
  SECURITY_TXT,
  domainNames,
  domainRecords,
  mtaStsRoute,
} from "../fixtures/finding-cases.js";
import { PUBLIC_HOST, createTestEngine, respond, startHttpsTarget } from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

/** A domain that receives mail and announces MTA-STS; its policy host is the site. */
function brokenPolicyRecords(domain: string) {
  return {
    [domain]: {
      CAA: [{ tag: "issue", value: "letsencrypt.org" }],
      TXT: ["v=spf1 mx -all"],
      MX: [{ priority: 10, exchange: `mx.${domain}` }],
    },
    [`www.${domain}`]: { A: [PUBLIC_HOST] },
    [`mta-sts.${domain}`]: { A: [PUBLIC_HOST] },
    [`_dmarc.${domain}`]: { TXT: ["v=DMARC1; p=reject"] },
    [`_mta-sts.${domain}`]: { TXT: ["v=STSv1; id=1"] },
  };
}

let dns: DnsFixture;
let site: TargetServer;
let engine: SnapshotEngine;

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer({
    ...domainRecords(),
    "site.test": { A: [PUBLIC_HOST] },
    "slow-mail.com": { TXT: ["v=spf1 -all"], drop: ["CAA"] },
    "www.slow-mail.com": { A: [PUBLIC_HOST] },
    "_dmarc.slow-mail.com": { rcode: "SERVFAIL" },
    ...brokenPolicyRecords("cut-mail.com"),
    ...brokenPolicyRecords("stalled-mail.com"),
  });
  site = await startHttpsTarget({
    cert: await issueLeaf(ca, {
      dnsNames: [
        ...domainNames(),
        "site.test",
        "www.slow-mail.com",
        ...["cut-mail.com", "stalled-mail.com"].flatMap((d) => [`www.${d}`, `mta-sts.${d}`]),
      ],
      ips: [PUBLIC_HOST],
    }),
    routes: {
      "/": respond.text("good", GOOD_HEADERS),
      "/.well-known/mta-sts.txt": (req, res) => {
        const host = req.headers.host?.replace(/:\d+$/, "");
        if (host !== "mta-sts.cut-mail.com" && host !== "mta-sts.stalled-mail.com") {
          return mtaStsRoute(req, res);
        }
        // A policy whose body breaks off (reset) or never ends (held until the deadline).
        res.writeHead(200, { "content-type": "text/plain", "content-length": "200" });
        res.write("version: STSv1\nmode: enf");
        if (host === "mta-sts.cut-mail.com") setTimeout(() => res.socket?.destroy(), 20);
      },
      ...SECURITY_TXT,
    },
  });
  // The policy host's port stands for 443 (httpsProbePort, as the HTTPS probe).
  engine = createTestEngine({ dns, ports: [site.port], httpsProbePort: site.port });
});

afterAll(async () => {
  await engine.close();
  await Promise.all([site.close(), dns.close()]);
});

const policyRequests = (domain: string) =>
  site.requests.filter((r) => r.headers.host?.startsWith(`mta-sts.${domain}:`));

describe("the domain section", () => {
  it.each(DOMAIN_CASES.map((c) => [c.domain, c] as const))(
    "%s: exactly its findings, said in the notes",
    async (_domain, c) => {
      const report = await engine.snapshot(site.url("/", `www.${c.domain}`));
      SnapshotResultSchema.parse(report);
      expect(report.findings.map((f) => f.id)).toEqual(c.ids);
      for (const f of report.findings) expect(report.notes).toContain(f.message);
      expect(report.dns?.domain).toBe(c.domain);
      // No policy request without an MTA-STS record, or with several; one with one.
      expect(policyRequests(c.domain)).toHaveLength(c.mtaStsTxt?.length === 1 ? 1 : 0);
    },
  );

  it("a domain that does everything right: every part read", async () => {
    const report = await engine.snapshot(site.url("/", "www.good-mail.com"));
    expect(report.dns).toEqual({
      domain: "good-mail.com",
      caa: { present: true, issuers: ["letsencrypt.org"] },
      spf: { present: true, record: "v=spf1 include:_spf.good-mail.com -all", all: "-all" },
      dmarc: {
        present: true,
        record: "v=DMARC1; p=reject; rua=mailto:dmarc@good-mail.com",
        policy: "reject",
      },
      mta_sts: { present: true, mode: "enforce", max_age: 604800 },
      mx: { present: true, null_mx: false, hosts: ["mx1.good-mail.com", "mx2.good-mail.com"] },
    });
    expect(report.score).toBe(100);
  });

  it("the domain's five questions share one channel: one socket asks them all", async () => {
    const before = dns.queries.length;
    await engine.snapshot(site.url("/", "www.good-mail.com"));
    const asked = dns.queries
      .slice(before)
      .filter((q) => ["CAA", "TXT", "MX"].includes(q.type) && q.name.endsWith("good-mail.com"));
    expect(asked.map((q) => `${q.type} ${q.name}`).sort()).toEqual([
      "CAA good-mail.com",
      "MX good-mail.com",
      "TXT _dmarc.good-mail.com",
      "TXT _mta-sts.good-mail.com",
      "TXT good-mail.com",
    ]);
    expect(new Set(asked.map((q) => q.port)).size).toBe(1);
  });

  it("a null MX and no MX: no mail received, no MTA-STS asked for", async () => {
    const nullMx = await engine.snapshot(site.url("/", "www.no-mail.com"));
    expect(nullMx.dns).toMatchObject({
      mta_sts: { present: false },
      mx: { present: true, null_mx: true, hosts: [] },
    });
    expect(nullMx.findings).toEqual([]);
    const noMx = await engine.snapshot(site.url("/", "www.quiet-mail.com"));
    expect(noMx.dns).toMatchObject({ mx: { present: false, null_mx: false, hosts: [] } });
    expect(noMx.findings).toEqual([]);
  });

  it("the weak answers are named in the section", async () => {
    const report = await engine.snapshot(site.url("/", "www.weak-mail.com"));
    expect(report.dns).toMatchObject({
      caa: { present: false, issuers: [] },
      spf: { present: true, all: "+all" },
      dmarc: { present: true, policy: "none" },
      mta_sts: { present: true, mode: "testing", max_age: 604800 },
    });
    const odd = await engine.snapshot(site.url("/", "www.odd-mail.com"));
    // `issue ";"`: a CAA set that lets no authority issue.
    expect(odd.dns).toMatchObject({
      caa: { present: true, issuers: [] },
      spf: { present: true, all: null },
      mta_sts: { present: true, mode: null, max_age: null },
    });
  });

  it("records as the RFCs read them: CAA tags in any case, two MTA-STS records ignored", async () => {
    const report = await engine.snapshot(site.url("/", "www.twice-mail.com"));
    expect(report.dns).toMatchObject({
      caa: { present: true, issuers: ["letsencrypt.org"] },
      dmarc: { present: true, policy: "reject" },
      mta_sts: { present: true, mode: null, max_age: null },
    });
    expect(report.findings.find((f) => f.id === "dns-mta-sts-invalid")?.message).toBe(
      "The domain twice-mail.com announces MTA-STS but senders ignore it: it publishes 2 MTA-STS records, not one.",
    );
    expect(
      report.notes.filter((n) => n.includes("could not") || n.includes("not fetched")),
    ).toEqual([]);
  });

  it("an IP address or a name under no public suffix has no domain section and asks nothing", async () => {
    const before = dns.queries.length;
    const byIp = await engine.snapshot(site.url("/"));
    const byTest = await engine.snapshot(site.url("/", "site.test"));
    expect(byIp.dns).toBeNull();
    expect(byTest.dns).toBeNull();
    const asked = dns.queries.slice(before).map((q) => q.type);
    expect(asked.filter((t) => t === "CAA" || t === "TXT")).toEqual([]);
    expect(byIp.findings.filter((f) => f.check === "dns")).toEqual([]);
  });

  it("a lookup with no usable answer is null with a note, never a finding", async () => {
    const report = await engine.snapshot(site.url("/", "www.slow-mail.com"));
    expect(report.dns).toMatchObject({
      domain: "slow-mail.com",
      caa: null,
      dmarc: null,
      spf: { present: true, all: "-all" },
    });
    expect(report.notes).toContain(
      "The CAA records of slow-mail.com could not be looked up: no answer arrived in time.",
    );
    expect(report.notes).toContain(
      "The DMARC record of slow-mail.com could not be looked up: the DNS servers gave no usable answer.",
    );
    const ids = report.findings.map((f) => f.id);
    expect(ids).not.toContain("dns-caa-missing");
    expect(ids).not.toContain("dns-dmarc-missing");
  });

  it("a policy host on a port the service may not use: mode null and a note, no finding", async () => {
    const strict = createTestEngine({ dns, ports: [site.port] });
    try {
      const before = policyRequests("weak-mail.com").length;
      const report = await strict.snapshot(site.url("/", "www.weak-mail.com"));
      expect(report.dns?.mta_sts).toEqual({ present: true, mode: null, max_age: null });
      expect(report.notes).toContain(
        "The MTA-STS policy of weak-mail.com was not fetched: it is not allowed by this service's settings.",
      );
      expect(report.findings.map((f) => f.id)).not.toContain("dns-mta-sts-testing");
      expect(policyRequests("weak-mail.com")).toHaveLength(before);
    } finally {
      await strict.close();
    }
  });

  it("a policy body that breaks off is the site's; one our deadline stops is a note", async () => {
    const cut = await engine.snapshot(site.url("/", "www.cut-mail.com"));
    expect(cut.findings.map((f) => [f.id, f.message])).toEqual([
      [
        "dns-mta-sts-invalid",
        "The domain cut-mail.com announces MTA-STS but its policy file cannot be used: the connection was closed before a complete response.",
      ],
    ]);
    const hurried = createTestEngine({
      dns,
      ports: [site.port],
      httpsProbePort: site.port,
      timeoutMs: 1500,
    });
    try {
      const stalled = await hurried.snapshot(site.url("/", "www.stalled-mail.com"));
      expect(stalled.findings.map((f) => f.id)).toEqual([]);
      expect(stalled.dns?.mta_sts).toEqual({ present: true, mode: null, max_age: null });
      expect(stalled.notes).toContain(
        "The MTA-STS policy of stalled-mail.com was not fetched: no answer arrived in time.",
      );
    } finally {
      await hurried.close();
    }
  });

  it("the cases serve every id of the domain", () => {
    const served = new Set(DOMAIN_CASES.flatMap((c) => c.ids));
    for (const d of DOMAIN_FINDINGS) expect(served, d.id).toContain(d.id);
  });
});
