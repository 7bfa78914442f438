/**
 * TLS session resumption inside one snapshot (docs/snapshot-engine.md "TLS handshakes"), seen
 * from real TLS servers that record every handshake: the connections a snapshot opens together
 * make one full handshake and resume it; a session never crosses names, pinned addresses, ports
 * or snapshots; and every certificate problem is reported exactly as with full handshakes only.
 */
import { randomBytes } from "node:crypto";
import { request } from "undici";
import type { Dispatcher } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createAddressPolicy } from "../../../src/snapshot/net/address-policy.js";
import { findConnectPhase } from "../../../src/snapshot/net/dial-errors.js";
import { createTargetDispatcher } from "../../../src/snapshot/net/dialer.js";
import type { TargetDispatcherOptions } from "../../../src/snapshot/net/dialer.js";
import { errorCodes } from "../../../src/snapshot/net/error-chain.js";
import { createSnapshotEngine } from "../../../src/snapshot/index.js";
import type { SnapshotEngine, SnapshotResult } from "../../../src/snapshot/index.js";
import { createResolver, shareAnswers } from "../../../src/snapshot/net/resolver.js";
import type { SessionWaitOptions } from "../../../src/snapshot/net/tls-sessions.js";
import { startDnsServer } from "../../fixtures/dns-server.js";
import type { DnsFixture } from "../../fixtures/dns-server.js";
import { startRenegotiatingServer } from "../../fixtures/hostile-network.js";
import { PUBLIC_CIDRS, PUBLIC_HOST, PUBLIC_HOST_2, respond } from "../../fixtures/targets.js";
import { startHandshakeCountingSite } from "../../fixtures/tls-handshakes.js";
import type { HandshakeCountingSite } from "../../fixtures/tls-handshakes.js";
import { issueExpiredLeaf, issueLeaf, loadTestCa, selfSignedLeaf } from "../../fixtures/tls.js";
import type { TestCa, TestLeaf } from "../../fixtures/tls.js";

/** A near network: connections wait for the session of the full handshake under way. */
const WAIT: SessionWaitOptions = { nearConnectMs: Infinity, maxWaitMs: 60_000 };
/** A far network: nobody waits, every connection started together makes a full handshake. */
const NO_WAIT: SessionWaitOptions = { nearConnectMs: -1, maxWaitMs: 60_000 };

const policy = createAddressPolicy(PUBLIC_CIDRS);
let dns: DnsFixture;
let ca: TestCa;
let leafA: TestLeaf;
const sites: HandshakeCountingSite[] = [];
const dispatchers: Dispatcher[] = [];
const engines: SnapshotEngine[] = [];

beforeAll(async () => {
  ca = await loadTestCa();
  leafA = await issueLeaf(ca, { dnsNames: ["a.test"] });
  dns = await startDnsServer({
    "a.test": { A: [PUBLIC_HOST] },
    "b.test": { A: [PUBLIC_HOST] },
    "site.test": { A: [PUBLIC_HOST] },
  });
});

afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all(sites.splice(0).map((s) => s.close()));
});

afterAll(async () => {
  await dns?.close();
});

async function site(opts: Parameters<typeof startHandshakeCountingSite>[0]) {
  const s = await startHandshakeCountingSite(opts);
  sites.push(s);
  return s;
}

function dispatcher(
  ports: number[],
  sessionWait: SessionWaitOptions,
  extra: Partial<TargetDispatcherOptions> = {},
): Dispatcher {
  const d = createTargetDispatcher({
    // One answer for connections made together, as in the engine: they are dialled at once.
    resolve: shareAnswers(createResolver([dns.address], { timeoutMs: 2_000 })),
    isBlockedAddress: (ip) => policy.isBlocked(ip),
    allowedPorts: new Set(ports),
    connectTimeoutMs: 10_000,
    sessionWait,
    ...extra,
  });
  dispatchers.push(d);
  return d;
}

async function get(url: string, d: Dispatcher): Promise<number> {
  const res = await request(url, { dispatcher: d });
  await res.body.dump();
  return res.statusCode;
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the request to fail");
}

const full = (s: HandshakeCountingSite) => s.handshakes.filter((h) => !h.resumed).length;
const resumed = (s: HandshakeCountingSite) => s.handshakes.filter((h) => h.resumed).length;
/** Every answer closes its connection, so each request makes a handshake of its own. */
const closing = { "/": respond.text("one connection each", { connection: "close" }) };

