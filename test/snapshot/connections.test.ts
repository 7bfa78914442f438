/**
 * What a snapshot leaves behind and what a TLS server can make it do (docs/security.md,
 * "Hostile targets and payers"): a site asking to keep idle connections for ten minutes, and a
 * TLS 1.2 server renegotiating in a loop. Real servers from test/fixtures/hostile-network.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { startLingeringTarget, startRenegotiatingServer } from "../fixtures/hostile-network.js";
import type { LingeringTarget, RenegotiatingServer } from "../fixtures/hostile-network.js";
import { PUBLIC_HOST, PUBLIC_HOST_2, createTestEngine } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

const TIMEOUT_MS = 4000;
let dns: DnsFixture;
let lingering: LingeringTarget;
let renegotiating: RenegotiatingServer;
let engine: SnapshotEngine;

beforeAll(async () => {
  dns = await startDnsServer({
    "linger.test": { A: [PUBLIC_HOST] },
    "reneg.test": { A: [PUBLIC_HOST_2] },
  });
  lingering = await startLingeringTarget(PUBLIC_HOST);
  const cert = await issueLeaf(await loadTestCa(), { dnsNames: ["reneg.test"] });
  renegotiating = await startRenegotiatingServer({ host: PUBLIC_HOST_2, cert });
  engine = createTestEngine({
    dns,
    ports: [lingering.port, renegotiating.port],
    httpsProbePort: renegotiating.port,
    timeoutMs: TIMEOUT_MS,
  });
});

afterAll(async () => {
  await engine?.close();
  await Promise.all([dns?.close(), lingering?.close(), renegotiating?.close()]);
});

async function until(cond: () => Promise<boolean>, withinMs: number): Promise<boolean> {
  const end = performance.now() + withinMs;
  while (performance.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

describe("a snapshot's connections end with it", () => {
  it("Keep-Alive: timeout=600 leaves no idle connection open after the snapshots", async () => {
    const url = `http://linger.test:${lingering.port}/`;
    const results = await Promise.all(Array.from({ length: 20 }, () => engine.snapshot(url)));
    for (const r of results) expect(r).toMatchObject({ reachable: true, final_status_code: 200 });
    expect(lingering.requests.count).toBeGreaterThanOrEqual(20 * 4);
    // Well before any keep-alive timer could have fired on either side.
    const allClosed = await until(async () => (await lingering.openConnections()) === 0, 2000);
    expect(await lingering.openConnections()).toBe(0);
    expect(allClosed).toBe(true);
  });
});

describe("TLS renegotiation", () => {
  it("a server asking to renegotiate in a loop gets none; the report stays right and cheap", async () => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await engine.snapshot(`https://reneg.test:${renegotiating.port}/`);
    const ms = performance.now() - t0;
    // A connection kept after the snapshot would go on renegotiating while idle.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const cpu = process.cpuUsage(cpu0);
    expect(SnapshotResultSchema.parse(r)).toEqual(r);
    expect(renegotiating.connections.count).toBeGreaterThan(0);
    expect(renegotiating.renegotiations.completed).toBeLessThanOrEqual(1);
    // The count above is the proof; this bounds what the whole exchange (client and server both
    // live in this process) may cost, a few handshakes' worth.
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(500);
    // Declined with a no_renegotiation alert, the server ends the exchange with a fatal
    // handshake_failure before answering: HTTPS fails with a TLS note, and nothing waits for
    // the deadline although the server keeps the TCP connection open.
    expect(r).toMatchObject({ reachable: false, final_status_code: null, https_ok: false });
    expect(r.notes).toContain(
      `HTTPS does not work (https://reneg.test:${renegotiating.port}/): the TLS handshake failed (ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE).`,
    );
    expect(renegotiating.renegotiations.refused).toBeGreaterThan(0);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  });
});
