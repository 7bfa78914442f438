/**
 * Paid reports that judge header values and cookies, end to end over the real devnet (anvil +
 * DevUSDC + the project's facilitator) with the official @x402/fetch client: two real HTTPS
 * targets combining weak and invalid cases; each report names every weakness and its fix, and
 * each one moved exactly the price on chain.
 */
import type { OutgoingHttpHeaders } from "node:http";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/index.js";
import {
  createSnapshotEngine,
  type SnapshotEngine,
  type SnapshotResult,
} from "../../src/snapshot/index.js";
import { startDnsServer, type DnsFixture } from "../fixtures/dns-server.js";
import {
  DOMAIN_CASES,
  DOMAIN_FINDINGS,
  GOOD_HEADERS,
  RESPONSE_FINDINGS,
  SECURITY_TXT,
  TLS_FINDINGS,
  domainNames,
  domainRecords,
  mtaStsRoute,
} from "../fixtures/finding-cases.js";
import {
  PUBLIC_CIDRS,
  PUBLIC_HOST,
  respond,
  startHttpsTarget,
  type TargetServer,
} from "../fixtures/targets.js";
import { issueExpiredLeaf, issueLeaf, loadTestCa } from "../fixtures/tls.js";
import {
  PRICE_UNITS,
  devnetGate,
  paidSnapshot,
  startGatedService,
  startPaidDevnet,
  type GatedService,
  type PaidDevnet,
} from "../fixtures/paid-devnet.js";

/** Weak values: every header present, none doing its job well. */
const WEAK: OutgoingHttpHeaders = {
  "strict-transport-security": "max-age=60",
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; object-src 'none'; base-uri 'none'",
  "x-frame-options": "garbage",
  "x-content-type-options": "nosnif",
  "referrer-policy": "unsafe-url",
  "permissions-policy": "camera=()",
};
const WEAK_IDS = [
  "csp-unsafe-inline",
  "csp-unsafe-eval",
  "x-frame-options-invalid",
  "hsts-max-age-short",
  "x-content-type-options-invalid",
  "referrer-policy-unsafe",
  "hsts-no-include-subdomains",
  "csp-no-form-action",
];

/** Invalid values and careless cookies. */
const INVALID: OutgoingHttpHeaders = {
  ...GOOD_HEADERS,
  "strict-transport-security": "max-age=31536000; max-age=31536000",
  "referrer-policy": "never",
  "permissions-policy": "camera 'none'",
  "set-cookie": ["session_id=abc; Path=/", "__Host-pref=1; Secure; Path=/; Domain=site.test"],
};
const INVALID_IDS = [
  "hsts-invalid",
  "cookie-no-secure",
  "cookie-no-httponly",
  "referrer-policy-invalid",
  "permissions-policy-invalid",
  "cookie-prefix-invalid",
  "cookie-no-samesite",
];

/** Nothing of the six headers; a Report-Only CSP, the legacy Feature-Policy, a cross-site cookie. */
const BARE: OutgoingHttpHeaders = {
  "content-security-policy-report-only": "default-src 'self'",
  "feature-policy": "camera 'none'",
  "set-cookie": "track=1; SameSite=None",
};
const BARE_IDS = [
  "hsts-missing",
  "csp-missing",
  "x-frame-options-missing",
  "cookie-no-secure",
  "x-content-type-options-missing",
  "referrer-policy-missing",
  "cookie-samesite-none-insecure",
  "permissions-policy-missing",
  "csp-report-only",
  "permissions-policy-legacy",
  "security-txt-missing",
];

/** HSTS turned off, and a CSP that is not one. */
const ZERO: OutgoingHttpHeaders = {
  ...GOOD_HEADERS,
  "strict-transport-security": "max-age=0",
  "content-security-policy": "default-src: 'self'",
};
const ZERO_IDS = ["hsts-max-age-zero", "csp-invalid"];

/** Preload asked for too early, and a CSP without hardening. */
const PRELOAD: OutgoingHttpHeaders = {
  ...GOOD_HEADERS,
  "strict-transport-security": "max-age=20000000; includeSubDomains; preload",
  "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
};
const PRELOAD_IDS = [
  "csp-no-object-src",
  "hsts-not-preload-ready",
  "csp-no-base-uri",
  "csp-no-form-action",
];

/** Wider than it looks: a CSP whose script sources let any HTTPS host (or data:) run script. */
const WIDE: OutgoingHttpHeaders = {
  ...GOOD_HEADERS,
  "content-security-policy":
    "default-src 'self'; script-src 'self' https: data:; object-src 'none'; base-uri 'none'; form-action 'self'",
};
const WIDE_IDS = ["csp-script-any-source"];

