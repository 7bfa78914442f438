/**
 * What the report says about headers and HTTPS, and its shape: header edge cases, certificate
 * failures, the port-443 probe for http final URLs, notes order, field and checks order,
 * fetched_at.
 */
import type { OutgoingHttpHeaders } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { CHECK_NAMES } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_HOST,
  closedPort,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { RouteHandler, TargetServer } from "../fixtures/targets.js";
import {
  issueExpiredLeaf,
  issueLeaf,
  issueUntrustedLeaf,
  loadTestCa,
  selfSignedLeaf,
} from "../fixtures/tls.js";

const ALL_SIX: OutgoingHttpHeaders = {
  "strict-transport-security": "max-age=63072000",
  "content-security-policy": "default-src 'self'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "permissions-policy": "camera=()",
};

const HEADER_NOTES = [
  "Strict-Transport-Security (HSTS) header is missing.",
  "Content-Security-Policy (CSP) header is missing.",
  "X-Frame-Options header is missing.",
  "X-Content-Type-Options header is missing.",
  "Referrer-Policy header is missing.",
  "Permissions-Policy header is missing.",
];

const FIELD_ORDER = [
  "requested_url",
  "normalized_url",
  "final_url",
  "fetched_at",
  "reachable",
  "final_status_code",
  "redirect_count",
  "https_ok",
  "hsts_present",
  "csp_present",
  "x_frame_options_present",
  "x_content_type_options_present",
  "referrer_policy_present",
  "permissions_policy_present",
  "security_txt_present",
  "robots_txt_present",
  "sitemap_xml_present",
  "notes",
  "checks",
  "findings",
  "score",
  "grade",
  // docs/contract.md §9: the sections rules add, after the grade.
  "tls",
  "dns",
  "cross_origin",
];

/** Sends headers exactly as given: a flat [name, value, name, value, …] list keeps duplicates. */
const raw =
  (pairs: string[], status = 200): RouteHandler =>
  (_req, res) => {
    res.writeHead(status, pairs);
    res.end("page");
  };

let dns: DnsFixture;
let site: TargetServer;
let secure: TargetServer;
const broken: Record<string, TargetServer> = {};
let engine: SnapshotEngine;
let refusedProbeEngine: SnapshotEngine;
let expiredProbeEngine: SnapshotEngine;

beforeAll(async () => {
  const ca = await loadTestCa();
  const names = { dnsNames: ["site.test"], ips: [PUBLIC_HOST] };
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
  site = await startHttpTarget({ routes: { "/": respond.text("plain") } });
  secure = await startHttpsTarget({
    cert: await issueLeaf(ca, names),
    routes: { "/": respond.text("secure", ALL_SIX), "/robots.txt": respond.text("User-agent: *") },
  });
  broken.expired = await startHttpsTarget({ cert: await issueExpiredLeaf(ca, names) });
  broken.untrusted = await startHttpsTarget({ cert: await issueUntrustedLeaf(names) });
  broken.selfSigned = await startHttpsTarget({ cert: await selfSignedLeaf(names) });
  broken.wrongName = await startHttpsTarget({
    cert: await issueLeaf(ca, { dnsNames: ["elsewhere.test"] }),
  });
  const closed = await closedPort();
  const ports = [site.port, secure.port, closed, ...Object.values(broken).map((s) => s.port)];
  engine = createTestEngine({ dns, ports, httpsProbePort: secure.port });
  refusedProbeEngine = createTestEngine({ dns, ports, httpsProbePort: closed });
  expiredProbeEngine = createTestEngine({
    dns,
    ports,
    httpsProbePort: (broken.expired as TargetServer).port,
  });
});

afterAll(async () => {
  await Promise.all([engine, refusedProbeEngine, expiredProbeEngine].map((e) => e.close()));
  await Promise.all([site, secure, dns, ...Object.values(broken)].map((s) => s.close()));
});

async function headersOf(pairs: string[]): Promise<SnapshotResult> {
  const path = `/h${Math.random().toString(36).slice(2)}`;
  site.route(path, raw(pairs));
  return engine.snapshot(site.url(path, "site.test"));
}

