/**
 * Every probe finding id through the engine, each against a real target serving its case (HTTP
 * and HTTPS targets, names from the DNS fixture): the http:// side, the redirect chain, SRI and
 * scripts over HTTP in the final page, CORS; and the bounds of the new work (bodies read only for
 * HTML 200, a trickling body or a black-holed port 80 costs a bounded wait, not the deadline).
 */
import { gzipSync } from "node:zlib";
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_HOST,
  PUBLIC_HOST_2,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
  startSilentServer,
} from "../fixtures/targets.js";
import type { RouteHandler, TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";
import { PROBE_FINDINGS } from "../fixtures/finding-cases.js";
import { gradeOf, scoreOf } from "../../src/snapshot/rules/score.js";

/** The findings of the probes' judges (the response judges are tested elsewhere). */
const PROBE_IDS = new Set(PROBE_FINDINGS.map((d) => d.id));
const probeFindings = (r: { findings: SnapshotResult["findings"] }) =>
  r.findings.filter((f) => PROBE_IDS.has(f.id));

/** Names whose https:// works (on the test certificate); ho.test is not on it. */
const HTTPS_NAMES = [
  "site.test",
  "www.site.test",
  "other.test",
  "nr.test",
  "el.test",
  "www.el.test",
  "rh.test",
  "good.test",
];
const ALL_NAMES = [...HTTPS_NAMES, "ho.test"];

let dns: DnsFixture;
let plain: TargetServer;
let secure: TargetServer;
let secure2: TargetServer;
let silent: Awaited<ReturnType<typeof startSilentServer>>;
let engine: SnapshotEngine;

const hostOf = (req: IncomingMessage) => (req.headers.host ?? "").replace(/:\d+$/, "");

/** What `http://<name>/` answers, by name (the http-side probe's target). */
const httpSide: Record<string, () => RouteHandler> = {
  "site.test": () => respond.redirect(`https://site.test:${secure.port}/`, 301),
  "nr.test": () => respond.html(),
  "el.test": () => respond.redirect(`https://www.el.test:${secure.port}/`, 301),
  "rh.test": () => respond.redirect(`http://rh.test:${plain.port}/start`, 301),
  "good.test": () => respond.redirect(`https://good.test:${secure.port}/`, 301),
  "ho.test": () => respond.html(),
};

const page = (body: string, headers = {}) =>
  respond.html(
    `<!doctype html><html><head><title>t</title></head><body>${body}</body></html>`,
    headers,
  );

/** A page whose relative stylesheet, script and image follow an http: `<base>`, under this CSP. */
const basePage = (csp: string) =>
  respond.html(
    '<!doctype html><html><head><base href="http://cdn.other.test/"><link rel="stylesheet" href="a.css">' +
      '<script src="app.js"></script></head><body><img src="i.png"></body></html>',
    { "content-security-policy": csp },
  );

function valid(r: SnapshotResult): SnapshotResult {
  expect(SnapshotResultSchema.parse(r)).toEqual(r);
  return r;
}
const ids = (r: SnapshotResult) => probeFindings(r).map((f) => f.id);
const finding = (r: SnapshotResult, id: string) => probeFindings(r).find((f) => f.id === id);

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer(
    Object.fromEntries(
      ALL_NAMES.map((n) => [
        n,
        { A: [n === "other.test" || n === "www.site.test" ? PUBLIC_HOST_2 : PUBLIC_HOST] },
      ]),
    ),
  );
  plain = await startHttpTarget({
    routes: {
      "/": (req, res) => (httpSide[hostOf(req)] ?? (() => respond.status(404)))()(req, res),
      "/landing": page("plain landing"),
      "/start": page("start"),
    },
  });
  const cert = await issueLeaf(ca, { dnsNames: HTTPS_NAMES, ips: [PUBLIC_HOST, PUBLIC_HOST_2] });
  const reflect =
    (credentials: boolean): RouteHandler =>
    (req, res) => {
      const origin = req.headers.origin;
      res.writeHead(200, {
        "content-type": "application/json",
        vary: "Origin",
        ...(origin ? { "access-control-allow-origin": origin } : {}),
        ...(credentials ? { "access-control-allow-credentials": "true" } : {}),
      });
      res.end("{}");
    };
  secure2 = await startHttpsTarget({ cert, host: PUBLIC_HOST_2, routes: { "/": page("other") } });
  secure = await startHttpsTarget({
    cert,
    routes: {
      "/": page("home"),
      "/down": respond.redirect(`http://site.test:${plain.port}/landing`, 301),
      "/away": respond.redirect(`https://other.test:${secure2.port}/`, 302),
      "/www": respond.redirect(`https://www.site.test:${secure2.port}/`, 302),
      "/sri": page(
        '<script src="/own.js"></script><script src="https://cdn.other.test/lib.js"></script>' +
          '<script src="https://static.example.net/a.js" integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K" crossorigin="anonymous"></script>',
      ),
      "/sri-gzip": respond.gzipped(
        gzipSync(
          '<html><head></head><body><script src="https://cdn.other.test/z.js"></script></body></html>',
        ),
        { "content-type": "text/html; charset=utf-8" },
      ),
      "/mixed": page('<script src="http://cdn.other.test/old.js"></script>'),
      "/mixed-active": page(
        '<link rel="stylesheet" href="http://css.other.test/a.css"><iframe src="http://frame.other.test/"></iframe>',
      ),
      "/mixed-passive": page(
        '<img src="http://img.other.test/a.png"><template><iframe src="http://inert.test/"></iframe></template>',
      ),
      // Icons, image buttons, preloads and prefetches, judged by their requests' destinations.
      "/mixed-links": respond.html(
        '<!doctype html><html><head><link rel="shortcut icon" href="http://img.other.test/favicon.ico">' +
          '<link rel="apple-touch-icon" href="http://touch.other.test/t.png">' +
          '<link rel="preload" as="font" type="font/woff2" href="http://fonts.other.test/a.woff2" crossorigin>' +
          '<link rel="preload" href="http://fonts.other.test/no-as.woff2">' +
          '<link rel="modulepreload" href="http://js.other.test/app.js">' +
          '<script type="module" src="http://js.other.test/app.js"></script>' +
          '<link rel="prefetch" href="http://next.other.test/2.html"></head>' +
          '<body><form><input type="image" src="http://img.other.test/go.png"></form></body></html>',
      ),
      // Relative URLs under an http: <base>, which the header's base-uri blocks or allows.
      "/base-blocked": basePage("default-src 'self'; base-uri 'self'"),
      "/base-allowed": basePage("base-uri http://cdn.other.test"),
      "/mixed-upgraded": page('<img src="http://img.other.test/a.png">', {
        "content-security-policy": "upgrade-insecure-requests",
      }),
      "/sri-404": respond.status(
        404,
        { "content-type": "text/html" },
        '<script src="https://cdn.other.test/a.js"></script>',
      ),
      "/sri-text": respond.text('<script src="https://cdn.other.test/a.js"></script>'),
      "/cors-reflect": reflect(true),
      // Says nothing of CORS unless asked with an Origin: then reflects it with credentials.
      "/cors-silent": (req, res) => {
        const origin = req.headers.origin;
        res.writeHead(200, {
          "content-type": "application/json",
          ...(origin
            ? { "access-control-allow-origin": origin, "access-control-allow-credentials": "true" }
            : {}),
        });
        res.end("{}");
      },
      "/cors-public": reflect(false),
      "/cors-wildcard": respond.text("{}", {
        "access-control-allow-origin": "*",
        "access-control-allow-credentials": "true",
      }),
      "/cors-fixed": respond.text("{}", {
        "access-control-allow-origin": "https://app.site.test",
        "access-control-allow-credentials": "true",
        vary: "Origin",
      }),
      "/slow-page": (_req, res) => {
        res.writeHead(200, { "content-type": "text/html" });
        res.write('<html><body><script src="https://cdn.other.test/slow.js"></script>');
        const t = setInterval(() => res.write(" "), 50);
        res.on("close", () => clearInterval(t));
      },
    },
  });
  silent = await startSilentServer();
  engine = createTestEngine({
    dns,
    ports: [plain.port, secure.port, secure2.port],
    httpsProbePort: secure.port,
    httpProbePort: plain.port,
  });
});

