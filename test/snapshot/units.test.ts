/**
 * The pure parts on their own: the bounded decoder, the check functions, the notes table and
 * the demo report.
 */
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { checkHttps } from "../../src/snapshot/rules/https.js";
import { checkHeaders, snapshotNotes } from "../../src/snapshot/rules/index.js";
import { checkSecurityTxt } from "../../src/snapshot/rules/security-txt.js";
import { isHtml } from "../../src/snapshot/rules/well-known.js";
import { BODY_LIMIT, readBody } from "../../src/snapshot/net/fetch.js";
import {
  DemoSnapshotResultSchema,
  SnapshotResultSchema,
} from "../../src/http/documents/report-schemas.js";
import { CHECK_NAMES, demoSnapshot } from "../../src/snapshot/index.js";
import type { FileProbe } from "../../src/snapshot/types.js";
import { evidenceOf } from "../fixtures/evidence.js";
import { gzipBomb } from "../fixtures/targets.js";

/** A stream over `buf` in 1 KiB chunks that counts how much of it was pulled. */
function counted(buf: Buffer): { stream: Readable; pulled: () => number } {
  let offset = 0;
  const stream = new Readable({
    read() {
      if (offset >= buf.length) return void this.push(null);
      const chunk = buf.subarray(offset, offset + 1024);
      offset += chunk.length;
      this.push(chunk);
    },
  });
  return { stream, pulled: () => offset };
}

/** The decoded bytes readBody kept, or null when the coding could not be decoded. */
async function readBounded(source: Readable, encodings: string[]): Promise<Buffer | null> {
  const read = await readBody(source, encodings);
  return read.ok ? read.body : null;
}

describe("readBody stays bounded", () => {
  it("stops a gzip bomb at the limit and pulls only a small part of it", async () => {
    const bomb = gzipBomb("User-agent: *\n");
    const { stream, pulled } = counted(bomb);
    const out = await readBounded(stream, ["gzip"]);
    expect(out?.length).toBe(BODY_LIMIT);
    expect(out?.subarray(0, 14).toString()).toBe("User-agent: *\n");
    expect(pulled()).toBeLessThan(bomb.length / 2);
  });

  it("returns a short body whole and an undecodable coding as null", async () => {
    expect((await readBounded(Readable.from([Buffer.from("abc")]), []))?.toString()).toBe("abc");
    const gz = gzipSync("hello");
    expect((await readBounded(Readable.from([gz]), ["gzip"]))?.toString()).toBe("hello");
    expect(await readBounded(Readable.from([Buffer.from("x")]), ["compress"])).toBeNull();
  });

  it("cuts a plain body at the limit", async () => {
    const out = await readBounded(Readable.from([Buffer.alloc(BODY_LIMIT * 3, "a")]), []);
    expect(out?.length).toBe(BODY_LIMIT);
  });
});

describe("checks", () => {
  it("isHtml: by Content-Type or by the start of the body after BOM/whitespace", () => {
    expect(isHtml("User-agent: *", "TEXT/HTML; charset=utf-8")).toBe(true);
    expect(isHtml("\uFEFF\n  <!DOCTYPE HTML>", "text/plain")).toBe(true);
    expect(isHtml("<html lang=en>", undefined)).toBe(true);
    expect(isHtml("User-agent: *\n<html>", "text/plain")).toBe(false);
  });

  it("checkHeaders: all false without a final response", () => {
    expect(Object.values(checkHeaders(null))).toEqual([false, false, false, false, false, false]);
    expect(checkHeaders({ "referrer-policy": ["", " no-referrer "] }).referrer_policy).toBe(true);
  });

  it("checkHttps: an http final URL depends on the probe", () => {
    const base = {
      finalUrl: new URL("http://a.test/"),
      finalAnswered: true,
      finalFailure: null,
      probeUrl: "https://a.test/",
    };
    expect(checkHttps({ ...base, probe: { ok: true } })).toEqual({ ok: true });
    expect(
      checkHttps({ ...base, probe: { ok: false, failure: { kind: "refused" } } }),
    ).toMatchObject({ ok: false });
    expect(checkHttps({ ...base, finalUrl: new URL("https://a.test/"), probe: null })).toEqual({
      ok: true,
    });
  });

  it("checkSecurityTxt: precedence true > null > false over the two locations", () => {
    const resp = (status: number, body = ""): FileProbe => ({
      kind: "response",
      url: "u",
      status,
      contentType: "text/plain",
      body: status === 200 ? Buffer.from(body) : null,
    });
    expect(checkSecurityTxt(resp(404), resp(200, "Contact: x")).value).toBe(true);
    expect(checkSecurityTxt(resp(404), resp(500)).value).toBeNull();
    expect(checkSecurityTxt(resp(404), resp(404)).value).toBe(false);
    expect(checkSecurityTxt(resp(500), resp(200, "Contact: x")).value).toBeNull();
    expect(
      checkSecurityTxt({ kind: "failed", url: "u", reason: "blocked" }, null).value,
    ).toBeNull();
  });
});

