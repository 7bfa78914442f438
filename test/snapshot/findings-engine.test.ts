/**
 * Every finding id through the engine, each from a real HTTPS target serving its case
 * (test/fixtures/finding-cases.ts): the id, its words in the notes, and the fields unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { SEVERITIES } from "../../src/snapshot/rules/finding.js";
import { scoreOf } from "../../src/snapshot/rules/score.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  FINDING_CASES,
  GOOD_HEADERS,
  RESPONSE_FINDINGS,
  caseRoutes,
} from "../fixtures/finding-cases.js";
import type { FindingCase } from "../fixtures/finding-cases.js";
import {
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueExpiredLeaf, issueLeaf, loadTestCa } from "../fixtures/tls.js";

let dns: DnsFixture;
let site: TargetServer;
let bare: TargetServer;
let expired: TargetServer;
let plain: TargetServer;
let engine: SnapshotEngine;

beforeAll(async () => {
  const ca = await loadTestCa();
  const names = { dnsNames: ["site.test"], ips: [PUBLIC_HOST] };
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
  site = await startHttpsTarget({ cert: await issueLeaf(ca, names), routes: caseRoutes() });
  bare = await startHttpsTarget({
    cert: await issueLeaf(ca, names),
    routes: { "/": respond.text("no security.txt here", GOOD_HEADERS) },
  });
  expired = await startHttpsTarget({ cert: await issueExpiredLeaf(ca, names) });
  plain = await startHttpTarget({ routes: { "/": respond.text("plain", GOOD_HEADERS) } });
  engine = createTestEngine({
    dns,
    ports: [site.port, bare.port, expired.port, plain.port],
    httpsProbePort: expired.port,
  });
});

afterAll(async () => {
  await engine.close();
  await Promise.all([site, bare, expired, plain, dns].map((s) => s.close()));
});

function ids(r: SnapshotResult): string[] {
  return r.findings.map((f) => f.id);
}

/** Each finding is one of the notes, and the score follows from the findings. */
function expectConsistent(r: SnapshotResult): void {
  expect(SnapshotResultSchema.parse(r)).toEqual(r);
  for (const f of r.findings) {
    expect(r.notes).toContain(f.message);
    expect(f.recommendation).not.toBe("");
  }
  expect(new Set(r.notes).size).toBe(r.notes.length);
  const rank = r.findings.map((f) => SEVERITIES.indexOf(f.severity));
  expect(rank).toEqual([...rank].sort((a, b) => a - b));
  expect(r.score).toBe(scoreOf(r.findings));
}

