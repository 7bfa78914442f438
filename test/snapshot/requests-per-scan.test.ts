/**
 * Requests one snapshot sends to the site (docs/snapshot-engine.md "Requests per snapshot"):
 * at most 7 for a bare-host scan and 9 for an http:// input that redirects to https, counted by
 * real HTTP and HTTPS targets in the worst case the engine can meet on them (the first
 * security.txt location missing, so the second is asked; a page that speaks CORS, so the CORS
 * probe is sent), and no URL asked twice.
 */
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { RecordedRequest, RouteHandler, TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

/** The budgets of issue 20 (the CORS probe included). */
const BARE_HOST_BUDGET = 7;
const HTTP_INPUT_BUDGET = 9;

const PAGE = respond.html(
  "<!doctype html><html><head><title>t</title></head><body>hi</body></html>",
  {
    "strict-transport-security": "max-age=31536000",
    "content-security-policy": "default-src 'self'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "permissions-policy": "geolocation=()",
    // Speaks CORS: the CORS probe is sent, as it will be for every final answer.
    "access-control-allow-origin": "*",
  },
);

let dns: DnsFixture;
let http: TargetServer;
let https: TargetServer;
let engine: SnapshotEngine;

const hostOf = (req: IncomingMessage) => (req.headers.host ?? "").replace(/:\d+$/, "");

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer({
    "bare.test": { A: [PUBLIC_HOST] },
    "chain.test": { A: [PUBLIC_HOST] },
  });
  // chain.test: https://chain.test/ → /en/ (the page); bare.test: / is the page.
  const root: RouteHandler = (req, res) =>
    (hostOf(req) === "chain.test" ? respond.redirect("/en/", 301) : PAGE)(req, res);
  https = await startHttpsTarget({
    cert: await issueLeaf(ca, { dnsNames: ["bare.test", "chain.test"] }),
    routes: {
      "/": root,
      "/en/": PAGE,
      "/security.txt": respond.text("Contact: mailto:security@bare.test\n"),
      "/robots.txt": respond.text("User-agent: *\nDisallow:\n"),
      "/sitemap.xml": respond.text(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>',
        { "content-type": "application/xml" },
      ),
    },
  });
  // Plain HTTP sends every path to the same path over HTTPS, like a real site.
  http = await startHttpTarget({
    routes: {
      "*": (req, res) =>
        respond.redirect(`https://${hostOf(req)}:${https.port}${req.url ?? "/"}`, 301)(req, res),
    },
  });
  engine = createTestEngine({
    dns,
    ports: [http.port, https.port],
    httpsProbePort: https.port,
    httpProbePort: http.port,
  });
});

afterAll(async () => {
  await engine.close();
  await Promise.all([http.close(), https.close(), dns.close()]);
});

/** The snapshot of `input` and every request the two targets received for it. */
async function scan(input: string): Promise<{ r: SnapshotResult; asked: string[] }> {
  const before = { http: http.requests.length, https: https.requests.length };
  const r = await engine.snapshot(input);
  // The CORS probe asks the final URL again, with an Origin: a request of its own.
  const label = (scheme: string) => (q: RecordedRequest) =>
    `${scheme} ${q.headers.host} ${q.path}${q.headers.origin ? " +origin" : ""}`;
  const asked = [
    ...http.requests.slice(before.http).map(label("http")),
    ...https.requests.slice(before.https).map(label("https")),
  ];
  return { r, asked };
}

/** Every check the targets can pass is passed: fewer requests lost no check. */
function expectAllChecks(r: SnapshotResult): void {
  expect(r.reachable).toBe(true);
  expect(r.checks).toEqual(Object.fromEntries(Object.keys(r.checks).map((k) => [k, true])));
}

describe("requests per scan", () => {
  it(`a bare-host scan sends at most ${BARE_HOST_BUDGET} requests, none twice`, async () => {
    const { r, asked } = await scan(`bare.test:${https.port}`);
    expectAllChecks(r);
    expect(r.redirect_count).toBe(0);
    expect(new Set(asked).size).toBe(asked.length);
    // The page, 4 well-known paths (the first security.txt location is missing), the http://
    // side, the CORS probe.
    expect(asked.length).toBeLessThanOrEqual(BARE_HOST_BUDGET);
    expect(asked).toContain(`http bare.test:${http.port} /`);
  });

  it(`an http:// scan redirected to https sends at most ${HTTP_INPUT_BUDGET}, none twice`, async () => {
    const { r, asked } = await scan(`http://chain.test:${http.port}/`);
    expectAllChecks(r);
    expect(r.redirect_count).toBe(2);
    expect(new Set(asked).size).toBe(asked.length);
    expect(asked.length).toBeLessThanOrEqual(HTTP_INPUT_BUDGET);
    // The chain proved HTTPS and the final origin is https: no HTTPS probe, no file over http.
    expect(asked.filter((a) => a.startsWith("http "))).toEqual([`http chain.test:${http.port} /`]);
  });
});