/**
 * What the owner meant but browsers read otherwise: plugins and forms open to any host, an
 * origin sent over plain HTTP, a SameSite typo, a cookie for another site, COOP/COEP/CORP typos;
 * an affinity cookie beside them is no session cookie.
 */
const MEANT: OutgoingHttpHeaders = {
  ...GOOD_HEADERS,
  "content-security-policy":
    "default-src 'self'; object-src *; base-uri 'none'; form-action https:; frame-ancestors 'none'",
  "referrer-policy": "origin",
  "set-cookie": [
    "heroku-session-affinity=ACyDaANo; Secure; Path=/",
    "sessionid=k3y; Secure; HttpOnly; Path=/; SameSite=Stirct",
    "prefs=1; Path=/; Domain=other.test",
  ],
  "cross-origin-opener-policy": "same-origin-allowpopups",
  "cross-origin-embedder-policy": "require_corp",
  "cross-origin-resource-policy": "Same-Origin",
};
const MEANT_IDS = [
  "csp-object-any-source",
  "referrer-policy-origin",
  "cookie-samesite-invalid",
  "cookie-domain-rejected",
  "coop-invalid",
  "coep-invalid",
  "corp-invalid",
  "csp-no-form-action",
];

/** Every header but the CSP, which the page sets in a `<meta>` tag instead. */
const META: OutgoingHttpHeaders = Object.fromEntries(
  Object.entries(GOOD_HEADERS).filter(([name]) => name !== "content-security-policy"),
);
const META_PAGE = `<!doctype html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"></head><body>hi</body></html>`;

let devnet: PaidDevnet;
let dns: DnsFixture;
let site: TargetServer;
let bare: TargetServer;
let expired: TargetServer;
/** TLS 1.0 and 1.1 accepted, a 1024-bit RSA key, 10 days left. */
let oldTls: TargetServer;
/** 25 days left. */
let renewSoon: TargetServer;
/** A security.txt past its Expires, and Server and X-Powered-By with versions. */
let lax: TargetServer;
/** A security.txt without Expires. */
let undated: TargetServer;
let engine: SnapshotEngine;
let service: GatedService;

beforeAll(async () => {
  devnet = await startPaidDevnet();
  const ca = await loadTestCa();
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] }, ...domainRecords() });
  site = await startHttpsTarget({
    cert: await issueLeaf(ca, { dnsNames: ["site.test", ...domainNames()], ips: [PUBLIC_HOST] }),
    routes: {
      // The domain cases: www.<domain>/ is a good page, mta-sts.<domain> serves its policy.
      "/": respond.text("good", GOOD_HEADERS),
      "/.well-known/mta-sts.txt": mtaStsRoute,
      "/weak": respond.text("weak", WEAK),
      "/invalid": respond.text("invalid", INVALID),
      "/zero": respond.text("zero", ZERO),
      "/preload": respond.text("preload", PRELOAD),
      "/meta": respond.html(META_PAGE, META),
      "/wide": respond.text("wide", WIDE),
      "/meant": respond.text("meant", MEANT),
      ...SECURITY_TXT,
    },
  });
  bare = await startHttpsTarget({
    cert: await issueLeaf(ca, { dnsNames: ["site.test"], ips: [PUBLIC_HOST] }),
    routes: { "/": respond.text("bare", BARE) },
  });
  expired = await startHttpsTarget({
    cert: await issueExpiredLeaf(ca, { dnsNames: ["site.test"], ips: [PUBLIC_HOST] }),
  });
  const goodSite = { "/": respond.text("good", GOOD_HEADERS), ...SECURITY_TXT };
  const inDays = (days: number) => new Date(Date.now() + days * 24 * 60 * 60 * 1000);
  oldTls = await startHttpsTarget({
    cert: await issueLeaf(ca, {
      dnsNames: ["site.test"],
      ips: [PUBLIC_HOST],
      rsaBits: 1024,
      notAfter: inDays(10),
    }),
    tls: { minVersion: "TLSv1", ciphers: "DEFAULT@SECLEVEL=0" },
    routes: goodSite,
  });
  renewSoon = await startHttpsTarget({
    cert: await issueLeaf(ca, {
      dnsNames: ["site.test"],
      ips: [PUBLIC_HOST],
      notAfter: inDays(25),
    }),
    routes: goodSite,
  });
  const siteCert = await issueLeaf(ca, { dnsNames: ["site.test"], ips: [PUBLIC_HOST] });
  lax = await startHttpsTarget({
    cert: siteCert,
    routes: {
      "/": respond.text("lax", {
        ...GOOD_HEADERS,
        server: "nginx/1.18.0 (Ubuntu)",
        "x-powered-by": "PHP/8.1.2",
      }),
      "/.well-known/security.txt": respond.text(
        "Contact: mailto:security@site.test\nExpires: 2021-01-01T00:00:00.000Z\n",
      ),
    },
  });
  undated = await startHttpsTarget({
    cert: siteCert,
    routes: {
      "/": respond.text("undated", GOOD_HEADERS),
      "/.well-known/security.txt": respond.text("Contact: mailto:security@site.test\n"),
    },
  });
  const snapshotConfig = {
    allowedPorts: new Set([
      site.port,
      bare.port,
      expired.port,
      oldTls.port,
      renewSoon.port,
      lax.port,
      undated.port,
    ]),
    allowCidrs: PUBLIC_CIDRS,
  };
  engine = createSnapshotEngine({
    ...snapshotConfig,
    timeoutMs: 5_000,
    maxRedirects: 10,
    dnsServers: [dns.address],
    // The MTA-STS policy host's port stands for 443.
    httpsProbePort: site.port,
  });
  service = await startGatedService({
    engine,
    scope: snapshotConfig,
    gate: { ...devnetGate(devnet), devnet: true },
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await engine?.close();
  await Promise.all(
    [site, bare, expired, oldTls, renewSoon, lax, undated, dns].map((t) => t?.close()),
  );
  await devnet?.close();
});

