/**
 * IPv6 targets end to end. docs/contract.md §5.1 blocks ::1 like 127.0.0.1, so these tests open
 * exactly `::1/128` through allowCidrs (as an operator would open one range with
 * SNAPSHOT_ALLOW_CIDRS) and check that everything the engine dials (the page, redirects, the
 * well-known probes, the HTTPS probe) works over IPv6, by literal and by an AAAA-only name, with
 * the certificate checked against the name; and that opening ::1 opens nothing else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import { SnapshotError } from "../../src/snapshot/index.js";
import { startCanary, type Canary } from "../fixtures/canary.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_CIDRS,
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

const V6 = "::1";
const V6_URL_HOST = `[${V6}]`;
const HEADERS = { "x-frame-options": "DENY", "x-content-type-options": "nosniff" };

let dns: DnsFixture;
let plain: TargetServer;
let secure: TargetServer;
let v4site: TargetServer;
let canary: Canary;
let engine: SnapshotEngine;
let closedEngine: SnapshotEngine;

/** The SnapshotError's error_type, or a failure if the snapshot succeeded. */
async function errorTypeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => new Error("expected a SnapshotError"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SnapshotError);
  return (err as SnapshotError).errorType;
}

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer({
    "v6only.test": { AAAA: [V6] },
    "dual.test": { A: [PUBLIC_HOST], AAAA: [V6] },
    "mapped.test": { AAAA: ["::ffff:127.0.0.1"] },
  });
  plain = await startHttpTarget({
    host: V6,
    routes: {
      "/": respond.text("over ipv6", HEADERS),
      "/robots.txt": respond.text("User-agent: *\nDisallow:\n"),
    },
  });
  secure = await startHttpsTarget({
    host: V6,
    cert: await issueLeaf(ca, { dnsNames: ["v6only.test", "dual.test"], ips: [V6] }),
    routes: {
      "/": respond.text("secure over ipv6", {
        ...HEADERS,
        "strict-transport-security": "max-age=63072000",
      }),
      "/sitemap.xml": respond.status(
        200,
        { "content-type": "application/xml" },
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>',
      ),
    },
  });
  plain.route("/hop", respond.redirect(secure.url("/", "v6only.test")));
  v4site = await startHttpTarget({
    routes: { "/to-v6": respond.redirect(plain.url("/hop", V6_URL_HOST), 301) },
  });
  // Listens on 127.0.0.1 (blocked), the address ::ffff:127.0.0.1 maps to.
  canary = await startCanary("127.0.0.1", secure.port);
  const ports = [plain.port, secure.port, v4site.port];
  const opened = [...PUBLIC_CIDRS, `${V6}/128`];
  engine = createTestEngine({ dns, ports, httpsProbePort: secure.port, allowCidrs: opened });
  closedEngine = createTestEngine({ dns, ports, httpsProbePort: secure.port });
});

afterAll(async () => {
  await Promise.all([engine, closedEngine].map((e) => e.close()));
  await Promise.all([plain, secure, v4site, canary, dns].map((s) => s.close()));
});

describe("IPv6 targets, with ::1/128 opened", () => {
  it("an IPv6 literal: the page, the well-known probes and the HTTPS probe all go over IPv6", async () => {
    const before = plain.requests.length;
    const result = await engine.snapshot(plain.url("/", V6_URL_HOST));
    expect(result).toMatchObject({
      normalized_url: `http://[::1]:${plain.port}/`,
      final_url: `http://[::1]:${plain.port}/`,
      reachable: true,
      final_status_code: 200,
      redirect_count: 0,
      x_frame_options_present: true,
      x_content_type_options_present: true,
      robots_txt_present: true,
      security_txt_present: false,
      // The probe of https://[::1]/ (on the HTTPS fixture's port) met a certificate for ::1.
      https_ok: true,
    });
    const paths = plain.requests.slice(before).map((r) => r.path);
    expect(paths).toContain("/");
    expect(paths).toContain("/robots.txt");
    expect(paths).toContain("/.well-known/security.txt");
  });

  it("an AAAA-only name over https: the certificate is checked against the name", async () => {
    const result = await engine.snapshot(secure.url("/", "v6only.test"));
    expect(result).toMatchObject({
      final_url: `https://v6only.test:${secure.port}/`,
      reachable: true,
      final_status_code: 200,
      https_ok: true,
      hsts_present: true,
      sitemap_xml_present: true,
    });
  });

  it("redirects cross families: IPv4 site → IPv6 literal → AAAA-only name over https", async () => {
    const result = await engine.snapshot(v4site.url("/to-v6"));
    expect(result).toMatchObject({
      reachable: true,
      redirect_count: 2,
      final_url: `https://v6only.test:${secure.port}/`,
      final_status_code: 200,
      https_ok: true,
    });
  });

  it("a name with both families is dialled over IPv4 first", async () => {
    // A listener on [::1] at the IPv4 site's port: dialling the AAAA answer would reach it.
    const v6side = await startCanary(V6, v4site.port);
    try {
      v4site.route("/dual", respond.text("over ipv4"));
      const result = await engine.snapshot(`http://dual.test:${v4site.port}/dual`);
      expect(result).toMatchObject({ reachable: true, final_status_code: 200 });
      expect(v4site.requests.map((r) => r.path)).toContain("/dual");
      expect(v6side.connections).toEqual([]);
    } finally {
      await v6side.close();
    }
  });

  it("opening ::1 opens nothing else: the IPv4-mapped loopback stays refused", async () => {
    expect(await errorTypeOf(engine.snapshot(`http://mapped.test:${secure.port}/`))).toBe("ssrf");
    expect(await errorTypeOf(engine.snapshot(`http://[::ffff:127.0.0.1]:${secure.port}/`))).toBe(
      "ssrf",
    );
    expect(canary.connections).toEqual([]);
  });
});

describe("IPv6 targets, with ::1 left blocked (the default)", () => {
  it("the literal and the AAAA-only name are refused before any connection", async () => {
    const before = plain.requests.length + secure.requests.length;
    expect(await errorTypeOf(closedEngine.snapshot(plain.url("/", V6_URL_HOST)))).toBe("ssrf");
    expect(await errorTypeOf(closedEngine.snapshot(secure.url("/", "v6only.test")))).toBe("ssrf");
    expect(plain.requests.length + secure.requests.length).toBe(before);
  });

  it("a redirect into IPv6 loopback is refused without reaching it", async () => {
    const before = plain.requests.length;
    expect(await errorTypeOf(closedEngine.snapshot(v4site.url("/to-v6")))).toBe("ssrf");
    expect(plain.requests.length).toBe(before);
  });
});