describe("security headers (final response only)", () => {
  it("all six present: all true, no header note", async () => {
    const r = await engine.snapshot(secure.url("/", "site.test"));
    expect(r).toMatchObject({
      hsts_present: true,
      csp_present: true,
      x_frame_options_present: true,
      x_content_type_options_present: true,
      referrer_policy_present: true,
      permissions_policy_present: true,
    });
    for (const n of HEADER_NOTES) expect(r.notes).not.toContain(n);
  });

  it.each<[string, string[], boolean]>([
    ["absent", [], false],
    ["empty", ["X-Frame-Options", ""], false],
    ["whitespace only", ["X-Frame-Options", "   "], false],
    ["duplicated, first empty", ["X-Frame-Options", "", "x-frame-options", "DENY"], true],
    ["duplicated, both blank", ["X-Frame-Options", "", "X-Frame-Options", " \t"], false],
    ["present with odd name case", ["x-FRAME-options", "SAMEORIGIN"], true],
  ])("X-Frame-Options %s → %s", async (_what, pairs, expected) => {
    const r = await headersOf(pairs);
    expect(r.x_frame_options_present).toBe(expected);
    expect(r.checks.x_frame_options).toBe(expected);
    expect(r.notes.includes("X-Frame-Options header is missing.")).toBe(!expected);
  });

  it("headers on an intermediate redirect do not count", async () => {
    site.route("/redir-with-headers", respond.redirect("/bare", 302, ALL_SIX));
    site.route("/bare", respond.text("no headers"));
    const r = await engine.snapshot(site.url("/redir-with-headers", "site.test"));
    expect(r.redirect_count).toBe(1);
    expect(r.csp_present).toBe(false);
    expect(r.hsts_present).toBe(false);
    expect(r.notes.slice(0, 6)).toEqual(HEADER_NOTES);
  });

  it("HSTS over plain HTTP counts as present but gets a note", async () => {
    site.route("/hsts", respond.text("x", { "strict-transport-security": "max-age=1" }));
    const r = await engine.snapshot(site.url("/hsts", "site.test"));
    expect(r.hsts_present).toBe(true);
    expect(r.notes).toContain(
      "Strict-Transport-Security is sent over plain HTTP, where browsers ignore it: the site has no HSTS.",
    );
  });

  it("notes: missing headers first, in the fixed order, then the other findings", async () => {
    site.route("/no-headers", respond.text("x"));
    const r = await engine.snapshot(site.url("/no-headers", "site.test"));
    expect(r.notes.slice(0, 6)).toEqual(HEADER_NOTES);
    expect(r.notes.slice(6)).toEqual([
      `The site ends on plain HTTP (${site.url("/no-headers", "site.test")}) although HTTPS works; it should redirect to HTTPS.`,
      "security.txt is missing (HTTP 404).",
      "robots.txt is missing (HTTP 404).",
      "sitemap.xml is missing (HTTP 404).",
    ]);
  });
});