afterAll(async () => {
  await engine.close();
  await Promise.all([plain, secure, secure2, silent, dns].map((s) => s.close()));
});

const snap = (url: string) => engine.snapshot(url).then(valid);

describe("the http:// side", () => {
  it("good: http:// redirects to https:// on the same host: nothing said", async () => {
    const r = await snap(`https://good.test:${secure.port}/`);
    expect(probeFindings(r)).toEqual([]);
    expect(r.score).toBe(scoreOf(r.findings.filter((f) => !PROBE_IDS.has(f.id))));
    const asked = plain.requests.filter((q) => q.headers.host?.startsWith("good.test"));
    expect(asked.map((q) => q.path)).toEqual(["/"]);
  });

  it("http-no-redirect: http:// answers 200", async () => {
    const r = await snap(`https://nr.test:${secure.port}/`);
    expect(ids(r)).toEqual(["http-no-redirect"]);
    expect(finding(r, "http-no-redirect")?.message).toBe(
      // The probe asks port 80 (here the plain fixture's port), whatever the input's port.
      `http://nr.test:${plain.port}/ answers (status 200) without redirecting to HTTPS.`,
    );
  });

  it("http-redirects-elsewhere: http:// redirects to https:// on another host", async () => {
    const r = await snap(`https://el.test:${secure.port}/`);
    expect(ids(r)).toEqual(["http-redirects-elsewhere"]);
    expect(finding(r, "http-redirects-elsewhere")?.message).toContain(
      `https://www.el.test:${secure.port}/`,
    );
  });

  it("http-redirects-to-http: http:// redirects to another http:// URL", async () => {
    const r = await snap(`https://rh.test:${secure.port}/`);
    expect(ids(r)).toEqual(["http-redirects-to-http"]);
  });

  it("http-only: http:// answers and HTTPS fails; the input's own request is not sent twice", async () => {
    const before = plain.requests.length;
    const r = await snap(`http://ho.test:${plain.port}/`);
    expect(r.https_ok).toBe(false);
    expect(ids(r)).toEqual(["http-only"]);
    // http-only (high) costs 25 points beyond what the response judges found.
    expect(r.score).toBe(Math.max(0, scoreOf(r.findings.filter((f) => !PROBE_IDS.has(f.id))) - 25));
    expect(r.grade).toBe(gradeOf(r.score));
    // Once without an Origin (the chain and the http:// side at once), once with (the CORS probe).
    const asked = plain.requests.slice(before).filter((q) => q.path === "/");
    expect(asked.map((q) => q.headers.origin)).toEqual([undefined, expect.any(String)]);
  });

  it("a scheme-less input whose https:// is refused is reported as its http://, said in a note", async () => {
    // Nothing listens on port 443 of the test address: https://ho.test/ is refused.
    const fallback = createTestEngine({
      dns,
      ports: [443, plain.port],
      httpsProbePort: 443,
      httpProbePort: plain.port,
    });
    try {
      const before = plain.requests.length;
      const r = valid(await fallback.snapshot("ho.test"));
      expect(r).toMatchObject({
        normalized_url: "https://ho.test/",
        final_url: `http://ho.test:${plain.port}/`,
        reachable: true,
        final_status_code: 200,
        https_ok: false,
        redirect_count: 0,
      });
      expect(r.notes).toContain(
        `The input had no scheme and https://ho.test/ refused the connection, so this report is of http://ho.test:${plain.port}/ (plain HTTP).`,
      );
      expect(ids(r)).toEqual(["http-only"]);
      // The refusal is the HTTPS verdict; http://ho.test/ is asked by the chain and the CORS
      // probe, and once more by the http:// side probe started before the refusal was known.
      expect(r.notes).toContain(
        "HTTPS does not work (https://ho.test/): the connection was refused.",
      );
      const asked = plain.requests.slice(before).filter((q) => q.path === "/");
      expect(asked.length).toBeLessThanOrEqual(3);
      // A scheme written is taken at its word: refused is a 400.
      await expect(fallback.snapshot("https://ho.test/")).rejects.toMatchObject({
        errorType: "unreachable",
      });
    } finally {
      await fallback.close();
    }
  });

  it("port 80 black-holed: no finding, and the report does not wait for the deadline", async () => {
    const slowSide = createTestEngine({
      dns,
      ports: [plain.port, secure.port, silent.port],
      httpsProbePort: secure.port,
      httpProbePort: silent.port,
      timeoutMs: 20_000,
    });
    try {
      const t0 = performance.now();
      const r = valid(await slowSide.snapshot(`https://nr.test:${secure.port}/`));
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(probeFindings(r)).toEqual([]);
      expect(r.reachable).toBe(true);
    } finally {
      await slowSide.close();
    }
  });
});

