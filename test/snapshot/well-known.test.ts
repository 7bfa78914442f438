/**
 * The well-known file table of docs/contract.md §4.5 (security.txt, robots.txt, sitemap.xml): every
 * true / false / null row, soft 404s, redirects of the probes, the security.txt precedence rule.
 * Each case gets its own real server (the paths are fixed, so one origin per scenario).
 */
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  BLOCKED_HOST,
  PUBLIC_HOST,
  PUBLIC_HOST_2,
  createTestEngine,
  respond,
  startHttpTarget,
} from "../fixtures/targets.js";
import type { RouteHandler, Routes, TargetServer } from "../fixtures/targets.js";

let dns: DnsFixture;
beforeAll(async () => {
  dns = await startDnsServer({
    "site.test": { A: [PUBLIC_HOST] },
    "other.test": { A: [PUBLIC_HOST_2] },
    "evil.test": { A: [BLOCKED_HOST] },
  });
});
afterAll(() => dns.close());

/** One snapshot of a fresh server with these routes ("/" answers 200 unless given). */
async function snap(
  routes: Routes,
  opts: { timeoutMs?: number; extra?: TargetServer[] } = {},
): Promise<{ r: SnapshotResult; server: TargetServer }> {
  const server = await startHttpTarget({ routes: { "/": respond.text("home"), ...routes } });
  const engine = createTestEngine({
    dns,
    ports: [server.port, ...(opts.extra ?? []).map((s) => s.port)],
    timeoutMs: opts.timeoutMs ?? 5000,
  });
  try {
    return { r: await engine.snapshot(server.url("/", "site.test")), server };
  } finally {
    await engine.close();
    await server.close();
  }
}

const robots = (h: RouteHandler) => ({ "/robots.txt": h });
const secTxt = (first: RouteHandler, second?: RouteHandler): Routes => ({
  "/.well-known/security.txt": first,
  ...(second ? { "/security.txt": second } : {}),
});
const sitemap = (h: RouteHandler) => ({ "/sitemap.xml": h });

const SOFT_404 = respond.html("<!DOCTYPE html><html><body>Not here</body></html>");