describe("findings through the engine", () => {
  it("good: six good headers, a security.txt and no cookie: no finding, 100, A+", async () => {
    const r = await engine.snapshot(site.url("/", "site.test"));
    expect(r.findings).toEqual([]);
    expect(r).toMatchObject({ score: 100, grade: "A+" });
  });

  // Needs the engine to read the page (PageEvidence.metaCsp); the other cases do not.
  const needsPage = (c: FindingCase) => c.html !== undefined;

  it.each(FINDING_CASES.filter((c) => !needsPage(c)).map((c) => [c.path, c] as const))(
    "%s",
    async (_path, c) => {
      const r = await engine.snapshot(site.url(c.path, "site.test"));
      expect(ids(r).sort()).toEqual([...c.ids].sort());
      expectConsistent(r);
    },
  );

  it.each(FINDING_CASES.filter(needsPage).map((c) => [c.path, c] as const))(
    "%s (page evidence)",
    async (_path, c) => {
      const r = await engine.snapshot(site.url(c.path, "site.test"));
      expect(ids(r)).toEqual(c.ids);
      expect(r.csp_present).toBe(false);
      expect(r.notes).toContain("Content-Security-Policy (CSP) header is missing.");
    },
  );

  it("the fields keep their meaning: a weak or invalid value is still present", async () => {
    const r = await engine.snapshot(site.url("/xfo-garbage", "site.test"));
    expect(r.x_frame_options_present).toBe(true);
    expect(r.checks.x_frame_options).toBe(true);
    const fa = await engine.snapshot(site.url("/frame-ancestors", "site.test"));
    // frame-ancestors waives the finding, not the field.
    expect(fa.x_frame_options_present).toBe(false);
    expect(fa.notes).toContain("X-Frame-Options header is missing.");
    expect(ids(fa)).not.toContain("x-frame-options-missing");
  });

  it("security-txt-missing: a site without security.txt", async () => {
    const r = await engine.snapshot(bare.url("/", "site.test"));
    expect(ids(r)).toEqual(["security-txt-missing"]);
    expect(r.findings[0]?.message).toBe("security.txt is missing (HTTP 404).");
    expectConsistent(r);
  });

  it("https-failed: an expired certificate, said once, with every header missing", async () => {
    const r = await engine.snapshot(expired.url("/", "site.test"));
    expect(ids(r)[0]).toBe("https-failed");
    expect(r.findings[0]?.message).toMatch(/^HTTPS does not work .*certificate has expired\.$/);
    expect(r.notes.filter((n) => n.startsWith("HTTPS does not work"))).toHaveLength(1);
    expectConsistent(r);
  });

  it("https-failed: an http site whose https probe fails", async () => {
    const r = await engine.snapshot(plain.url("/", "site.test"));
    expect(ids(r)).toContain("https-failed");
    expect(ids(r)).not.toContain("hsts-invalid");
    // Its HSTS header came over plain HTTP: no HSTS to a browser, though the field says present.
    expect(ids(r)).toContain("hsts-missing");
    expect(r.hsts_present).toBe(true);
    expectConsistent(r);
  });

  it("a cookie set by a redirect of the chain is judged too (the final page sets none)", async () => {
    site.route(
      "/cookie-redirect",
      respond.status(302, { location: "/", "set-cookie": "session=abc; Path=/" }),
    );
    const r = await engine.snapshot(site.url("/cookie-redirect", "site.test"));
    expect(r.redirect_count).toBe(1);
    expect(ids(r)).toEqual(["cookie-no-secure", "cookie-no-httponly", "cookie-no-samesite"]);
    expect(r.findings[0]?.message).toMatch(/^The cookie "session" is set without Secure/);
    expectConsistent(r);
  });

  it("a <meta name=referrer> counts as a Referrer-Policy; the field still says the header", async () => {
    const headers = { ...GOOD_HEADERS };
    delete headers["referrer-policy"];
    const html = (policy: string) =>
      `<!doctype html><html><head><meta name="referrer" content="${policy}"></head><body>x</body></html>`;
    site.route("/meta-referrer", respond.html(html("no-referrer"), headers));
    site.route("/meta-referrer-unsafe", respond.html(html("unsafe-url"), headers));
    const r = await engine.snapshot(site.url("/meta-referrer", "site.test"));
    expect(ids(r)).toEqual([]);
    expect(r.referrer_policy_present).toBe(false);
    expect(r.notes).toContain("Referrer-Policy header is missing.");
    expect(r.notes).toContain(
      'The page sets its referrer policy in a <meta name="referrer"> tag (no-referrer).',
    );
    const unsafe = await engine.snapshot(site.url("/meta-referrer-unsafe", "site.test"));
    expect(ids(unsafe)).toEqual(["referrer-policy-unsafe"]);
    expectConsistent(unsafe);
  });

  it("the cross_origin section: an isolated page, and a good page that opted into nothing", async () => {
    site.route(
      "/isolated",
      respond.text("isolated", {
        ...GOOD_HEADERS,
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-embedder-policy": "credentialless",
        "cross-origin-resource-policy": "same-site",
      }),
    );
    const r = await engine.snapshot(site.url("/isolated", "site.test"));
    expect(r.cross_origin).toEqual({
      coop: "same-origin",
      coep: "credentialless",
      corp: "same-site",
      cross_origin_isolated: true,
    });
    expect(r.findings).toEqual([]);
    const plain = await engine.snapshot(site.url("/", "site.test"));
    expect(plain.cross_origin).toMatchObject({ coop: "unsafe-none", cross_origin_isolated: false });
  });

  it("a cookie browsers refuse (over 4096 bytes) is skipped, the report still comes", async () => {
    site.route(
      "/cookie-huge",
      respond.text("huge", { ...GOOD_HEADERS, "set-cookie": `sid=${"x".repeat(5000)}` }),
    );
    const r = await engine.snapshot(site.url("/cookie-huge", "site.test"));
    expect(r.reachable).toBe(true);
    expect(r.findings).toEqual([]);
  });

  it("every id of the response judges is served by a case above", () => {
    const served = new Set([
      ...FINDING_CASES.flatMap((c) => c.ids),
      // test/snapshot/well-known.test.ts: each needs an origin's security.txt of its own.
      "security-txt-missing",
      "security-txt-expired",
      "security-txt-incomplete",
      "https-failed",
    ]);
    for (const d of RESPONSE_FINDINGS) expect(served, d.id).toContain(d.id);
  });
});