describe("the redirect chain", () => {
  it("redirect-https-to-http: https:// redirects to http://", async () => {
    const r = await snap(`https://site.test:${secure.port}/down`);
    expect(r.final_url).toBe(`http://site.test:${plain.port}/landing`);
    expect(ids(r)).toContain("redirect-https-to-http");
    expect(finding(r, "redirect-https-to-http")).toMatchObject({ severity: "high" });
  });

  it("redirect-other-domain: the final URL is on another registrable domain", async () => {
    const r = await snap(`https://site.test:${secure.port}/away`);
    expect(r.final_url).toBe(`https://other.test:${secure2.port}/`);
    expect(ids(r)).toEqual(["redirect-other-domain"]);
    expect(r.score).toBe(scoreOf(r.findings.filter((f) => !PROBE_IDS.has(f.id))));
  });

  it("good: a redirect to www. of the same domain is not another domain", async () => {
    const r = await snap(`https://site.test:${secure.port}/www`);
    expect(r.final_url).toBe(`https://www.site.test:${secure2.port}/`);
    expect(probeFindings(r)).toEqual([]);
  });
});

describe("scripts of the final page", () => {
  it("sri-missing names the other origin's host; same-origin and hashed scripts pass", async () => {
    const r = await snap(`https://site.test:${secure.port}/sri`);
    expect(ids(r)).toEqual(["sri-missing"]);
    expect(finding(r, "sri-missing")?.message).toBe(
      "The page loads a script from other origins without Subresource Integrity (from cdn.other.test).",
    );
  });

  it("a gzip-encoded page is decoded before it is read", async () => {
    const r = await snap(`https://site.test:${secure.port}/sri-gzip`);
    expect(ids(r)).toEqual(["sri-missing"]);
  });

  it("script-over-http: an http: script on the https page", async () => {
    const r = await snap(`https://site.test:${secure.port}/mixed`);
    expect(ids(r)).toEqual(["script-over-http"]);
    expect(finding(r, "script-over-http")?.message).toContain("cdn.other.test");
  });

  it("mixed-content: an http: stylesheet and frame (high), an http: image (low)", async () => {
    const active = await snap(`https://site.test:${secure.port}/mixed-active`);
    expect(ids(active)).toEqual(["mixed-content-active"]);
    expect(finding(active, "mixed-content-active")?.message).toContain(
      "(from css.other.test and frame.other.test)",
    );
    const passive = await snap(`https://site.test:${secure.port}/mixed-passive`);
    expect(ids(passive)).toEqual(["mixed-content-passive"]);
    expect(finding(passive, "mixed-content-passive")).toMatchObject({ severity: "low" });
    // upgrade-insecure-requests: browsers ask for it over https.
    expect(ids(await snap(`https://site.test:${secure.port}/mixed-upgraded`))).toEqual([]);
  });

  it("mixed-content: a preloaded font and a prefetch (high), an icon and an image button (low)", async () => {
    const r = await snap(`https://site.test:${secure.port}/mixed-links`);
    // The module script is script-over-http's alone, its modulepreload not named again.
    expect(ids(r)).toEqual(["script-over-http", "mixed-content-active", "mixed-content-passive"]);
    expect(finding(r, "mixed-content-active")?.message).toContain(
      "loads a preloaded font and a prefetched resource over plain HTTP (from fonts.other.test and next.other.test)",
    );
    expect(finding(r, "mixed-content-passive")?.message).toContain(
      "loads an icon and an image over plain HTTP (from img.other.test)",
    );
  });

  it("a <base> the header's base-uri blocks is ignored: its page's relative URLs stay on https", async () => {
    expect(ids(await snap(`https://site.test:${secure.port}/base-blocked`))).toEqual([]);
    const allowed = await snap(`https://site.test:${secure.port}/base-allowed`);
    expect(ids(allowed)).toEqual([
      "script-over-http",
      "mixed-content-active",
      "mixed-content-passive",
    ]);
    expect(finding(allowed, "script-over-http")?.message).toContain("cdn.other.test");
  });

  it("the body is read only for an HTML 200", async () => {
    expect(probeFindings(await snap(`https://site.test:${secure.port}/sri-404`))).toEqual([]);
    expect(probeFindings(await snap(`https://site.test:${secure.port}/sri-text`))).toEqual([]);
  });

  it("a page that trickles: no page evidence, and the report does not wait for the deadline", async () => {
    const patient = createTestEngine({
      dns,
      ports: [plain.port, secure.port],
      httpsProbePort: secure.port,
      httpProbePort: plain.port,
      timeoutMs: 20_000,
    });
    try {
      const t0 = performance.now();
      const r = valid(await patient.snapshot(`https://site.test:${secure.port}/slow-page`));
      expect(performance.now() - t0).toBeLessThan(10_000);
      expect(probeFindings(r)).toEqual([]);
      expect(r.final_status_code).toBe(200);
    } finally {
      await patient.close();
    }
  });
});

