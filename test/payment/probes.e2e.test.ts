/**
 * Paid reports name what the new probes found, end to end over the real devnet (anvil +
 * DevUSDC + the project's facilitator) with the official @x402/fetch client: three local sites
 * combining the cases of the page, CORS, http:// side and redirect-chain findings. Each paid
 * report carries the ids and their advice, and each payment moves exactly the price on chain.
 */
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSnapshotEngine,
  type SnapshotEngine,
  type SnapshotResult,
} from "../../src/snapshot/index.js";
import { startDnsServer, type DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_CIDRS,
  PUBLIC_HOST,
  respond,
  startHttpTarget,
  startHttpsTarget,
  type TargetServer,
} from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";
import {
  PRICE_UNITS,
  devnetGate,
  paidSnapshot,
  startGatedService,
  startPaidDevnet,
  type GatedService,
  type PaidDevnet,
} from "../fixtures/paid-devnet.js";
import { PROBE_FINDINGS } from "../fixtures/finding-cases.js";
import { gradeOf, scoreOf } from "../../src/snapshot/rules/score.js";

/** The findings of the probes' judges (the response judges are tested elsewhere). */
const PROBE_IDS = new Set(PROBE_FINDINGS.map((d) => d.id));
const probeFindings = (r: { findings: SnapshotResult["findings"] }) =>
  r.findings.filter((f) => PROBE_IDS.has(f.id));

let devnet: PaidDevnet;
let dns: DnsFixture;
let plain: TargetServer;
let secure: TargetServer;
let engine: SnapshotEngine;
let service: GatedService;

const hostOf = (req: IncomingMessage) => (req.headers.host ?? "").replace(/:\d+$/, "");

