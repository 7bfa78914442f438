/**
 * The `tls` section and its findings through the engine, from real HTTPS targets: the facts of
 * the verified handshake, TLS 1.0/1.1 asked with one forced handshake each, certificates close to
 * expiry, a 1024-bit RSA key, an http site's HTTPS probe, and the caps.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import type { SessionWaitOptions } from "../../src/snapshot/net/tls-sessions.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { GOOD_HEADERS, SECURITY_TXT } from "../fixtures/finding-cases.js";
import {
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueExpiredLeaf, issueLeaf, loadTestCa } from "../fixtures/tls.js";

const DAY_MS = 24 * 60 * 60 * 1000;
const NAMES = { dnsNames: ["site.test"], ips: [PUBLIC_HOST] };
/** What a server that still speaks TLS 1.0 and 1.1 accepts. */
const LEGACY_TLS = { minVersion: "TLSv1", ciphers: "DEFAULT@SECLEVEL=0" } as const;
const GOOD_ROUTES = { "/": respond.text("good", GOOD_HEADERS), ...SECURITY_TXT };

let dns: DnsFixture;
let modern: TargetServer;
let legacy: TargetServer;
let soon: TargetServer;
let month: TargetServer;
let weak: TargetServer;
let expired: TargetServer;
let plain: TargetServer;

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
  const inDays = (days: number) => new Date(Date.now() + days * DAY_MS);
  [modern, legacy, soon, month, weak, expired, plain] = await Promise.all([
    startHttpsTarget({ cert: await issueLeaf(ca, NAMES), routes: GOOD_ROUTES }),
    startHttpsTarget({ cert: await issueLeaf(ca, NAMES), routes: GOOD_ROUTES, tls: LEGACY_TLS }),
    startHttpsTarget({
      cert: await issueLeaf(ca, { ...NAMES, notAfter: inDays(10) }),
      routes: GOOD_ROUTES,
    }),
    startHttpsTarget({
      cert: await issueLeaf(ca, { ...NAMES, notAfter: inDays(25) }),
      routes: GOOD_ROUTES,
    }),
    startHttpsTarget({
      cert: await issueLeaf(ca, { ...NAMES, rsaBits: 1024 }),
      routes: GOOD_ROUTES,
    }),
    startHttpsTarget({ cert: await issueExpiredLeaf(ca, NAMES), routes: GOOD_ROUTES }),
    startHttpTarget({ routes: GOOD_ROUTES }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(
    [modern, legacy, soon, month, weak, expired, plain, dns].map((t) => t?.close()),
  );
});

/** One snapshot of `target` as site.test, checked against the report schema. */
async function snapshotOf(
  target: TargetServer,
  more: {
    httpsProbePort?: number;
    maxRequests?: number;
    ports?: number[];
    sessionWait?: SessionWaitOptions;
  } = {},
): Promise<SnapshotResult> {
  const engine = createTestEngine({
    dns,
    ports: more.ports ?? [target.port],
    ...(more.httpsProbePort !== undefined ? { httpsProbePort: more.httpsProbePort } : {}),
    ...(more.maxRequests !== undefined ? { maxRequests: more.maxRequests } : {}),
    ...(more.sessionWait ? { sessionWait: more.sessionWait } : {}),
  });
  try {
    return SnapshotResultSchema.parse(await engine.snapshot(target.url("/", "site.test")));
  } finally {
    await engine.close();
  }
}

const tlsIds = (r: SnapshotResult) => r.findings.filter((f) => f.check === "tls").map((f) => f.id);

describe("the tls section", () => {
  it("a modern server: the handshake's facts, TLS 1.0 and 1.1 refused, no finding", async () => {
    const r = await snapshotOf(modern);
    expect(r.tls).toMatchObject({
      protocol: "TLSv1.3",
      cipher: expect.stringMatching(/^TLS_AES_|^TLS_CHACHA20_/) as unknown,
      certificate: {
        subject: "CN=site.test",
        issuer: "CN=secsnap test CA",
        key_type: "ec",
        key_bits: 256,
      },
      tls1_0_accepted: false,
      tls1_1_accepted: false,
    });
    expect(r.tls?.certificate.days_left).toBeGreaterThanOrEqual(88);
    expect(r.tls?.certificate.days_left).toBeLessThanOrEqual(90);
    expect(r.findings).toEqual([]);
    // The legacy handshakes are no HTTP requests: the site saw the page (and the CORS probe's
    // request for it) and its files only.
    expect(modern.requests.map((q) => q.path).sort()).toEqual([
      "/",
      "/",
      "/.well-known/security.txt",
      "/robots.txt",
      "/sitemap.xml",
    ]);
  });

  it("a server that still speaks TLS 1.0 and 1.1: both true, tls-legacy-protocols (medium)", async () => {
    const r = await snapshotOf(legacy);
    expect(r.tls).toMatchObject({ tls1_0_accepted: true, tls1_1_accepted: true });
    // The main handshake is still the best both sides speak.
    expect(r.tls?.protocol).toBe("TLSv1.3");
    expect(tlsIds(r)).toEqual(["tls-legacy-protocols"]);
    expect(r.findings[0]).toMatchObject({ severity: "medium" });
    expect(r.notes).toContain(
      "The server still accepts TLS 1.0 and 1.1, deprecated protocols (RFC 8996).",
    );
  });

  it("a certificate expiring in 10 days is high; in 25 days, medium", async () => {
    const [r10, r25] = [await snapshotOf(soon), await snapshotOf(month)];
    expect(r10.tls?.certificate.days_left).toBe(9);
    expect(r10.findings).toMatchObject([{ id: "tls-cert-expiring-14d", severity: "high" }]);
    expect(r10.findings[0]?.message).toMatch(
      /expires in less than 14 days \(\d{4}-\d\d-\d\d, in 9 days\)/,
    );
    expect(r25.tls?.certificate.days_left).toBe(24);
    expect(r25.findings).toMatchObject([{ id: "tls-cert-expiring-30d", severity: "medium" }]);
  });

  it("a 1024-bit RSA key: key_type rsa, key_bits 1024, tls-weak-rsa-key (medium)", async () => {
    const r = await snapshotOf(weak);
    expect(r.tls?.certificate).toMatchObject({ key_type: "rsa", key_bits: 1024 });
    expect(r.findings).toMatchObject([{ id: "tls-weak-rsa-key", severity: "medium" }]);
  });

  it("no verified handshake (an expired certificate): tls is null, no TLS finding", async () => {
    const r = await snapshotOf(expired);
    expect(r.tls).toBeNull();
    expect(tlsIds(r)).toEqual([]);
  });

  it("an http site: the section describes its HTTPS probe's handshake; none without HTTPS", async () => {
    const withHttps = await snapshotOf(plain, {
      httpsProbePort: legacy.port,
      ports: [plain.port, legacy.port],
    });
    expect(withHttps.https_ok).toBe(true);
    expect(withHttps.tls).toMatchObject({
      protocol: "TLSv1.3",
      tls1_0_accepted: true,
      tls1_1_accepted: true,
    });
    expect(tlsIds(withHttps)).toEqual(["tls-legacy-protocols"]);
    const without = await snapshotOf(plain, {
      httpsProbePort: expired.port,
      ports: [plain.port, expired.port],
    });
    expect(without.https_ok).toBe(false);
    expect(without.tls).toBeNull();
  });

  it("the legacy ClientHellos wait until the snapshot's own handshakes are done", async () => {
    // Every connection makes its own full handshake at once (no session waited for); the
    // ClientHellos after the first (the files' and the CORS probe's) are held 300 ms. Legacy
    // handshakes started when the first one completes would be done long before them.
    const ca = await loadTestCa();
    let hellos = 0;
    const held = await startHttpsTarget({
      cert: await issueLeaf(ca, NAMES),
      routes: GOOD_ROUTES,
      tls: {
        ...LEGACY_TLS,
        SNICallback: (_name, answer) => {
          hellos += 1;
          if (hellos >= 2 && hellos <= 5) setTimeout(() => answer(null, undefined), 300);
          else answer(null, undefined);
        },
      },
    });
    try {
      const r = await snapshotOf(held, { sessionWait: { nearConnectMs: -1, maxWaitMs: 0 } });
      const protocols = held.handshakes;
      expect(r.tls).toMatchObject({ tls1_0_accepted: true, tls1_1_accepted: true });
      expect(protocols.slice(-2).sort()).toEqual(["TLSv1", "TLSv1.1"]);
      expect(protocols.slice(0, -2).every((p) => p === "TLSv1.3")).toBe(true);
      expect(protocols).toHaveLength(7);
    } finally {
      await held.close();
    }
  });

  it("our request cap reached: the legacy handshakes are not made, null and a note, no finding", async () => {
    // The page and its three files use the four requests; the legacy handshakes come last.
    const r = await snapshotOf(legacy, { maxRequests: 4 });
    expect(r.security_txt_present).toBe(true);
    expect(r.tls).toMatchObject({
      protocol: "TLSv1.3",
      tls1_0_accepted: null,
      tls1_1_accepted: null,
    });
    expect(tlsIds(r)).toEqual([]);
    expect(r.notes).toContain(
      "Whether the server still accepts TLS 1.0 and 1.1 could not be checked: our limit of 4 requests per snapshot was reached.",
    );
  });

  it("legacy handshakes the server answers: no note about them", async () => {
    const r = await snapshotOf(legacy);
    expect(r.tls).toMatchObject({ tls1_0_accepted: true, tls1_1_accepted: true });
    expect(r.notes.filter((n) => n.startsWith("Whether the server still accepts"))).toEqual([]);
  });
});