/** Payer `i`'s paid report of `url`, and what it cost the payer and brought the payee on chain. */
async function paidReport(
  i: number,
  url: string,
): Promise<{ report: SnapshotResult; paid: bigint; received: bigint }> {
  const account = devnet.payer(i);
  const [payerBefore, payeeBefore] = await Promise.all([
    devnet.balanceOf(account.address),
    devnet.balanceOf(devnet.payTo),
  ]);
  const response = await paidSnapshot(service.url, url, account);
  expect(response.status).toBe(200);
  const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
  expect(settlement.success).toBe(true);
  const report = SnapshotResultSchema.parse(await response.json());
  const [payerAfter, payeeAfter] = await Promise.all([
    devnet.balanceOf(account.address),
    devnet.balanceOf(devnet.payTo),
  ]);
  return { report, paid: payerBefore - payerAfter, received: payeeAfter - payeeBefore };
}

/** Every id some paid report here has shown. */
const shown = new Set<string>();

function expectNamed(report: SnapshotResult, ids: string[]): void {
  expect(report.findings.map((f) => f.id)).toEqual(ids);
  for (const id of ids) shown.add(id);
  for (const f of report.findings) {
    expect(report.notes).toContain(f.message);
    expect(f.recommendation).toMatch(/`.+`/);
  }
}