describe("CORS", () => {
  it("cors-origin-reflected: a made-up origin echoed with credentials", async () => {
    const before = secure.requests.length;
    const r = await snap(`https://site.test:${secure.port}/cors-reflect`);
    expect(ids(r)).toEqual(["cors-origin-reflected"]);
    const asked = secure.requests.slice(before).filter((q) => q.path === "/cors-reflect");
    // The CORS probe of an https input goes with the main request: in either order.
    expect(asked.map((q) => q.headers.origin ?? "").sort()).toEqual([
      "",
      expect.stringMatching(/^https:\/\/[0-9a-f]{12}\.invalid$/),
    ]);
  });

  it("cors-any-origin: echoed without credentials", async () => {
    expect(ids(await snap(`https://site.test:${secure.port}/cors-public`))).toEqual([
      "cors-any-origin",
    ]);
  });

  it("cors-credentials-wildcard: * with credentials", async () => {
    expect(ids(await snap(`https://site.test:${secure.port}/cors-wildcard`))).toEqual([
      "cors-credentials-wildcard",
    ]);
  });

  it("cors-origin-reflected: a site silent about CORS without an Origin is probed all the same", async () => {
    const before = secure.requests.length;
    const r = await snap(`https://site.test:${secure.port}/cors-silent`);
    expect(ids(r)).toEqual(["cors-origin-reflected"]);
    const asked = secure.requests.slice(before).filter((q) => q.path === "/cors-silent");
    // The CORS probe of an https input goes with the main request: in either order.
    expect(asked.map((q) => q.headers.origin ?? "").sort()).toEqual([
      "",
      expect.stringMatching(/^https:\/\/[0-9a-f]{12}\.invalid$/),
    ]);
  });

  it("good: a fixed allowed origin is not reflected; a site without CORS gets one probe, no finding", async () => {
    expect(probeFindings(await snap(`https://site.test:${secure.port}/cors-fixed`))).toEqual([]);
    const before = secure.requests.length;
    expect(probeFindings(await snap(`https://site.test:${secure.port}/`))).toEqual([]);
    const asked = secure.requests.slice(before).filter((q) => q.path === "/");
    expect(asked.map((q) => q.headers.origin ?? "").sort()).toEqual([
      "",
      expect.stringMatching(/\.invalid$/),
    ]);
  });
});
