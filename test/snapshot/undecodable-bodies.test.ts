/**
 * A well-known file whose body is not what its Content-Encoding says cannot be judged: it is
 * null with a note saying why, never scored as the empty file a failed decoder leaves behind.
 * A stream that is valid but ends early is judged on what it decoded to, like a body we cut
 * off at our own limit.
 */
import { Readable } from "node:stream";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readBody } from "../../src/snapshot/net/fetch.js";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  WELL_KNOWN_TEXT,
  encode,
  faultyBody,
  startFaultyBodyTarget,
} from "../fixtures/hostile-bodies.js";
import type { BodyFault, Coding } from "../fixtures/hostile-bodies.js";
import { PUBLIC_HOST, respond, snapshotOnce, startHttpTarget } from "../fixtures/targets.js";
import type { Routes, TargetServer } from "../fixtures/targets.js";

const FILES = [
  ["security_txt_present", "security.txt"],
  ["robots_txt_present", "robots.txt"],
  ["sitemap_xml_present", "sitemap.xml"],
] as const;

let dns: DnsFixture;
beforeAll(async () => {
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
});
afterAll(() => dns.close());

function snapshotOf(target: TargetServer): Promise<SnapshotResult> {
  return snapshotOnce(dns, target);
}

async function faulty(fault: BodyFault, coding: Coding): Promise<SnapshotResult> {
  return snapshotOf(await startFaultyBodyTarget({ fault, coding }));
}

function expectAllUndecodable(r: SnapshotResult, coding: string): void {
  expect(r.reachable).toBe(true);
  for (const [field, name] of FILES) {
    expect(r[field]).toBeNull();
    expect(r.notes).toContain(
      `${name} could not be checked: its content could not be decoded as ${coding}.`,
    );
  }
}

describe("a body that is not in its Content-Encoding: null with a note, on every file", () => {
  it.each(["gzip", "deflate", "br"] as const)(
    "plain text labelled %s (a valid robots.txt, security.txt and sitemap if read as text)",
    async (coding) => {
      expectAllUndecodable(await faulty("mislabelled", coding), coding);
    },
  );

  it.each(["gzip", "deflate", "br"] as const)(
    "a %s stream with a corrupted byte in its middle",
    async (coding) => {
      expectAllUndecodable(await faulty("corrupt", coding), coding);
    },
  );

  it("a gzip stream followed by bytes that are no gzip member", async () => {
    expectAllUndecodable(await faulty("garbage_after", "gzip"), "gzip");
  });

  it("bytes after a complete deflate or br stream are not read (the stream says where it ends)", async () => {
    for (const coding of ["deflate", "br"] as const) {
      const r = await faulty("garbage_after", coding);
      for (const [field] of FILES) expect(r[field]).toBe(true);
    }
  });

  it("a sitemap with gzip magic but no gzip after it (no Content-Encoding)", async () => {
    const notGzip = Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.from("<urlset>")]);
    const target = await startHttpTarget({
      routes: { "/": respond.text("home"), "/sitemap.xml": respond.text(notGzip) },
    });
    const r = await snapshotOf(target);
    expect(r.sitemap_xml_present).toBeNull();
    expect(r.notes).toContain(
      "sitemap.xml could not be checked: its content could not be decoded as gzip.",
    );
  });
});

describe("valid streams are judged on what they decode to", () => {
  it.each(["gzip", "deflate", "br"] as const)(
    "a %s stream the server cut short (a complete HTTP message): judged on the part that came",
    async (coding) => {
      const r = await faulty("cut_short", coding);
      for (const [field] of FILES) expect(r[field]).toBe(true);
    },
  );

  it("two codings (gzip, then br over it) are decoded", async () => {
    const body = brotliCompressSync(gzipSync(WELL_KNOWN_TEXT));
    const routes: Routes = { "/": respond.text("home") };
    for (const path of ["/.well-known/security.txt", "/robots.txt", "/sitemap.xml"]) {
      routes[path] = respond.text(body, { "content-encoding": "gzip, br" });
    }
    const r = await snapshotOf(await startHttpTarget({ routes }));
    for (const [field] of FILES) expect(r[field]).toBe(true);
  });

  it("three codings are refused unread, with a note", async () => {
    const body = gzipSync(gzipSync(gzipSync("User-agent: *\n")));
    const target = await startHttpTarget({
      routes: {
        "/": respond.text("home"),
        "/robots.txt": respond.text(body, { "content-encoding": "gzip, gzip, gzip" }),
      },
    });
    const r = await snapshotOf(target);
    expect(r.robots_txt_present).toBeNull();
    expect(r.notes).toContain(
      "robots.txt could not be checked: its Content-Encoding lists 3 codings (at most 2 are decoded).",
    );
  });

  it("an unknown coding is named in the note only when it is a plain short token", async () => {
    const long = `x${"y".repeat(200)}`;
    const target = await startHttpTarget({
      routes: {
        "/": respond.text("home"),
        "/robots.txt": respond.text("User-agent: *\n", { "content-encoding": "zstd" }),
        "/sitemap.xml": respond.text("<urlset>", { "content-encoding": long }),
      },
    });
    const r = await snapshotOf(target);
    expect(r.robots_txt_present).toBeNull();
    expect(r.sitemap_xml_present).toBeNull();
    expect(r.notes).toContain(
      'robots.txt could not be checked: its Content-Encoding "zstd" is not supported.',
    );
    expect(r.notes).toContain(
      "sitemap.xml could not be checked: its Content-Encoding is not supported.",
    );
  });
});

describe("readBody tells a bad coding from a bad network", () => {
  it("a body that breaks off in transit rejects (the probe's 'could not be read')", async () => {
    const valid = encode("gzip", WELL_KNOWN_TEXT.repeat(50));
    const source = new Readable({ read() {} });
    source.push(valid.subarray(0, 40));
    setImmediate(() => source.destroy(Object.assign(new Error("reset"), { code: "ECONNRESET" })));
    await expect(readBody(source, ["gzip"])).rejects.toMatchObject({ code: "ECONNRESET" });
  });

  it("bytes a decoder rejects are undecodable, naming the coding that failed", async () => {
    // gzip inside br: the br layer is fine, the gzip inside it is not gzip.
    const body = brotliCompressSync(Buffer.from("plain text, no gzip"));
    expect(await readBody(Readable.from([body]), ["gzip", "br"])).toEqual({
      ok: false,
      undecodable: { why: "corrupt", coding: "gzip" },
    });
    expect(await readBody(Readable.from([faultyBody("mislabelled", "br")]), ["br"])).toEqual({
      ok: false,
      undecodable: { why: "corrupt", coding: "br" },
    });
  });
});