describe("paid reports judge values, not only presence", () => {
  it("weak values: every header present, each weakness named with its fix; paid once on chain", async () => {
    const { report, paid, received } = await paidReport(0, site.url("/weak", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    // The contract's fields keep their meaning: present is present.
    expect(report.checks).toMatchObject({
      https: true,
      hsts: true,
      csp: true,
      x_frame_options: true,
      x_content_type_options: true,
      referrer_policy: true,
      permissions_policy: true,
      security_txt: true,
    });
    expectNamed(report, WEAK_IDS);
    expect(report.findings.find((f) => f.id === "hsts-max-age-short")?.recommendation).toBe(
      "Set `Strict-Transport-Security: max-age=31536000; includeSubDomains`.",
    );
    // unsafe-inline and X-Frame-Options 20 each, unsafe-eval and a short HSTS 10 each, two
    // lows 5 each, one info: 100 − 70 (docs/findings.md "Score and grade").
    expect(report).toMatchObject({ score: 30, grade: "D" });
  });

  it("invalid values and careless cookies, the cookies named; paid once on chain", async () => {
    const { report, paid, received } = await paidReport(1, site.url("/invalid", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, INVALID_IDS);
    expect(report.findings.find((f) => f.id === "cookie-no-secure")?.message).toMatch(
      /^The cookie "session_id" is set without Secure/,
    );
    expect(report.findings.find((f) => f.id === "cookie-prefix-invalid")?.message).toMatch(
      /^The cookie "__Host-pref"/,
    );
    // HSTS invalid and a session cookie without HttpOnly 20 each, without Secure 10, three lows
    // 5 each: 100 − 65.
    expect(report).toMatchObject({ score: 35, grade: "D" });
  });

  it.each([
    ["missing headers, Report-Only, Feature-Policy, a cross-site cookie", 2, "bare", BARE_IDS],
    ["HSTS max-age=0 and a CSP that is not one", 3, "/zero", ZERO_IDS],
    ["preload asked too early, a CSP without hardening", 4, "/preload", PRELOAD_IDS],
    ["a CSP set in a <meta> tag, said to be one", 6, "/meta", ["csp-in-meta"]],
    ["a CSP letting any HTTPS host run script", 7, "/wide", WIDE_IDS],
  ] as const)("%s; paid once on chain", async (_what, who, where, ids) => {
    const url = where === "bare" ? bare.url("/", "site.test") : site.url(where, "site.test");
    const { report, paid, received } = await paidReport(who, url);
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, [...ids]);
  });

  it("mistakes browsers ignore or reject, judged as browsers read them; paid once on chain", async () => {
    const { report, paid, received } = await paidReport(6, site.url("/meant", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, MEANT_IDS);
    expect(report.findings.find((f) => f.id === "cookie-domain-rejected")?.message).toMatch(
      /^The cookie "prefs" is set with a Domain/,
    );
    // object-src * 20, the SameSite typo 15, five lows 5 each, form-action info: 100 − 60.
    expect(report).toMatchObject({ score: 40, grade: "D+" });
  });

  it("an expired security.txt and a disclosed server version are low; paid once on chain", async () => {
    const { report, paid, received } = await paidReport(7, lax.url("/", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, ["security-txt-expired", "server-version-disclosed"]);
    expect(report.findings.map((f) => f.message)).toEqual([
      "security.txt expired on 2021-01-01.",
      "The headers Server (nginx/1.18.0) and X-Powered-By (PHP/8.1.2) name a software version.",
    ]);
    expect(report.security_txt_present).toBe(true);
    // Two lows: 100 − 5 − 5.
    expect(report).toMatchObject({ score: 90, grade: "A" });
  });

  it("a security.txt without Expires is incomplete; paid once on chain", async () => {
    const { report, paid, received } = await paidReport(7, undated.url("/", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, ["security-txt-incomplete"]);
    expect(report.findings[0]?.message).toBe(
      "security.txt has no Expires field (RFC 9116 §2.5.5).",
    );
  });

  it("HTTPS failing (an expired certificate) is high, said once; the report is paid once", async () => {
    const { report, paid, received } = await paidReport(5, expired.url("/", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expect(report.reachable).toBe(false);
    expect(report.findings[0]).toMatchObject({ id: "https-failed", severity: "high" });
    expect(report.findings[0]?.message).toMatch(/certificate has expired/);
    expect(report.notes.filter((n) => n.startsWith("HTTPS does not work"))).toHaveLength(1);
    shown.add("https-failed");
  });

  it("old TLS: legacy protocols, a 1024-bit RSA key, 10 days left; the tls section says so", async () => {
    const { report, paid, received } = await paidReport(7, oldTls.url("/", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, ["tls-cert-expiring-14d", "tls-legacy-protocols", "tls-weak-rsa-key"]);
    expect(report.tls).toMatchObject({
      certificate: { subject: "CN=site.test", key_type: "rsa", key_bits: 1024, days_left: 9 },
      tls1_0_accepted: true,
      tls1_1_accepted: true,
    });
    // One high, two medium: 100 − 25 − 20.
    // One high (25) and two medium (20 each, docs/findings.md "Score and grade").
    expect(report).toMatchObject({ score: 35 });
  });

  it("a certificate with 25 days left is medium; the report is paid once", async () => {
    const { report, paid, received } = await paidReport(7, renewSoon.url("/", "site.test"));
    expect(paid).toBe(PRICE_UNITS);
    expect(received).toBe(PRICE_UNITS);
    expectNamed(report, ["tls-cert-expiring-30d"]);
    expect(report.tls).toMatchObject({ tls1_0_accepted: false, tls1_1_accepted: false });
  });

  it("together, the paid reports above show every TLS id", () => {
    const missing = TLS_FINDINGS.map((d) => d.id).filter((id) => !shown.has(id));
    expect(missing).toEqual([]);
  });

  it("together, the paid reports above show every id of the response judges", () => {
    const missing = RESPONSE_FINDINGS.map((d) => d.id).filter((id) => !shown.has(id));
    expect(missing).toEqual([]);
  });
});

describe("paid reports judge the domain's records", () => {
  const weak = DOMAIN_CASES.filter((c) => c.ids.length > 0);

  it.each(weak.map((c) => [c.domain, c] as const))(
    "%s: its CAA, SPF, DMARC and MTA-STS findings; paid once on chain",
    async (_domain, c) => {
      const { report, paid, received } = await paidReport(7, site.url("/", `www.${c.domain}`));
      expect(paid).toBe(PRICE_UNITS);
      expect(received).toBe(PRICE_UNITS);
      expect(report.dns?.domain).toBe(c.domain);
      expectNamed(report, c.ids);
    },
  );

  it("together, the paid reports above show every id of the domain", () => {
    const missing = DOMAIN_FINDINGS.map((d) => d.id).filter((id) => !shown.has(id));
    expect(missing).toEqual([]);
  });
});
