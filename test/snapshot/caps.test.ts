/**
 * docs/contract.md §4.1: one snapshot sends at most SNAPSHOT_MAX_REQUESTS (32) HTTP requests and
 * resolves at most SNAPSHOT_MAX_NAMES (16) distinct names, whatever its target does; a check a
 * cap stopped is null with a note saying our limit stopped it. Counted where the traffic lands:
 * the target servers' request logs and the DNS server's queries, not the engine's own count.
 * Precedence under small caps (docs/snapshot-engine.md "Per-snapshot caps"): the main chain,
 * then the HTTPS probe, then the files in the order they were asked.
 */
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSnapshotConfig } from "../../src/config.js";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { RouteHandler, TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

const WELL_KNOWN = ["/.well-known/security.txt", "/security.txt", "/robots.txt", "/sitemap.xml"];
/** Names the amplifying site hands out to its file probes' redirects, one fresh name per hop. */
const FRESH_NAMES = 200;
/** The main chain's names: c0 → c1 → … → c4 → back to c0, where the final page is. */
const CHAIN_NAMES = 5;
/** "… was not checked: our limit of N requests|host names per snapshot was reached." */
const CAPPED_NOTE =
  /^(security\.txt|robots\.txt|sitemap\.xml) was not checked: our limit of \d+ (requests?|host names?) per snapshot was reached\.$/;

let dns: DnsFixture;
let site: TargetServer;
let secure: TargetServer;

const hostOf = (req: IncomingMessage) => (req.headers.host ?? "").replace(/:\d+$/, "");
const distinctNames = (from = 0) => new Set(dns.queries.slice(from).map((q) => q.name));

function valid(r: SnapshotResult): SnapshotResult {
  expect(SnapshotResultSchema.parse(r)).toEqual(r);
  return r;
}

/** The report's file fields by file name. */
const files = (r: SnapshotResult) => ({
  "security.txt": r.security_txt_present,
  "robots.txt": r.robots_txt_present,
  "sitemap.xml": r.sitemap_xml_present,
});

beforeAll(async () => {
  const ca = await loadTestCa();
  const names: Record<string, { A: string[] }> = {
    "site.test": { A: [PUBLIC_HOST] },
    "www.site.test": { A: [PUBLIC_HOST] },
    "other.test": { A: [PUBLIC_HOST] },
  };
  for (let i = 0; i < CHAIN_NAMES; i++) names[`c${i}.amp.test`] = { A: [PUBLIC_HOST] };
  for (let i = 0; i < FRESH_NAMES; i++) names[`n${i}.amp.test`] = { A: [PUBLIC_HOST] };
  dns = await startDnsServer(names);
  let fresh = 0;
  // The amplifier: on *.amp.test every well-known path redirects three times, each time to a
  // name never used before, then answers 404 (so security.txt's second location is asked too).
  const amplify: RouteHandler = (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const hop = Number(url.searchParams.get("hop") ?? "0");
    if (!WELL_KNOWN.includes(url.pathname) || hop >= 3) return respond.status(404)(req, res);
    const next = `http://n${fresh++ % FRESH_NAMES}.amp.test:${site.port}`;
    respond.redirect(`${next}${url.pathname}?hop=${hop + 1}`)(req, res);
  };
  /** `handler` on site.test and its www, the amplifier on *.amp.test. */
  const onSite =
    (handler: RouteHandler): RouteHandler =>
    (req, res) =>
      (hostOf(req).endsWith(".amp.test") ? amplify : handler)(req, res);
  site = await startHttpTarget({
    routes: {
      "*": onSite(respond.status(404)),
      "/": (req, res) => {
        const at = /^c(\d+)\.amp\.test$/.exec(hostOf(req));
        if (!at) return respond.text("home")(req, res);
        // c0 → c1 → … → c4 → c0/final
        const next = Number(at[1]) + 1;
        const to =
          next < CHAIN_NAMES ? `c${next}.amp.test:${site.port}/` : `c0.amp.test:${site.port}/final`;
        respond.redirect(`http://${to}`)(req, res);
      },
      // The final page speaks CORS, so the CORS probe is sent too.
      "/final": respond.html("<!doctype html><p>final</p>", { "access-control-allow-origin": "*" }),
      "/.well-known/security.txt": onSite(respond.text("Contact: mailto:security@site.test\n")),
      "/r1": respond.redirect("/r2"),
      "/r2": respond.redirect("/r3"),
      "/r3": respond.redirect("/r4"),
      "/r4": respond.text("home"),
      "/away": (req, res) => respond.redirect(`http://www.site.test:${site.port}/home`)(req, res),
      "/home": respond.text("home"),
      "/robots.txt": onSite((req, res) =>
        hostOf(req) === "www.site.test"
          ? respond.redirect(`http://other.test:${site.port}/robots.txt`)(req, res)
          : respond.text("User-agent: *\n")(req, res),
      ),
    },
  });
  const cert = await issueLeaf(ca, { dnsNames: ["*.amp.test", "site.test", "www.site.test"] });
  secure = await startHttpsTarget({ cert, routes: { "/": respond.text("secure") } });
});

afterAll(async () => {
  await site.close();
  await secure.close();
  await dns.close();
});

/** One snapshot of `url` on a fresh engine, with what reached the targets and the DNS server. */
async function snapshot(
  url: string,
  caps: { maxRequests?: number; maxNames?: number } = {},
): Promise<{ r: SnapshotResult; plain: string[]; tls: string[]; names: Set<string> }> {
  const engine = createTestEngine({
    dns,
    ports: [site.port, secure.port],
    httpsProbePort: secure.port,
    httpProbePort: site.port,
    // Far beyond the test's own timeout: a request left waiting by a cap would show as a hang.
    timeoutMs: 60_000,
    ...caps,
  });
  const [plainFrom, tlsFrom, dnsFrom] = [
    site.requests.length,
    secure.requests.length,
    dns.queries.length,
  ];
  try {
    const r = valid(await engine.snapshot(url));
    return {
      r,
      plain: site.requests
        .slice(plainFrom)
        .map((q) => `${hostOf({ headers: q.headers } as IncomingMessage)}${q.path}`),
      tls: secure.requests.slice(tlsFrom).map((q) => q.path),
      names: distinctNames(dnsFrom),
    };
  } finally {
    await engine.close();
  }
}

describe("an amplifying site (docs/contract.md §4.1)", () => {
  it("well-known files redirecting across fresh names: ≤ 32 requests and ≤ 16 names reach the network", async () => {
    const { r, plain, tls, names } = await snapshot(`http://c0.amp.test:${site.port}/`);
    expect(r).toMatchObject({
      reachable: true,
      final_url: `http://c0.amp.test:${site.port}/final`,
    });
    // The main chain and the HTTPS probe come first: both complete.
    expect(r.redirect_count).toBe(CHAIN_NAMES);
    expect(r.https_ok).toBe(true);
    expect(tls).toEqual(["/"]);
    // The CORS probe went too: the final page was asked twice.
    expect(plain.filter((p) => p.endsWith("/final"))).toHaveLength(2);
    expect(plain.length + tls.length).toBeLessThanOrEqual(32);
    expect(names.size).toBeLessThanOrEqual(16);
    // The chain's five names and the final origin's twelve fresh ones are 17: at least one file
    // of the final origin was cut by our cap, and says so; none is blamed on the site.
    const nulls = Object.entries(files(r)).filter(([, v]) => v === null);
    expect(nulls.length).toBeGreaterThan(0);
    for (const [name] of nulls) {
      expect(r.notes.filter((n) => n.startsWith(`${name} `))).toEqual([
        expect.stringMatching(CAPPED_NOTE),
      ]);
    }
    expect(r.notes.join(" ")).not.toMatch(/could not be checked|HTTPS does not work/);
  });
});

describe("lower caps from the configuration: the documented precedence", () => {
  const caps = (env: Record<string, string>) => {
    const { maxRequests, maxNames } = loadSnapshotConfig(env);
    return { maxRequests, maxNames };
  };

  it("SNAPSHOT_MAX_REQUESTS=3: the main request, the HTTPS probe, then the first file asked", async () => {
    const { r, plain, tls } = await snapshot(
      `http://site.test:${site.port}/`,
      caps({ SNAPSHOT_MAX_REQUESTS: "3" }),
    );
    expect(plain).toEqual(["site.test/", "site.test/.well-known/security.txt"]);
    expect(tls).toEqual(["/"]);
    expect(r).toMatchObject({
      reachable: true,
      https_ok: true,
      security_txt_present: true,
      robots_txt_present: null,
      sitemap_xml_present: null,
    });
    expect(r.notes).toContain(
      "robots.txt was not checked: our limit of 3 requests per snapshot was reached.",
    );
    expect(r.notes).toContain(
      "sitemap.xml was not checked: our limit of 3 requests per snapshot was reached.",
    );
  });

  it("SNAPSHOT_MAX_REQUESTS=1: the main request only; HTTPS not checked, and not held against the site", async () => {
    const { r, plain, tls } = await snapshot(
      `http://site.test:${site.port}/`,
      caps({ SNAPSHOT_MAX_REQUESTS: "1" }),
    );
    expect(plain).toEqual(["site.test/"]);
    expect(tls).toEqual([]);
    expect(r).toMatchObject({
      reachable: true,
      https_ok: false,
      security_txt_present: null,
      robots_txt_present: null,
      sitemap_xml_present: null,
    });
    expect(r.notes).toContain(
      `HTTPS was not checked (https://site.test:${secure.port}/): our limit of 1 request per snapshot was reached.`,
    );
    // Neither HTTPS finding: the site answered on http://, but nothing says its HTTPS is broken.
    expect(r.findings.map((f) => f.id)).not.toContain("https-failed");
    expect(r.findings.map((f) => f.id)).not.toContain("http-only");
    for (const name of ["security.txt", "robots.txt", "sitemap.xml"]) {
      expect(r.notes).toContain(
        `${name} was not checked: our limit of 1 request per snapshot was reached.`,
      );
    }
  });

  it("SNAPSHOT_MAX_REQUESTS=3 and a longer chain: the chain ends unfinished, nothing else is sent", async () => {
    const { r, plain, tls } = await snapshot(
      `http://site.test:${site.port}/r1`,
      caps({ SNAPSHOT_MAX_REQUESTS: "3" }),
    );
    expect(plain).toEqual(["site.test/r1", "site.test/r2", "site.test/r3"]);
    expect(tls).toEqual([]);
    expect(r).toMatchObject({
      reachable: false,
      final_status_code: null,
      redirect_count: 2,
      final_url: `http://site.test:${site.port}/r3`,
      security_txt_present: null,
      robots_txt_present: null,
      sitemap_xml_present: null,
    });
    // As at the redirect cap, final_url is the last URL requested, whose redirect was not followed.
    expect(r.notes).toContain(
      `No final response: the redirect from http://site.test:${site.port}/r3 was not followed: our limit of 3 requests per snapshot was reached.`,
    );
    expect(r.notes.join(" ")).not.toMatch(/HTTPS does not work/);
    // Nothing was seen of the final page: no header is said missing, nor held against it.
    expect(r.notes.join(" ")).not.toMatch(/header is missing/);
    expect(r.findings).toEqual([]);
    expect(r).toMatchObject({ score: 100, grade: "A+" });
  });

  it("SNAPSHOT_MAX_REQUESTS=5 across two origins: the final origin's files, not the passed-through one's", async () => {
    const { r, plain, tls } = await snapshot(
      `http://site.test:${site.port}/away`,
      caps({ SNAPSHOT_MAX_REQUESTS: "5" }),
    );
    // site.test is an http origin the chain passed through: its files were never asked; the
    // HTTPS probe kept its one request, the final origin's files came before the http:// side.
    expect(plain).toEqual([
      "site.test/away",
      "www.site.test/home",
      "www.site.test/.well-known/security.txt",
      "www.site.test/robots.txt",
    ]);
    expect(tls).toEqual(["/"]);
    expect(r).toMatchObject({
      reachable: true,
      https_ok: true,
      security_txt_present: true,
      robots_txt_present: null,
      sitemap_xml_present: null,
    });
    // robots.txt's redirect (to other.test) and sitemap.xml came after the fifth request.
    expect(r.notes).toContain(
      "robots.txt was not checked: our limit of 5 requests per snapshot was reached.",
    );
    expect(r.notes).toContain(
      "sitemap.xml was not checked: our limit of 5 requests per snapshot was reached.",
    );
  });

  it("SNAPSHOT_MAX_NAMES=2: the chain's two names come first; a file redirect to a third is not resolved", async () => {
    const { r, plain, names } = await snapshot(
      `http://site.test:${site.port}/away`,
      caps({ SNAPSHOT_MAX_NAMES: "2" }),
    );
    expect([...names].sort()).toEqual(["site.test", "www.site.test"]);
    expect(dns.queriesFor("other.test")).toEqual([]);
    expect(plain).not.toContain("other.test/robots.txt");
    expect(r).toMatchObject({ reachable: true, robots_txt_present: null });
    expect(r.notes).toContain(
      "robots.txt was not checked: our limit of 2 host names per snapshot was reached.",
    );
  });
});