describe("connections of one snapshot share one full handshake", () => {
  it("four connections made together: one full handshake, three resume it", async () => {
    const s = await site({ cert: leafA, delayMs: 100 });
    const d = dispatcher([s.port], WAIT);
    const url = `https://a.test:${s.port}/robots.txt`;
    const statuses = await Promise.all([1, 2, 3, 4].map(() => get(url, d)));
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(s.handshakes).toHaveLength(4);
    expect(full(s)).toBe(1);
    expect(resumed(s)).toBe(3);
  });

  it("on a far network nobody waits: each connection makes its own full handshake", async () => {
    const s = await site({ cert: leafA, delayMs: 100 });
    const d = dispatcher([s.port], NO_WAIT);
    const url = `https://a.test:${s.port}/robots.txt`;
    await Promise.all([1, 2, 3, 4].map(() => get(url, d)));
    expect(s.handshakes).toHaveLength(4);
    expect(full(s)).toBe(4);
  });

  it("a later connection resumes without waiting for anything", async () => {
    const s = await site({ cert: leafA, routes: closing });
    const d = dispatcher([s.port], NO_WAIT);
    expect(await get(`https://a.test:${s.port}/`, d)).toBe(200);
    expect(await get(`https://a.test:${s.port}/`, d)).toBe(200);
    expect(s.handshakes.map((h) => h.resumed)).toEqual([false, true]);
  });
});

describe("a session is never offered where it must not be", () => {
  it("not to another name on the same address: its certificate is checked in full", async () => {
    // The server would take a.test's session for b.test (and a resumed handshake carries no
    // certificate to check the name against): only the client can refuse to offer it.
    const s = await site({ cert: leafA, routes: closing });
    const d = dispatcher([s.port], WAIT);
    expect(await get(`https://a.test:${s.port}/`, d)).toBe(200);
    const err = await failure(get(`https://b.test:${s.port}/`, d));
    expect(errorCodes(err)[0]).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
    expect(findConnectPhase(err)).toBe("tls");
    expect(s.handshakes.filter((h) => h.servername === "b.test" && h.resumed)).toEqual([]);
  });

  it("not to another pinned address or port, though those servers would take it", async () => {
    const ticketKeys = randomBytes(48);
    const first = await site({ cert: leafA, routes: closing, ticketKeys });
    // The same port on the other address, and another port on the first: all one site to a
    // client that keyed sessions by name only, and all would take each other's tickets.
    const otherAddress = await site({
      cert: leafA,
      routes: closing,
      ticketKeys,
      host: PUBLIC_HOST_2,
      port: first.port,
    });
    const otherPort = await site({ cert: leafA, routes: closing, ticketKeys });
    // a.test resolves to PUBLIC_HOST, then to PUBLIC_HOST_2, then to PUBLIC_HOST again.
    const answers = [[PUBLIC_HOST], [PUBLIC_HOST_2], [PUBLIC_HOST]];
    const d = dispatcher([first.port, otherPort.port], WAIT, {
      resolve: () => Promise.resolve(answers.shift() ?? [PUBLIC_HOST]),
    });
    const url = `https://a.test:${first.port}/`;
    for (let i = 0; i < 3; i++) expect(await get(url, d)).toBe(200);
    expect(await get(`https://a.test:${otherPort.port}/`, d)).toBe(200);
    expect(otherAddress.handshakes).toEqual([
      { servername: "a.test", resumed: false, localAddress: PUBLIC_HOST_2 },
    ]);
    expect(otherPort.handshakes.map((h) => h.resumed)).toEqual([false]);
    // Back on the first address and port its own session is taken, so the others would have.
    expect(first.handshakes.map((h) => h.resumed)).toEqual([false, true]);
  });

  it("when the full handshake fails its certificate, every waiting connection checks its own", async () => {
    const expired = await issueExpiredLeaf(ca, { dnsNames: ["a.test"] });
    const s = await site({ cert: expired, delayMs: 100 });
    // Waiting up to 60 s: a waiter not released at once would end in the 10 s connect bound.
    const d = dispatcher([s.port], WAIT);
    const url = `https://a.test:${s.port}/robots.txt`;
    const errs = await Promise.all([1, 2, 3, 4].map(() => failure(get(url, d))));
    for (const err of errs) {
      expect(errorCodes(err)[0]).toBe("CERT_HAS_EXPIRED");
      expect(findConnectPhase(err)).toBe("tls");
    }
    expect(resumed(s)).toBe(0);
  });
});

