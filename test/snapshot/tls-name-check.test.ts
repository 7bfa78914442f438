import { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

// Installed before the engine is loaded (so its modules are imported below, not above): the
// dialer keeps the prototype's method it finds then.
const peerCertificate = vi.spyOn(TLSSocket.prototype, "getPeerCertificate");
const { PUBLIC_HOST, createTestEngine, respond, startHttpsTarget } =
  await import("../fixtures/targets.js");
const { SnapshotError } = await import("../../src/snapshot/index.js");

/**
 * Node checks the server's name after each full handshake with `getPeerCertificate(true)`, which
 * builds the whole chain as objects; the dialer hands that check the leaf alone (OpenSSL has
 * verified the chain). What must hold: no handshake builds the chain, and names are still checked.
 */
describe("the name check after a TLS handshake reads the leaf alone", () => {
  let dns: DnsFixture;
  let target: TargetServer;

  beforeAll(async () => {
    const leaf = await issueLeaf(await loadTestCa(), { dnsNames: ["site.test"] });
    target = await startHttpsTarget({ cert: leaf, routes: { "*": respond.status(200, {}, "ok") } });
    dns = await startDnsServer({
      "site.test": { A: [PUBLIC_HOST] },
      "other.test": { A: [PUBLIC_HOST] },
    });
  });
  afterAll(async () => {
    await Promise.all([target?.close(), dns?.close()]);
    peerCertificate.mockRestore();
  });

  it("a snapshot's handshakes never build the chain, and the name still passes", async () => {
    peerCertificate.mockClear();
    const engine = createTestEngine({ dns, ports: [target.port] });
    try {
      const report = await engine.snapshot(target.url("/", "site.test"));
      expect(report.https_ok).toBe(true);
    } finally {
      await engine.close();
    }
    const asked = peerCertificate.mock.calls.map(([detailed]) => detailed === true);
    expect(asked.length).toBeGreaterThan(0);
    expect(asked).not.toContain(true);
  });

  it("a name the leaf does not cover still fails the handshake", async () => {
    const engine = createTestEngine({ dns, ports: [target.port] });
    try {
      const report = await engine.snapshot(target.url("/", "other.test"));
      expect(report.https_ok).toBe(false);
      expect(report.reachable).toBe(false);
      expect(report.notes.join(" ")).toMatch(/other\.test/);
    } catch (err) {
      expect(err).not.toBeInstanceOf(SnapshotError);
      throw err;
    } finally {
      await engine.close();
    }
  });
});