describe("robots.txt", () => {
  it.each<[string, RouteHandler, boolean | null]>([
    ["200 with rules", respond.text("User-agent: *\nDisallow: /private\n"), true],
    ["200 with only a Sitemap line", respond.text("Sitemap: https://site.test/sitemap.xml"), true],
    ["200 with Allow in odd case and spacing", respond.text("# hi\r\n  aLLow :  /\r\n"), true],
    ["200 empty", respond.text(""), true],
    ["200 BOM and whitespace only", respond.text("\uFEFF \n\t\n"), true],
    [
      "200 but text/html (soft 404)",
      respond.text("User-agent: *", { "content-type": "text/html" }),
      false,
    ],
    ["200 text/plain whose body is HTML", respond.text("\uFEFF \n<!doctype html><p>no</p>"), false],
    ["200 text/plain starting with <html", respond.text("<HTML><body>x</body></HTML>"), false],
    ["200 without any rule line", respond.text("hello world"), false],
    ["404", respond.status(404), false],
    ["410", respond.status(410), false],
    ["400", respond.status(400), false],
    ["401", respond.status(401), null],
    ["403", respond.status(403), null],
    ["429", respond.status(429), null],
    ["500", respond.status(500), null],
    ["503", respond.status(503), null],
  ])("%s → %s", async (_what, handler, expected) => {
    const { r } = await snap(robots(handler));
    expect(r.robots_txt_present).toBe(expected);
    expect(r.checks.robots_txt).toBe(expected);
  });

  it("a missing file gets a note; a present one none", async () => {
    const missing = await snap(robots(respond.status(404)));
    expect(missing.r.notes).toContain("robots.txt is missing (HTTP 404).");
    const present = await snap(robots(respond.text("User-agent: *")));
    expect(present.r.notes.join(" ")).not.toMatch(/robots\.txt/);
  });

  it("follows up to 3 redirects (relative and absolute)", async () => {
    const { r, server } = await snap({
      "/robots.txt": respond.redirect("/r1"),
      "/r1": respond.redirect("r2", 301),
      "/r2": (req, res) =>
        respond.redirect(`http://site.test:${(req.socket.localPort ?? 0).toString()}/r3`, 308)(
          req,
          res,
        ),
      "/r3": respond.text("User-agent: *"),
    });
    expect(r.robots_txt_present).toBe(true);
    expect(server.requests.map((q) => q.path)).toEqual(
      expect.arrayContaining(["/robots.txt", "/r1", "/r2", "/r3"]),
    );
  });

  it("a 4th redirect makes it null, not a failure of the snapshot", async () => {
    const { r, server } = await snap({
      "/robots.txt": respond.redirect("/r1"),
      "/r1": respond.redirect("/r2"),
      "/r2": respond.redirect("/r3"),
      "/r3": respond.redirect("/r4"),
      "/r4": respond.text("User-agent: *"),
    });
    expect(r.reachable).toBe(true);
    expect(r.robots_txt_present).toBeNull();
    expect(server.requests.some((q) => q.path === "/r4")).toBe(false);
    expect(r.notes).toContain("robots.txt could not be checked: it redirects more than 3 times.");
  });

  it.each([
    ["a blocked address", (port: number) => `http://${BLOCKED_HOST}:${port}/robots.txt`],
    [
      "a name resolving to a blocked address",
      (port: number) => `http://evil.test:${port}/robots.txt`,
    ],
    ["a file: URL", () => "file:///etc/passwd"],
  ])("a redirect to %s makes it null; the snapshot still succeeds", async (_what, target) => {
    const { r } = await snap({
      "/robots.txt": (req, res) => respond.redirect(target(req.socket.localPort ?? 0))(req, res),
    });
    expect(r.reachable).toBe(true);
    expect(r.final_status_code).toBe(200);
    expect(r.robots_txt_present).toBeNull();
  });

  it("a probe that never answers is null at the deadline", async () => {
    const { r } = await snap(robots(respond.neverAnswer()), { timeoutMs: 1500 });
    expect(r.reachable).toBe(true);
    expect(r.robots_txt_present).toBeNull();
    expect(r.notes).toContain("robots.txt could not be checked: no answer before the deadline.");
  });

  it("a probe whose connection is dropped is null", async () => {
    const { r } = await snap(robots(respond.hangUp()));
    expect(r.robots_txt_present).toBeNull();
  });
});

describe("security.txt", () => {
  const VALID = "Contact: mailto:security@site.test\nExpires: 2030-01-01T00:00:00.000Z\n";
  it.each<[string, Routes, boolean | null]>([
    ["valid at /.well-known/", secTxt(respond.text(VALID)), true],
    [
      "contact line in odd case and spacing",
      secTxt(respond.text("# x\n  cOnTaCt :  https://site.test/sec\n")),
      true,
    ],
    ["contact with an empty value", secTxt(respond.text("Contact:   \nExpires: x\n")), false],
    ["contact only later in a line", secTxt(respond.text("Policy: see Contact: x\n")), false],
    ["HTML with a contact line", secTxt(respond.html("<html>\nContact: x\n</html>")), false],
    ["first 404, second valid", secTxt(respond.status(404), respond.text(VALID)), true],
    ["first 403, second valid", secTxt(respond.status(403), respond.text(VALID)), true],
    ["first 404, second 404", secTxt(respond.status(404), respond.status(404)), false],
    ["first 410, second 200 soft 404", secTxt(respond.status(410), SOFT_404), false],
    ["first 200 soft 404, second 404", secTxt(SOFT_404, respond.status(404)), false],
    // The second location is consulted only when the first answered 4xx (docs/contract.md §4.5).
    ["first 200 soft 404, second valid", secTxt(SOFT_404, respond.text(VALID)), false],
    ["first 503 (second not consulted)", secTxt(respond.status(503), respond.status(404)), null],
    ["first 404, second 503", secTxt(respond.status(404), respond.status(503)), null],
    ["first 401, second 404", secTxt(respond.status(401), respond.status(404)), null],
    ["first 404, second 429", secTxt(respond.status(404), respond.status(429)), null],
  ])("%s → %s", async (_what, routes, expected) => {
    const { r } = await snap(routes);
    expect(r.security_txt_present).toBe(expected);
    expect(r.checks.security_txt).toBe(expected);
  });

  it("the second location is asked only after a 4xx at the first", async () => {
    const soft = await snap(secTxt(SOFT_404, respond.text(VALID)));
    expect(soft.server.requests.map((q) => q.path)).not.toContain("/security.txt");
    const missing = await snap(secTxt(respond.status(404), respond.text(VALID)));
    expect(missing.server.requests.map((q) => q.path)).toContain("/security.txt");
  });

  it("a security.txt that is there is judged on its fields (RFC 9116), at either location", async () => {
    const security = (r: SnapshotResult) =>
      r.findings.filter((f) => f.check === "security_txt").map((f) => [f.id, f.message]);
    expect(security((await snap(secTxt(respond.text(VALID)))).r)).toEqual([]);
    const old = "Contact: mailto:s@site.test\nExpires: 2020-05-01T00:00:00Z\n";
    const expired = await snap(secTxt(respond.status(404), respond.text(old)));
    expect(security(expired.r)).toEqual([
      ["security-txt-expired", "security.txt expired on 2020-05-01."],
    ]);
    expect(expired.r.security_txt_present).toBe(true);
    const undated = await snap(secTxt(respond.text("Contact: mailto:s@site.test\n")));
    expect(security(undated.r)).toEqual([
      ["security-txt-incomplete", "security.txt has no Expires field (RFC 9116 §2.5.5)."],
    ]);
    expect(undated.r.notes).toContain("security.txt has no Expires field (RFC 9116 §2.5.5).");
  });

  it("a soft 404 is named as such in the notes", async () => {
    const { r } = await snap(secTxt(SOFT_404, respond.status(404)));
    expect(r.notes).toContain(
      "security.txt answers 200 but does not look like a real security.txt (soft 404).",
    );
  });
});