describe("https_ok", () => {
  it("an https final URL that answered is the proof", async () => {
    const r = await engine.snapshot(secure.url("/", "site.test"));
    expect(r.https_ok).toBe(true);
    expect(r.checks.https).toBe(true);
    expect(r.notes.join(" ")).not.toMatch(/HTTPS/);
  });

  it.each([
    ["expired", /the TLS certificate has expired/],
    ["untrusted", /not issued by a trusted certificate authority/],
    ["selfSigned", /the TLS certificate is self-signed/],
    ["wrongName", /does not match the host name/],
  ])("a %s certificate: https_ok false, reachable false, a note says why", async (which, why) => {
    const r = await engine.snapshot((broken[which] as TargetServer).url("/", "site.test"));
    expect(r).toMatchObject({ https_ok: false, reachable: false, final_status_code: null });
    expect(r.checks.https).toBe(false);
    expect(r.notes.find((n) => n.startsWith("HTTPS does not work"))).toMatch(why);
  });

  it("a redirect from http to an https hop with a bad certificate", async () => {
    site.route(
      "/to-expired",
      respond.redirect((broken.expired as TargetServer).url("/", "site.test")),
    );
    const r = await engine.snapshot(site.url("/to-expired", "site.test"));
    expect(r).toMatchObject({ https_ok: false, reachable: false, redirect_count: 1 });
    expect(r.notes.join(" ")).toMatch(/certificate has expired/);
  });

  it("an http final URL: the probe of https://<host>/ that answers makes it true", async () => {
    const before = secure.requests.length;
    const r = await engine.snapshot(site.url("/", "site.test"));
    expect(r.final_url.startsWith("http:")).toBe(true);
    expect(r.https_ok).toBe(true);
    expect(secure.requests.slice(before).some((q) => q.path === "/")).toBe(true);
  });

  it("an http final URL whose probe is refused: false with a note", async () => {
    const r = await refusedProbeEngine.snapshot(site.url("/", "site.test"));
    expect(r.reachable).toBe(true);
    expect(r.https_ok).toBe(false);
    expect(r.notes.join(" ")).toMatch(
      /HTTPS does not work \(https:\/\/site\.test:\d+\/\): the connection was refused\./,
    );
  });

  it("an http final URL whose probe meets an expired certificate: false with a note", async () => {
    const r = await expiredProbeEngine.snapshot(site.url("/", "site.test"));
    expect(r.https_ok).toBe(false);
    expect(r.notes.join(" ")).toMatch(/certificate has expired/);
  });
});

describe("report shape", () => {
  it("every field, in docs/contract.md §2.1 order; checks with all ten keys in order, equal to the fields", async () => {
    const r = await engine.snapshot(secure.url("/", "site.test"));
    expect(Object.keys(r)).toEqual(FIELD_ORDER);
    expect(Object.keys(r.checks)).toEqual([...CHECK_NAMES]);
    expect(SnapshotResultSchema.parse(r)).toEqual(r);
    expect(r.checks).toEqual({
      https: r.https_ok,
      hsts: r.hsts_present,
      csp: r.csp_present,
      x_frame_options: r.x_frame_options_present,
      x_content_type_options: r.x_content_type_options_present,
      referrer_policy: r.referrer_policy_present,
      permissions_policy: r.permissions_policy_present,
      security_txt: r.security_txt_present,
      robots_txt: r.robots_txt_present,
      sitemap_xml: r.sitemap_xml_present,
    });
  });

  it("the same shape when not reachable", async () => {
    const r = await engine.snapshot((broken.expired as TargetServer).url("/", "site.test"));
    expect(Object.keys(r)).toEqual(FIELD_ORDER);
    expect(Object.keys(r.checks)).toEqual([...CHECK_NAMES]);
    expect(SnapshotResultSchema.parse(r)).toEqual(r);
  });

  it("fetched_at is toISOString() form, taken when the fetch starts", async () => {
    let arrived = 0;
    site.route("/when", (req, res) => {
      arrived = Date.now();
      respond.text("x")(req, res);
    });
    const before = Date.now();
    const r = await engine.snapshot(site.url("/when", "site.test"));
    expect(r.fetched_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(new Date(r.fetched_at).toISOString()).toBe(r.fetched_at);
    const at = Date.parse(r.fetched_at);
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThanOrEqual(arrived);
  });

  it("requested_url is the input as given; normalized_url the WHATWG form without fragment", async () => {
    const input = `  HTTP://SITE.test:${site.port}#top `;
    const r = await engine.snapshot(input);
    expect(r.requested_url).toBe(input);
    expect(r.normalized_url).toBe(`http://site.test:${site.port}/`);
  });

  it("final_url is the URL requested: a fragment (of the input or of a Location) is never part of it", async () => {
    const direct = await engine.snapshot(`http://site.test:${site.port}/#top`);
    const empty = await engine.snapshot(`http://site.test:${site.port}/#`);
    expect(empty.final_url).toBe(`http://site.test:${site.port}/`);
    expect(direct.final_url).toBe(`http://site.test:${site.port}/`);
    site.route("/to-frag", respond.redirect("/#section"));
    const redirected = await engine.snapshot(`http://site.test:${site.port}/to-frag#x`);
    expect(redirected.redirect_count).toBe(1);
    expect(redirected.final_url).toBe(`http://site.test:${site.port}/`);
  });
});
