/**
 * Answers node:http cannot send, from raw TCP (and TLS) servers: an unsolicited `100 Continue`
 * before the real answer is read past like any other interim response; a malformed status line
 * is "not valid HTTP" in plain words, never an internal error code.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { RAW_ANSWERS, rawResponse, startRawHttpTarget } from "../fixtures/hostile-bodies.js";
import type { RawHttpTarget } from "../fixtures/hostile-bodies.js";
import { PUBLIC_HOST, createTestEngine, snapshotOnce } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

let dns: DnsFixture;
beforeAll(async () => {
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
});
afterAll(() => dns.close());

function snapshotOf(target: RawHttpTarget): Promise<SnapshotResult> {
  return snapshotOnce(dns, target);
}

const HOME = rawResponse("HTTP/1.1 200 OK", ["X-Frame-Options: DENY"], "home");
const NOT_FOUND = rawResponse("HTTP/1.1 404 Not Found", [], "no");
const SECURITY_TXT = rawResponse("HTTP/1.1 200 OK", [], "Contact: mailto:security@site.test\n");
const ROBOTS_TXT = rawResponse("HTTP/1.1 200 OK", [], "User-agent: *\nDisallow: /private\n");

/** Answers for a site that sends an interim 100 before every answer. */
function continueBeforeEverything(path: string): string {
  switch (path) {
    case "/":
      return RAW_ANSWERS.continueThenOk(HOME);
    case "/.well-known/security.txt":
      return RAW_ANSWERS.continueThenOk(NOT_FOUND); // so /security.txt is asked as well
    case "/security.txt":
      return RAW_ANSWERS.twoContinuesThenOk(SECURITY_TXT);
    case "/robots.txt":
      return RAW_ANSWERS.twoContinuesThenOk(ROBOTS_TXT);
    default:
      return RAW_ANSWERS.continueThenOk(NOT_FOUND);
  }
}

describe("an unsolicited 100 Continue before the answer", () => {
  it("over HTTP: the final answer is the response, on the main page and on every probe", async () => {
    const target = await startRawHttpTarget(continueBeforeEverything);
    const r = await snapshotOf(target);
    expect(r).toMatchObject({
      reachable: true,
      final_status_code: 200,
      x_frame_options_present: true,
      security_txt_present: true,
      robots_txt_present: true,
      sitemap_xml_present: false,
    });
  });

  it("over HTTPS: the same, on the decrypted stream", async () => {
    const cert = await issueLeaf(await loadTestCa(), { dnsNames: ["site.test"] });
    const target = await startRawHttpTarget(continueBeforeEverything, { cert });
    const r = await snapshotOf(target);
    expect(r).toMatchObject({
      reachable: true,
      final_status_code: 200,
      https_ok: true,
      x_frame_options_present: true,
      security_txt_present: true,
      robots_txt_present: true,
    });
  });

  it("the same when the interim responses arrive one byte at a time", async () => {
    const target = await startRawHttpTarget(continueBeforeEverything, { slowStart: 80 });
    const r = await snapshotOf(target);
    expect(r).toMatchObject({
      reachable: true,
      final_status_code: 200,
      x_frame_options_present: true,
      security_txt_present: true,
      robots_txt_present: true,
    });
  });

  it("a 103 Early Hints is read past as before", async () => {
    const early = `HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n${HOME}`;
    const r = await snapshotOf(await startRawHttpTarget(() => early));
    expect(r).toMatchObject({ reachable: true, final_status_code: 200 });
  });

  it("a 100 with nothing after it is no answer", async () => {
    const target = await startRawHttpTarget(
      () => "HTTP/1.1 100 Continue\r\n\r\n", // and the connection stays open, silent
    );
    const engine = createTestEngine({ dns, ports: [target.port], timeoutMs: 1500 });
    try {
      await expect(engine.snapshot(target.url("/", "site.test"))).rejects.toMatchObject({
        errorType: "timeout",
      });
    } finally {
      await engine.close();
      await target.close();
    }
  });
});

/** An internal code: upper-case letters, digits and underscores, e.g. ERR_ASSERTION, HPE_X. */
const INTERNAL_CODE = /\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b/;

describe("malformed status lines: a plain note, never an internal code", () => {
  it.each([
    ["a status below 100 (099)", RAW_ANSWERS.status099],
    ["status 000", RAW_ANSWERS.status000],
    ["a status that is not a number", RAW_ANSWERS.statusAbc],
    ["a four-digit status", RAW_ANSWERS.status1000],
    ["a protocol switch nobody asked for", RAW_ANSWERS.unaskedUpgrade],
    ["not HTTP at all", RAW_ANSWERS.notHttp],
  ])("%s: no final response, 'not valid HTTP'", async (_, answer) => {
    const r = await snapshotOf(await startRawHttpTarget(() => answer));
    expect(r.reachable).toBe(false);
    const note = r.notes.find((n) => n.startsWith("No final response"));
    expect(note).toMatch(/failed because the server's answer was not valid HTTP\.$/);
    for (const n of r.notes) expect(n).not.toMatch(INTERNAL_CODE);
  });

  it("headers over 16 KiB: 'not valid HTTP (its headers are too large)'", async () => {
    const r = await snapshotOf(await startRawHttpTarget(() => RAW_ANSWERS.hugeHeader));
    expect(r.reachable).toBe(false);
    expect(r.notes.join("\n")).toContain(
      "the server's answer was not valid HTTP (its headers are too large).",
    );
    for (const n of r.notes) expect(n).not.toMatch(INTERNAL_CODE);
  });

  it("status 600 (three digits, outside 100–599): a response, counted as a server error (RFC 9110 §15)", async () => {
    const r = await snapshotOf(await startRawHttpTarget(() => RAW_ANSWERS.status600));
    expect(r).toMatchObject({
      reachable: true,
      final_status_code: 600,
      robots_txt_present: null,
    });
    expect(r.notes).toContain("robots.txt could not be checked: the server failed (HTTP 600).");
    for (const n of r.notes) expect(n).not.toMatch(INTERNAL_CODE);
  });
});