describe("sitemap.xml", () => {
  const URLSET =
    '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://site.test/</loc></url></urlset>';
  it.each<[string, RouteHandler, boolean | null]>([
    ["200 urlset", respond.text(URLSET, { "content-type": "application/xml" }), true],
    [
      "200 sitemapindex",
      respond.text("<sitemapindex></sitemapindex>", { "content-type": "text/xml" }),
      true,
    ],
    [
      "200 gzip Content-Encoding",
      respond.gzipped(gzipSync(URLSET), { "content-type": "application/xml" }),
      true,
    ],
    [
      "200 gzip file without Content-Encoding",
      respond.text(gzipSync(URLSET), { "content-type": "application/x-gzip" }),
      true,
    ],
    ["200 HTML soft 404", SOFT_404, false],
    ["200 XML without urlset", respond.text("<?xml version='1.0'?><rss></rss>"), false],
    ["404", respond.status(404), false],
    ["500", respond.status(500), null],
  ])("%s → %s", async (_what, handler, expected) => {
    const { r } = await snap(sitemap(handler));
    expect(r.sitemap_xml_present).toBe(expected);
    expect(r.checks.sitemap_xml).toBe(expected);
  });
});

describe("which origin is probed", () => {
  it("a site answering 200 HTML for every path is a soft 404 for all three files", async () => {
    const { r } = await snap({ "*": SOFT_404 });
    expect(r.final_status_code).toBe(200);
    expect([r.security_txt_present, r.robots_txt_present, r.sitemap_xml_present]).toEqual([
      false,
      false,
      false,
    ]);
  });

  it("the files of the FINAL origin count, not those of the input", async () => {
    const other = await startHttpTarget({
      host: PUBLIC_HOST_2,
      routes: {
        "/landing": respond.text("hi"),
        "/robots.txt": respond.text("User-agent: *"),
        "/.well-known/security.txt": respond.text("Contact: mailto:a@b.test"),
        "/sitemap.xml": respond.text("<urlset></urlset>"),
      },
    });
    try {
      const { r } = await snap(
        {
          "/": respond.redirect(other.url("/landing", "other.test")),
          "*": respond.status(404),
        },
        { extra: [other] },
      );
      expect(r.final_url).toBe(other.url("/landing", "other.test"));
      expect([r.security_txt_present, r.robots_txt_present, r.sitemap_xml_present]).toEqual([
        true,
        true,
        true,
      ]);
      expect(other.requests.map((q) => q.path)).toEqual(
        expect.arrayContaining(["/robots.txt", "/.well-known/security.txt", "/sitemap.xml"]),
      );
    } finally {
      await other.close();
    }
  });
});
