/**
 * Content-Encoding chains aimed at memory, the event loop and the CPU. Each case runs ten
 * snapshots at once in a CHILD process (test/fixtures/hostile-load.ts), so its peak memory,
 * event-loop block and CPU time are the engine's alone; the hostile target runs here.
 * The bounds sit far from what a decoder per coding, or a middle stage without a bound, cost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  maxChainLength,
  startEncodingChainTarget,
  startNestedBombTarget,
} from "../fixtures/hostile-bodies.js";
import { runHostileLoad } from "../fixtures/hostile-load.js";
import type { LoadReport } from "../fixtures/hostile-load.js";
import { PUBLIC_CIDRS, PUBLIC_HOST, respond, startHttpTarget } from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";

const CONCURRENCY = 10;
const FILES = ["security_txt_present", "robots_txt_present", "sitemap_xml_present"] as const;

let dns: DnsFixture;
let warm: TargetServer;
beforeAll(async () => {
  dns = await startDnsServer({
    "site.test": { A: [PUBLIC_HOST] },
    "warm.test": { A: [PUBLIC_HOST] },
  });
  warm = await startHttpTarget({
    routes: { "/": respond.text("home"), "/robots.txt": respond.text("User-agent: *\n") },
  });
});
afterAll(async () => {
  await warm.close();
  await dns.close();
});

async function load(target: TargetServer, timeoutMs: number): Promise<LoadReport> {
  return runHostileLoad(
    {
      url: target.url("/", "site.test"),
      warmUpUrl: warm.url("/", "warm.test"),
      concurrency: CONCURRENCY,
      ports: [target.port, warm.port],
      allowCidrs: PUBLIC_CIDRS,
      dnsServer: dns.address,
      timeoutMs,
    },
    // The child is killed (and the test fails) long before vitest would give up on it.
    45_000,
  );
}

describe("a Content-Encoding chain of thousands of codings (one ~16 KiB header)", () => {
  it.each([["br"], ["gzip"]] as const)(
    "%s: ten snapshots at once stay small and quick; every file is null with a note",
    async (coding) => {
      const count = maxChainLength(coding);
      const target = await startEncodingChainTarget({ coding, count });
      try {
        const report = await load(target, 10_000);
        expect(report.rssGrowthMiB).toBeLessThan(100);
        // Wall-clock, so a busy machine adds to it.
        expect(report.maxLoopDelayMs).toBeLessThan(2_000);
        expect(report.results).toHaveLength(CONCURRENCY);
        for (const r of report.results) {
          expect(r).toMatchObject({ reachable: true, final_status_code: 200 });
          for (const field of FILES) expect(r[field]).toBeNull();
          for (const name of ["security.txt", "robots.txt", "sitemap.xml"]) {
            expect(r.notes).toContain(
              `${name} could not be checked: its Content-Encoding lists ${count} codings (at most 2 are decoded).`,
            );
          }
        }
      } finally {
        await target.close();
      }
    },
    60_000,
  );
});

describe("a chain whose middle stage expands without end", () => {
  it("gzip inside br (1 GiB of empty gzip members): the middle stage stops at its bound, the text before it counts", async () => {
    const target = await startNestedBombTarget();
    try {
      const report = await load(target, 10_000);
      // CPU time of every thread: zlib decodes off the main thread.
      expect(report.cpuMs).toBeLessThan(5_000);
      expect(report.rssGrowthMiB).toBeLessThan(100);
      for (const r of report.results) {
        for (const field of FILES) expect(r[field]).toBe(true);
      }
    } finally {
      await target.close();
    }
  }, 60_000);
});