describe("snapshots: fewer full handshakes, the same reports", () => {
  function engine(ports: number[], sessionWait: SessionWaitOptions): SnapshotEngine {
    const e = createSnapshotEngine({
      timeoutMs: 5000,
      maxRedirects: 10,
      allowedPorts: new Set(ports),
      allowCidrs: PUBLIC_CIDRS,
      dnsServers: [dns.address],
      sessionWait,
    });
    engines.push(e);
    return e;
  }
  const comparable = (r: SnapshotResult) => ({ ...r, fetched_at: "" });

  it("a healthy snapshot: the main request's full handshake, the four probes resume it", async () => {
    const s = await site({ cert: await issueLeaf(ca, { dnsNames: ["site.test"] }) });
    const r = await engine([s.port], WAIT).snapshot(`https://site.test:${s.port}/`);
    expect(r).toMatchObject({ reachable: true, https_ok: true, final_status_code: 200 });
    expect(r.checks, JSON.stringify(r.notes)).toMatchObject({
      https: true,
      security_txt: true,
      robots_txt: true,
      sitemap_xml: true,
    });
    // The page, the three files and the CORS probe's request for the page.
    expect(s.handshakes).toHaveLength(5);
    expect(full(s)).toBe(1);
    expect(s.requests.find((q) => q.path === "/")?.resumed).toBe(false);
    expect(s.requests.filter((q) => q.path !== "/").every((q) => q.resumed)).toBe(true);
  });

  it("expired, self-signed, wrong-name or fine: the report is the one full handshakes give", async () => {
    const name = { dnsNames: ["site.test"] };
    const cases: [string, TestLeaf][] = [
      ["expired", await issueExpiredLeaf(ca, name)],
      ["self-signed", await selfSignedLeaf(name)],
      ["wrong name", await issueLeaf(ca, { dnsNames: ["elsewhere.test"] })],
      ["fine", await issueLeaf(ca, name)],
    ];
    for (const [what, cert] of cases) {
      const s = await site({ cert });
      const url = `https://site.test:${s.port}/`;
      const resuming = await engine([s.port], WAIT).snapshot(url);
      const resumedHere = resumed(s);
      const fullOnly = await engine([s.port], NO_WAIT).snapshot(url);
      expect(comparable(resuming), what).toEqual(comparable(fullOnly));
      // Only a verified handshake leaves a session to resume.
      expect(resumedHere, what).toBe(what === "fine" ? 4 : 0);
    }
  });

  it("a certificate replaced by an expired one between two snapshots shows in the second", async () => {
    const s = await site({ cert: await issueLeaf(ca, { dnsNames: ["site.test"] }) });
    const e = engine([s.port], WAIT);
    const url = `https://site.test:${s.port}/`;
    expect((await e.snapshot(url)).https_ok).toBe(true);
    const before = s.handshakes.length;
    // Same ticket keys: the server would still resume a session of the first snapshot.
    s.setCert(await issueExpiredLeaf(ca, { dnsNames: ["site.test"] }));
    const r = await e.snapshot(url);
    expect(r).toMatchObject({ reachable: false, https_ok: false });
    expect(r.notes.join(" ")).toContain("the TLS certificate has expired");
    expect(s.handshakes.slice(before).filter((h) => h.resumed)).toEqual([]);
  });

  it("a renegotiating server: one full handshake, the same TLS failure reported", async () => {
    const reneg = await startRenegotiatingServer({
      host: PUBLIC_HOST,
      cert: await issueLeaf(ca, { dnsNames: ["site.test"] }),
    });
    try {
      const r = await engine([reneg.port], WAIT).snapshot(`https://site.test:${reneg.port}/`);
      expect(r).toMatchObject({ reachable: false, https_ok: false });
      expect(r.notes).toContain(
        `HTTPS does not work (https://site.test:${reneg.port}/): the TLS handshake failed (ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE).`,
      );
      // The main request's full handshake; the probes resume it, or are cancelled first when the
      // main request has already failed and the snapshot ended.
      expect(reneg.connections.count).toBeLessThanOrEqual(4);
      expect(reneg.connections.count - reneg.connections.resumed).toBe(1);
      expect(reneg.renegotiations.completed).toBe(0);
    } finally {
      await reneg.close();
    }
  });
});