describe("notes table", () => {
  it("header sentences come first in report order, then each rule's notes in registry order", () => {
    const ok = { value: true, why: "ok", status: 200 } as const;
    const notes = snapshotNotes({
      ...evidenceOf(
        {
          "strict-transport-security": "max-age=60",
          "content-security-policy": "default-src 'self'",
          "referrer-policy": "no-referrer",
        },
        { url: "http://site.test/" },
      ),
      files: {
        security_txt: ok,
        robots_txt: { value: false, why: "missing", status: 404 },
        sitemap_xml: ok,
      },
    });
    expect(notes).toEqual([
      "X-Frame-Options header is missing.",
      "X-Content-Type-Options header is missing.",
      "Permissions-Policy header is missing.",
      "The site ends on plain HTTP (http://site.test/) although HTTPS works; it should redirect to HTTPS.",
      // HSTS over plain HTTP is the hsts-missing finding now (its words join the notes with it).
      "robots.txt is missing (HTTP 404).",
    ]);
  });
});

describe("demo report", () => {
  it("validates against DemoSnapshotResultSchema and says what docs/contract.md §2.4 says", () => {
    const demo = demoSnapshot();
    expect(DemoSnapshotResultSchema.parse(demo)).toEqual(demo);
    expect(demo).toMatchObject({ reachable: true, https_ok: true, redirect_count: 0, _demo: true });
    expect(demo.notes).toEqual([
      "Strict-Transport-Security (HSTS) header is missing.",
      "Content-Security-Policy (CSP) header is missing.",
      "X-Frame-Options header is missing.",
      "X-Content-Type-Options header is missing.",
    ]);
    expect(demo._note).toMatch(/static/);
    expect(demo._note).toMatch(/POST \/v1\/snapshot/);
    expect(demo.checks).toEqual({
      https: demo.https_ok,
      hsts: demo.hsts_present,
      csp: demo.csp_present,
      x_frame_options: demo.x_frame_options_present,
      x_content_type_options: demo.x_content_type_options_present,
      referrer_policy: demo.referrer_policy_present,
      permissions_policy: demo.permissions_policy_present,
      security_txt: demo.security_txt_present,
      robots_txt: demo.robots_txt_present,
      sitemap_xml: demo.sitemap_xml_present,
    });
    // Field order of docs/contract.md §2.1 (no proof: nothing was paid; no x402: the demo site
    // asks for no payment), then the two demo fields; checks in the §2.3 order.
    expect(Object.keys(demo)).toEqual([
      ...Object.keys(SnapshotResultSchema.shape).filter((key) => key !== "proof" && key !== "x402"),
      "_demo",
      "_note",
    ]);
    expect(Object.keys(demo.checks)).toEqual([...CHECK_NAMES]);
    expect(demo.final_status_code).toBe(200);
  });

  it("is the same every time and cannot be changed by a caller", () => {
    const a = demoSnapshot();
    a.notes.push("tampered");
    expect(demoSnapshot()).toEqual(JSON.parse(JSON.stringify(demoSnapshot())));
    expect(demoSnapshot().notes).toHaveLength(4);
  });
});
