/**
 * Bodies that must not hurt: 50 MB, endless, trickling, gzip bombs, and the content codings the
 * engine decodes itself. The engine reads at most 64 KiB (decoded) of a well-known file and
 * nothing of the main page, so every case ends with a correct answer and a bounded transfer.
 */
import { brotliCompressSync, deflateSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_HOST,
  createTestEngine,
  gzipBomb,
  respond,
  startHttpTarget,
} from "../fixtures/targets.js";
import type { Routes } from "../fixtures/targets.js";

const MB = 1024 * 1024;
let dns: DnsFixture;
beforeAll(async () => {
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
});
afterAll(() => dns.close());

async function snap(routes: Routes, timeoutMs = 5000): Promise<SnapshotResult> {
  const server = await startHttpTarget({ routes: { "/": respond.text("home"), ...routes } });
  const engine = createTestEngine({ dns, ports: [server.port], timeoutMs });
  try {
    return await engine.snapshot(server.url("/", "site.test"));
  } finally {
    await engine.close();
    await server.close();
  }
}

describe("main page bodies are never read", () => {
  it("a 50 MB page: reachable, and far from 50 MB transferred", async () => {
    const sent = { bytes: 0 };
    const r = await snap({
      "/": respond.big(50 * MB, { sent, headers: { "x-frame-options": "DENY" } }),
    });
    expect(r).toMatchObject({
      reachable: true,
      final_status_code: 200,
      x_frame_options_present: true,
    });
    expect(sent.bytes).toBeLessThan(25 * MB);
  });

  it("an endless page", async () => {
    const sent = { bytes: 0 };
    const r = await snap({ "/": respond.endless("", sent) });
    expect(r).toMatchObject({ reachable: true, final_status_code: 200 });
    expect(sent.bytes).toBeLessThan(25 * MB);
  });

  it("a trickling page (headers sent, body one byte at a time forever)", async () => {
    const r = await snap(
      { "/": respond.trickle(20, { "content-security-policy": "default-src 'none'" }) },
      20_000,
    );
    expect(r).toMatchObject({ reachable: true, final_status_code: 200, csp_present: true });
  });
});

describe("well-known bodies are read up to 64 KiB (decoded)", () => {
  it("a 50 MB robots.txt of rules: true, bounded transfer", async () => {
    const sent = { bytes: 0 };
    const r = await snap({
      "/robots.txt": respond.big(50 * MB, { body: "User-agent: *\nDisallow: /x\n", sent }),
    });
    expect(r.robots_txt_present).toBe(true);
    expect(sent.bytes).toBeLessThan(25 * MB);
  });

  it("a 50 MB robots.txt whose rule comes after the first 64 KiB: false (not read that far)", async () => {
    const filler = "#".repeat(70 * 1024) + "\nUser-agent: *\n";
    const r = await snap({ "/robots.txt": respond.text(filler) });
    expect(r.robots_txt_present).toBe(false);
  });

  it("an endless robots.txt: the first 64 KiB decide", async () => {
    const sent = { bytes: 0 };
    const r = await snap({ "/robots.txt": respond.endless("User-agent: *\n", sent) });
    expect(r.robots_txt_present).toBe(true);
    expect(sent.bytes).toBeLessThan(25 * MB);
  });

  it("a trickling robots.txt never finishes: null at the deadline", async () => {
    const r = await snap({ "/robots.txt": respond.trickle(20) }, 1500);
    expect(r.reachable).toBe(true);
    expect(r.robots_txt_present).toBeNull();
  });

  it("a gzip-bombed robots.txt (200 MB inflated): correct answer from the first 64 KiB", async () => {
    const before = process.memoryUsage().rss;
    const r = await snap({
      "/robots.txt": respond.gzipped(gzipBomb("User-agent: *\nDisallow: /\n")),
    });
    expect(r.robots_txt_present).toBe(true);
    // Inflating the bomb would take 200 MB; reading 64 KiB of it takes next to nothing.
    expect(process.memoryUsage().rss - before).toBeLessThan(100 * MB);
  });

  it("a gzip bomb of zeros: false (no rule line), and bounded", async () => {
    const r = await snap({ "/robots.txt": respond.gzipped(gzipBomb("")) });
    expect(r.robots_txt_present).toBe(false);
  });

  it.each([
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ])("Content-Encoding %s is decoded", async (encoding, encode) => {
    const r = await snap({
      "/robots.txt": respond.text(encode(Buffer.from("User-agent: *\n")), {
        "content-encoding": encoding,
      }),
    });
    expect(r.robots_txt_present).toBe(true);
  });

  it("an unknown Content-Encoding cannot be read: null", async () => {
    const r = await snap({
      "/robots.txt": respond.text("User-agent: *\n", { "content-encoding": "zstd-made-up" }),
    });
    expect(r.robots_txt_present).toBeNull();
  });
});
