/**
 * Hostile or broken DNS (docs/security.md, "Hostile targets and payers"): a server that drops
 * one family, a slow server, and names whose queries are never answered while the engine uses
 * the system's resolver configuration. All against the real DNS fixture.
 */
import nodeDns from "node:dns";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSnapshotEngine } from "../../src/snapshot/index.js";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_CIDRS,
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";

let dns: DnsFixture;
let site: TargetServer;
const engines: SnapshotEngine[] = [];

beforeAll(async () => {
  dns = await startDnsServer({
    "site.test": { A: [PUBLIC_HOST] },
    "no-aaaa.test": { A: [PUBLIC_HOST], drop: ["AAAA"] },
    "slow.test": { A: [PUBLIC_HOST], delayMs: 3000 },
  });
  site = await startHttpTarget({ routes: { "/": respond.text("home") } });
});

afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await Promise.all([dns?.close(), site?.close()]);
});

async function timedSnapshot(engine: SnapshotEngine, url: string) {
  const t0 = performance.now();
  const result = await engine.snapshot(url);
  return { result, ms: performance.now() - t0 };
}

describe("a DNS server that answers one family only", () => {
  it("dropped AAAA queries do not hold the lookup: the A answer is used after a short grace", async () => {
    const timeoutMs = 8000;
    const engine = createTestEngine({ dns, ports: [site.port], timeoutMs });
    engines.push(engine);
    const { result, ms } = await timedSnapshot(engine, `http://no-aaaa.test:${site.port}/`);
    expect(result).toMatchObject({ reachable: true, final_status_code: 200 });
    expect(dns.queriesFor("no-aaaa.test", "AAAA").length).toBeGreaterThan(0);
    expect(ms).toBeLessThan(timeoutMs / 2);
  });
});

describe("a slow DNS server", () => {
  it("an answer after 3 s is used while the deadline allows (slow, not 'does not resolve')", async () => {
    const engine = createTestEngine({ dns, ports: [site.port], timeoutMs: 8000 });
    engines.push(engine);
    const { result } = await timedSnapshot(engine, `http://slow.test:${site.port}/`);
    expect(result).toMatchObject({ reachable: true, final_status_code: 200 });
  });
});

describe("without SNAPSHOT_DNS_SERVERS: the system's servers through c-ares", () => {
  it("names whose queries are dropped cannot starve the lookups of others", async () => {
    const saved = nodeDns.getServers();
    // The process's default resolver servers, as /etc/resolv.conf would give them.
    nodeDns.setServers([dns.address]);
    try {
      const timeoutMs = 4000;
      const engine = createSnapshotEngine({
        timeoutMs,
        maxRedirects: 10,
        allowedPorts: new Set([site.port]),
        allowCidrs: PUBLIC_CIDRS,
        dnsServers: [],
      });
      engines.push(engine);
      const stuck = Array.from({ length: 6 }, (_, i) => {
        dns.set(`dropped-${i}.test`, { drop: true });
        return engine.snapshot(`http://dropped-${i}.test:${site.port}/`).catch((e: unknown) => e);
      });
      // Every stuck lookup is under way before the healthy one starts.
      const asked = () => dns.queries.filter((q) => q.name.startsWith("dropped-")).length;
      for (let i = 0; i < 200 && asked() < 6; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const { result, ms } = await timedSnapshot(engine, `http://site.test:${site.port}/`);
      expect(result).toMatchObject({ reachable: true, final_status_code: 200 });
      expect(ms).toBeLessThan(timeoutMs / 2);
      for (const outcome of await Promise.all(stuck)) {
        expect(outcome).toMatchObject({ errorType: "timeout" });
      }
    } finally {
      nodeDns.setServers(saved);
    }
  });
});