beforeAll(async () => {
  devnet = await startPaidDevnet();
  const names = ["shop.test", "site.test", "other.test", "legacy.test", "rh.test", "el.test"];
  dns = await startDnsServer(Object.fromEntries(names.map((n) => [n, { A: [PUBLIC_HOST] }])));
  const cert = await issueLeaf(await loadTestCa(), {
    dnsNames: ["shop.test", "site.test", "rh.test", "el.test"],
  });
  secure = await startHttpsTarget({
    cert,
    routes: {
      // Scripts from another origin without integrity and over plain HTTP; any origin reflected
      // with credentials.
      "/": (req, res) => {
        res.writeHead(200, {
          "content-type": "text/html",
          "access-control-allow-credentials": "true",
          ...(req.headers.origin ? { "access-control-allow-origin": req.headers.origin } : {}),
        });
        res.end(
          '<!doctype html><html><head><script src="https://cdn.other.test/lib.js"></script>' +
            '<script src="http://ads.other.test/ad.js"></script><link rel="stylesheet" href="http://ads.other.test/ad.css">' +
            '</head><body>shop<img src="http://img.other.test/logo.png"></body></html>',
        );
      },
      // Mixed content by destination: an icon and an image button are upgraded, a preloaded font
      // and a prefetch are blocked.
      "/links": respond.html(
        '<!doctype html><html><head><link rel="icon" href="http://img.other.test/favicon.ico">' +
          '<link rel="preload" as="font" href="http://fonts.other.test/a.woff2" crossorigin>' +
          '<link rel="prefetch" href="http://next.other.test/2.html"></head>' +
          '<body><form><input type="image" src="http://img.other.test/go.png"></form></body></html>',
      ),
      "/down": (_req, res) =>
        respond.redirect(`http://other.test:${plain.port}/landing`, 301)(_req, res),
      // Any origin allowed with credentials: a configuration browsers refuse.
      "/cors-wildcard": respond.status(200, {
        "access-control-allow-origin": "*",
        "access-control-allow-credentials": "true",
      }),
      // The asking origin echoed, without credentials.
      "/cors-public": (req, res) => {
        res.writeHead(200, {
          "content-type": "text/plain",
          vary: "Origin",
          ...(req.headers.origin ? { "access-control-allow-origin": req.headers.origin } : {}),
        });
        res.end("public");
      },
    },
  });
  plain = await startHttpTarget({
    routes: {
      "/": (req, res) => {
        const host = hostOf(req);
        if (host === "site.test")
          respond.redirect(`https://site.test:${secure.port}/`, 301)(req, res);
        else if (host === "rh.test")
          respond.redirect(`http://other.test:${plain.port}/landing`, 301)(req, res);
        else if (host === "el.test")
          respond.redirect(`https://www.el.test:${secure.port}/`, 301)(req, res);
        else respond.html("<p>plain</p>")(req, res);
      },
      "/landing": respond.html("<p>landing</p>"),
    },
  });
  const allowedPorts = new Set([plain.port, secure.port]);
  engine = createSnapshotEngine({
    timeoutMs: 5_000,
    maxRedirects: 10,
    allowedPorts,
    allowCidrs: PUBLIC_CIDRS,
    dnsServers: [dns.address],
    httpsProbePort: secure.port,
    httpProbePort: plain.port,
  });
  service = await startGatedService({
    engine,
    scope: { allowedPorts, allowCidrs: PUBLIC_CIDRS },
    gate: { ...devnetGate(devnet), devnet: true },
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await engine?.close();
  await Promise.all([plain?.close(), secure?.close(), dns?.close()]);
  await devnet?.close();
});

/** One paid snapshot of `url` by payer `i`; checks the transfer on chain. */
async function paidReport(i: number, url: string): Promise<SnapshotResult> {
  const account = devnet.payer(i);
  const [payerBefore, payToBefore] = await Promise.all([
    devnet.balanceOf(account.address),
    devnet.balanceOf(devnet.payTo),
  ]);
  const response = await paidSnapshot(service.url, url, account);
  expect(response.status).toBe(200);
  const report = (await response.json()) as SnapshotResult;
  expect(await devnet.balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
  expect(await devnet.balanceOf(devnet.payTo)).toBe(payToBefore + PRICE_UNITS);
  return report;
}

/** The probe ids the paid reports below have shown. */
const shown = new Set<string>();
const ids = (r: SnapshotResult) => {
  const found = probeFindings(r).map((f) => f.id);
  for (const id of found) shown.add(id);
  return found;
};

describe("paid reports name the probes' findings", () => {
  it("a shop: scripts without integrity and over HTTP, mixed content, origin reflected, http:// not redirected", async () => {
    const r = await paidReport(0, `https://shop.test:${secure.port}/`);
    expect(ids(r)).toEqual([
      "script-over-http",
      "mixed-content-active",
      "cors-origin-reflected",
      "http-no-redirect",
      "sri-missing",
      "mixed-content-passive",
    ]);
    expect(probeFindings(r).find((f) => f.id === "sri-missing")?.message).toContain(
      "cdn.other.test",
    );
    expect(probeFindings(r).find((f) => f.id === "script-over-http")?.message).toContain(
      "ads.other.test",
    );
    for (const f of probeFindings(r)) expect(f.recommendation.length).toBeGreaterThan(20);
    expect(r.score).toBe(scoreOf(r.findings));
    expect(r.score).toBeLessThan(scoreOf(r.findings.filter((f) => !PROBE_IDS.has(f.id))));
    expect(r.grade).toBe(gradeOf(r.score));
  });

  it("a redirect from HTTPS down to plain HTTP on another domain", async () => {
    const r = await paidReport(1, `https://site.test:${secure.port}/down`);
    expect(r.final_url).toBe(`http://other.test:${plain.port}/landing`);
    expect(ids(r)).toEqual(["redirect-https-to-http", "redirect-other-domain"]);
  });

  it("a site on plain HTTP only", async () => {
    const r = await paidReport(2, `http://legacy.test:${plain.port}/`);
    expect(r.https_ok).toBe(false);
    expect(ids(r)).toEqual(["http-only"]);
    expect(probeFindings(r)[0]?.recommendation).toMatch(/HTTPS/);
  });

  it("http:// sent to plain HTTP elsewhere, and any origin allowed with credentials", async () => {
    const r = await paidReport(3, `https://rh.test:${secure.port}/cors-wildcard`);
    expect(ids(r)).toEqual(["http-redirects-to-http", "cors-credentials-wildcard"]);
    for (const f of probeFindings(r)) expect(f.recommendation.length).toBeGreaterThan(20);
  });

  it("http:// sent to HTTPS on another host, and the asking origin echoed", async () => {
    const r = await paidReport(4, `https://el.test:${secure.port}/cors-public`);
    expect(ids(r)).toEqual(["http-redirects-elsewhere", "cors-any-origin"]);
    expect(probeFindings(r)[0]?.message).toContain(`https://www.el.test:${secure.port}/`);
  });

  it("a shop's icons, image buttons, preloads and prefetches over plain HTTP", async () => {
    const r = await paidReport(5, `https://shop.test:${secure.port}/links`);
    expect(ids(r)).toEqual(["mixed-content-active", "http-no-redirect", "mixed-content-passive"]);
    const message = (id: string) => probeFindings(r).find((f) => f.id === id)?.message;
    expect(message("mixed-content-active")).toContain(
      "loads a preloaded font and a prefetched resource over plain HTTP (from fonts.other.test and next.other.test)",
    );
    expect(message("mixed-content-passive")).toContain(
      "loads an icon and an image over plain HTTP (from img.other.test)",
    );
  });

  it("together, the paid reports above show every id of the probes' judges", () => {
    expect([...PROBE_IDS].filter((id) => !shown.has(id))).toEqual([]);
  });
});
