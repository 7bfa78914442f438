/**
 * The probe judges over Evidence values (a good, a weak and an invalid value each): SRI and
 * scripts over HTTP, CORS, the http:// side, the redirect chain; and the page parser.
 */
import { describe, expect, it } from "vitest";
import { judgeCors } from "../../src/snapshot/rules/cors.js";
import { headerBaseUri } from "../../src/snapshot/rules/csp.js";
import type { Evidence, PageEvidence } from "../../src/snapshot/rules/evidence.js";
import { judgeHttpSide } from "../../src/snapshot/rules/http-side.js";
import { judge, withoutSuperseded } from "../../src/snapshot/rules/index.js";
import { judgeMixedContent } from "../../src/snapshot/rules/mixed-content.js";
import { judgeRedirects } from "../../src/snapshot/rules/redirects.js";
import { judgeSri } from "../../src/snapshot/rules/sri.js";
import { parsePage } from "../../src/snapshot/page.js";
import type { Chain, Hop } from "../../src/snapshot/types.js";
import { PROBE_FINDINGS } from "../fixtures/finding-cases.js";

const PROBE_IDS = new Set(PROBE_FINDINGS.map((d) => d.id));

/** The findings of the probe topics in one report's order. */
const judgeProbes = (e: Evidence) => judge(e).filter((f) => PROBE_IDS.has(f.id));

const hop = (url: string, status = 200, headers: Record<string, string[]> = {}): Hop => ({
  url,
  status,
  headers,
});

function chainOf(...hops: Hop[]): Chain {
  const last = hops[hops.length - 1] as Hop;
  return {
    hops,
    finalUrl: new URL(last.url),
    redirectCount: hops.length - 1,
    final: last,
    failure: null,
  };
}

function evidence(over: Partial<Evidence> = {}): Evidence {
  const chain = over.chain ?? chainOf(hop("https://example.com/"));
  return {
    input: over.input ?? new URL(chain.hops[0]?.url ?? "https://example.com/"),
    chain,
    page: null,
    cors: null,
    httpSide: null,
    https: { ok: true },
    files: null,
    tls: null,
    ...over,
  };
}

const ids = (fs: { id: string }[]) => fs.map((f) => f.id);
const page = (scripts: PageEvidence["scripts"]): PageEvidence => ({
  metaCsp: [],
  scripts,
  insecure: [],
  metaReferrer: [],
});

describe("SRI and scripts over HTTP", () => {
  it("good: same-origin scripts, and other origins with a valid integrity", () => {
    const e = evidence({
      page: page([
        { src: "https://example.com/app.js", integrity: null },
        {
          src: "https://cdn.other.net/lib.js",
          integrity: "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K",
        },
      ]),
    });
    expect(judgeSri(e)).toEqual([]);
  });

  it("weak: another origin without integrity names its host", () => {
    const e = evidence({
      page: page([
        { src: "https://cdn.one.net/a.js", integrity: null },
        { src: "https://cdn.two.net/b.js", integrity: "" },
        { src: "https://cdn.three.net/c.js", integrity: null },
        { src: "https://cdn.four.net/d.js", integrity: null },
      ]),
    });
    const [f] = judgeSri(e);
    expect(f?.id).toBe("sri-missing");
    expect(f?.message).toContain("4 scripts");
    expect(f?.message).toContain("cdn.one.net, cdn.two.net, cdn.three.net and 1 more");
  });

  it("invalid: an integrity value that is not a hash counts as none", () => {
    const e = evidence({ page: page([{ src: "https://cdn.x.net/a.js", integrity: "md5-abc" }]) });
    expect(ids(judgeSri(e))).toEqual(["sri-missing"]);
  });

  it("an http: script on an https page is mixed content; on an http page it is not", () => {
    const scripts = [{ src: "http://example.com/a.js", integrity: null }];
    expect(ids(judgeSri(evidence({ page: page(scripts) })))).toEqual(["script-over-http"]);
    const plain = evidence({ chain: chainOf(hop("http://example.com/")), page: page(scripts) });
    expect(judgeSri(plain)).toEqual([]);
  });

  it("upgrade-insecure-requests: an http: script is fetched over https, and needs SRI like one", () => {
    const upgrading = (scripts: PageEvidence["scripts"]) =>
      ids(
        judgeSri(
          evidence({
            chain: chainOf(
              hop("https://example.com/", 200, {
                "content-security-policy": ["upgrade-insecure-requests"],
              }),
            ),
            page: page(scripts),
          }),
        ),
      );
    expect(upgrading([{ src: "http://cdn.other.net/lib.js", integrity: null }])).toEqual([
      "sri-missing",
    ]);
    // Upgraded to the page's own origin: no SRI needed.
    expect(upgrading([{ src: "http://example.com/app.js", integrity: null }])).toEqual([]);
    expect(
      upgrading([{ src: "http://cdn.other.net/lib.js", integrity: "sha384-oqVuAfXRKap7fdgcCY5u" }]),
    ).toEqual([]);
  });

  it("no page evidence: nothing said", () => {
    expect(judgeSri(evidence())).toEqual([]);
  });
});

describe("CORS", () => {
  const origin = "https://a1b2c3.invalid";
  const answer = (headers: Record<string, string[]>) =>
    evidence({ cors: { kind: "response", origin, status: 200, headers } });

  it("good: no CORS headers, a fixed allowed origin, or * without credentials", () => {
    expect(judgeCors(answer({}))).toEqual([]);
    expect(
      judgeCors(answer({ "access-control-allow-origin": ["https://app.example.com"] })),
    ).toEqual([]);
    expect(judgeCors(answer({ "access-control-allow-origin": ["*"] }))).toEqual([]);
  });

  it("weak: our origin reflected with credentials, or without", () => {
    const reflected = { "access-control-allow-origin": [origin] };
    const withCreds = { ...reflected, "access-control-allow-credentials": ["true"] };
    expect(ids(judgeCors(answer(withCreds)))).toEqual(["cors-origin-reflected"]);
    expect(ids(judgeCors(answer(reflected)))).toEqual(["cors-any-origin"]);
  });

  it("invalid: * with credentials", () => {
    const h = {
      "access-control-allow-origin": ["*"],
      "access-control-allow-credentials": ["true"],
    };
    expect(ids(judgeCors(answer(h)))).toEqual(["cors-credentials-wildcard"]);
  });

  it("credentials other than exactly `true` are not credentials (Fetch standard)", () => {
    const h = {
      "access-control-allow-origin": [origin],
      "access-control-allow-credentials": ["TRUE"],
    };
    expect(ids(judgeCors(answer(h)))).toEqual(["cors-any-origin"]);
  });

  it("several Allow-Origin values, or our origin in another case: browsers refuse, nothing said", () => {
    const creds = { "access-control-allow-credentials": ["true"] };
    for (const allow of [[origin, origin], ["*", origin], [`${origin}, ${origin}`], ["*", "*"]]) {
      const h = { "access-control-allow-origin": allow, ...creds };
      expect(judgeCors(answer(h)), allow.join(" | ")).toEqual([]);
    }
    const upper = { "access-control-allow-origin": [origin.toUpperCase()], ...creds };
    expect(judgeCors(answer(upper))).toEqual([]);
  });

  it("several credentials values combine into one that is not `true`", () => {
    const h = {
      "access-control-allow-origin": [origin],
      "access-control-allow-credentials": ["true", "true"],
    };
    expect(ids(judgeCors(answer(h)))).toEqual(["cors-any-origin"]);
  });

  it("no answer: nothing said", () => {
    expect(judgeCors(evidence({ cors: { kind: "failed" } }))).toEqual([]);
  });
});

describe("the http:// side", () => {
  const input = new URL("https://example.com/");
  const side = (httpSide: Evidence["httpSide"], httpsOk = true) =>
    ids(
      judgeHttpSide(
        evidence({
          input,
          httpSide,
          https: httpsOk
            ? { ok: true }
            : { ok: false, url: "https://example.com/", failure: { kind: "refused" } },
        }),
      ),
    );

  it("good: redirects to https on the same host, or port 80 does not answer", () => {
    expect(
      side({
        kind: "redirect",
        url: "http://example.com/",
        status: 301,
        location: "https://example.com/",
      }),
    ).toEqual([]);
    expect(
      side({
        kind: "redirect",
        url: "http://example.com/",
        status: 308,
        location: "https://example.com:8443/x",
      }),
    ).toEqual([]);
    expect(side({ kind: "failed", failure: { kind: "refused" } })).toEqual([]);
    expect(side(null)).toEqual([]);
  });

  it("weak: answers without redirect; redirects to another host; redirects to http", () => {
    expect(side({ kind: "response", url: "http://example.com/", status: 200 })).toEqual([
      "http-no-redirect",
    ]);
    expect(
      side({
        kind: "redirect",
        url: "http://example.com/",
        status: 301,
        location: "https://www.example.com/",
      }),
    ).toEqual(["http-redirects-elsewhere"]);
    expect(
      side({ kind: "redirect", url: "http://example.com/", status: 302, location: "/login" }),
    ).toEqual(["http-redirects-to-http"]);
  });

  it("the messages name the URL asked, port 80's, not the input's port", () => {
    const [finding] = judgeHttpSide(
      evidence({
        input: new URL("https://example.com:8443/"),
        httpSide: { kind: "redirect", url: "http://example.com/", status: 302, location: "/login" },
        https: { ok: true },
      }),
    );
    expect(finding?.message).toBe(
      "http://example.com/ redirects to http://example.com/login, another plain-HTTP URL, instead of to HTTPS.",
    );
  });

  it("invalid: a Location that is no URL is no redirect", () => {
    expect(
      side({ kind: "redirect", url: "http://example.com/", status: 301, location: "http://[::1" }),
    ).toEqual(["http-no-redirect"]);
  });

  it("http-only replaces https-failed in a report; https-failed alone stays", () => {
    const f = (id: string) => ({
      id,
      check: "x",
      severity: "high" as const,
      message: id,
      recommendation: "r",
    });
    expect(ids(withoutSuperseded([f("https-failed"), f("http-only")]))).toEqual(["http-only"]);
    expect(ids(withoutSuperseded([f("https-failed")]))).toEqual(["https-failed"]);
  });

  it("http works and https does not: http-only, said once", () => {
    expect(side({ kind: "response", url: "http://example.com/", status: 200 }, false)).toEqual([
      "http-only",
    ]);
    expect(
      side({ kind: "redirect", url: "http://example.com/", status: 302, location: "/home" }, false),
    ).toEqual(["http-only"]);
    expect(
      side(
        {
          kind: "redirect",
          url: "http://example.com/",
          status: 301,
          location: "https://example.com/",
        },
        false,
      ),
    ).toEqual([]);
  });
});

describe("the redirect chain", () => {
  it("good: http → https on the same site", () => {
    const chain = chainOf(
      hop("http://example.com/", 301),
      hop("https://www.example.com/", 302),
      hop("https://www.example.com/en/"),
    );
    expect(judgeRedirects(evidence({ chain }))).toEqual([]);
  });

  it("weak: an https → http step anywhere in the chain", () => {
    const chain = chainOf(
      hop("https://example.com/", 301),
      hop("http://example.com/x", 301),
      hop("https://example.com/y"),
    );
    const [f] = judgeRedirects(evidence({ chain }));
    expect(f?.id).toBe("redirect-https-to-http");
    expect(f?.message).toContain("https://example.com/ → http://example.com/x");
  });

  it("another registrable domain (public suffix list), IP literals as they are", () => {
    const other = chainOf(hop("https://example.co.uk/", 301), hop("https://shop.other.co.uk/"));
    expect(ids(judgeRedirects(evidence({ chain: other })))).toEqual(["redirect-other-domain"]);
    const same = chainOf(hop("https://a.example.co.uk/", 301), hop("https://b.example.co.uk/"));
    expect(judgeRedirects(evidence({ chain: same }))).toEqual([]);
    const ip = chainOf(hop("http://192.0.2.1/", 301), hop("http://192.0.2.2/"));
    expect(ids(judgeRedirects(evidence({ chain: ip })))).toEqual(["redirect-other-domain"]);
  });

  it("invalid: a chain that failed on its https → http step still counts the step", () => {
    const chain: Chain = {
      hops: [hop("https://example.com/", 301, { location: ["http://example.com/"] })],
      finalUrl: new URL("http://example.com/"),
      redirectCount: 1,
      final: null,
      failure: { kind: "refused" },
    };
    expect(ids(judgeRedirects(evidence({ chain })))).toEqual(["redirect-https-to-http"]);
  });
});

describe("all probe findings", () => {
  it("ids are unique lower-case kebab-case, and findings come most severe first", () => {
    const all = PROBE_FINDINGS.map((d) => d.id);
    expect(new Set(all).size).toBe(all.length);
    for (const id of all) expect(id).toMatch(/^[a-z]+(-[a-z0-9]+)+$/);
    const e = evidence({
      chain: chainOf(hop("https://example.com/", 301), hop("https://other.net/")),
      page: page([{ src: "https://cdn.x.net/a.js", integrity: null }]),
      httpSide: { kind: "response", url: "http://example.com/", status: 200 },
    });
    expect(ids(judgeProbes(e))).toEqual([
      "http-no-redirect",
      "sri-missing",
      "redirect-other-domain",
    ]);
  });
});

describe("mixed content", () => {
  const withInsecure = (insecure: PageEvidence["insecure"], url = "https://example.com/") =>
    evidence({
      chain: chainOf(hop(url)),
      page: { metaCsp: [], scripts: [], insecure, metaReferrer: [] },
    });

  it("good: nothing over http:, or an http: page, or upgrade-insecure-requests in force", () => {
    expect(judgeMixedContent(withInsecure([]))).toEqual([]);
    const img: PageEvidence["insecure"] = [
      { element: "img", url: "http://cdn.x.net/a.png", destination: "image" },
    ];
    expect(judgeMixedContent(withInsecure(img, "http://example.com/"))).toEqual([]);
    const upgraded = evidence({
      chain: chainOf(
        hop("https://example.com/", 200, {
          "content-security-policy": ["upgrade-insecure-requests"],
        }),
      ),
      page: {
        metaCsp: [],
        scripts: [{ src: "http://x.net/a.js", integrity: null }],
        insecure: img,
        metaReferrer: [],
      },
    });
    expect(ids(judgeMixedContent(upgraded))).toEqual([]);
    // A meta policy applies too, and the http: script is upgraded as well: no script-over-http,
    // but it comes from another origin without integrity, as an https: script would.
    const meta = evidence({
      page: {
        metaCsp: ["upgrade-insecure-requests"],
        scripts: [{ src: "http://x.net/a.js", integrity: null }],
        insecure: img,
        metaReferrer: [],
      },
    });
    expect(ids(judgeProbes(meta))).toEqual(["sri-missing"]);
  });

  it("active (stylesheet, frame, plugin) is high, passive (image, media) is low, hosts named", () => {
    const r = judgeMixedContent(
      withInsecure([
        { element: "link", url: "http://css.x.net/a.css", destination: "style" },
        { element: "iframe", url: "http://frame.x.net/", destination: "iframe" },
        { element: "img", url: "http://img.x.net/a.png", destination: "image" },
        { element: "video", url: "http://img.x.net/v.mp4", destination: "video" },
      ]),
    );
    expect(r.map((f) => [f.id, f.severity])).toEqual([
      ["mixed-content-active", "high"],
      ["mixed-content-passive", "low"],
    ]);
    expect(r[0]?.message).toBe(
      "The HTTPS page loads a stylesheet and a frame over plain HTTP (from css.x.net and frame.x.net); browsers block them, and anyone on the network could replace them where they do not.",
    );
    expect(r[1]?.message).toBe(
      "The HTTPS page loads an image and a media file over plain HTTP (from img.x.net); browsers upgrade or flag them, and the network can see or swap them.",
    );
  });

  it("images browsers do not upgrade (srcset, an IP address host) are blocked: active, high", () => {
    const r = judgeMixedContent(
      withInsecure([
        { element: "img", url: "http://a.x.net/1x.png", destination: "image", imageset: true },
        { element: "source", url: "http://a.x.net/pic.jpg", destination: "image", imageset: true },
        { element: "img", url: "http://192.0.2.1/p.png", destination: "image" },
        { element: "video", url: "http://[2001:db8::1]/v.mp4", destination: "video" },
        { element: "img", url: "http://img.x.net/ok.png", destination: "image" },
      ]),
    );
    expect(r.map((f) => [f.id, f.severity])).toEqual([
      ["mixed-content-active", "high"],
      ["mixed-content-passive", "low"],
    ]);
    expect(r[0]?.message).toContain(
      "loads 3 images and a media file over plain HTTP (from a.x.net, 192.0.2.1 and [2001:db8::1])",
    );
    expect(r[1]?.message).toContain("loads an image over plain HTTP (from img.x.net); ");
  });

  it("each item is judged and named by its destination, not by its element", () => {
    const r = judgeMixedContent(
      withInsecure([
        // A <video poster> is an image: upgraded; a <source> of an <audio> is a media file.
        { element: "video", url: "http://v.x.net/p.png", destination: "image" },
        { element: "source", url: "http://v.x.net/a.ogg", destination: "audio" },
        { element: "track", url: "http://t.x.net/t.vtt", destination: "track" },
        { element: "embed", url: "http://p.x.net/e", destination: "embed" },
        { element: "object", url: "http://p.x.net/o", destination: "object" },
      ]),
    );
    expect(r.map((f) => f.message)).toEqual([
      "The HTTPS page loads a text track and 2 plugins over plain HTTP (from t.x.net and p.x.net); browsers block them, and anyone on the network could replace them where they do not.",
      "The HTTPS page loads an image and a media file over plain HTTP (from v.x.net); browsers upgrade or flag them, and the network can see or swap them.",
    ]);
  });

  it("icons and image buttons are upgraded images; preloads and prefetches by their destination", () => {
    const link = (url: string, rel: "icon" | "preload" | "modulepreload" | "prefetch") =>
      ({ element: "link", url, rel }) as const;
    const r = judgeMixedContent(
      withInsecure([
        { ...link("http://i.x.net/favicon.ico", "icon"), destination: "image" },
        { element: "input", url: "http://i.x.net/go.png", destination: "image" },
        { ...link("http://i.x.net/hero.jpg", "preload"), destination: "image" },
        { ...link("http://f.x.net/a.woff2", "preload"), destination: "font" },
        { ...link("http://f.x.net/b.woff2", "preload"), destination: "font" },
        { ...link("http://s.x.net/a.css", "preload"), destination: "style" },
        { ...link("http://s.x.net/data.json", "preload"), destination: "" },
        { ...link("http://s.x.net/m.js", "modulepreload"), destination: "script" },
        { ...link("http://s.x.net/w.js", "modulepreload"), destination: "worker" },
        { ...link("http://n.x.net/next.html", "prefetch"), destination: "" },
        // An image on an IP address host is not upgraded, preloaded or not.
        { ...link("http://192.0.2.7/hero.jpg", "preload"), destination: "image" },
      ]),
    );
    expect(r.map((f) => [f.id, f.message])).toEqual([
      [
        "mixed-content-active",
        "The HTTPS page loads 2 preloaded fonts, a preloaded stylesheet, a preloaded resource, 2 preloaded scripts, a prefetched resource and a preloaded image over plain HTTP (from f.x.net, s.x.net, n.x.net and 1 more); browsers block them, and anyone on the network could replace them where they do not.",
      ],
      [
        "mixed-content-passive",
        "The HTTPS page loads an icon, an image and a preloaded image over plain HTTP (from i.x.net); browsers upgrade or flag them, and the network can see or swap them.",
      ],
    ]);
  });

  it("a preloaded script the page also runs from <script src> is script-over-http only", () => {
    const e = evidence({
      page: {
        metaCsp: [],
        scripts: [{ src: "http://js.x.net/app.js", integrity: null }],
        insecure: [
          {
            element: "link",
            url: "http://js.x.net/app.js",
            destination: "script",
            rel: "modulepreload",
          },
          { element: "link", url: "http://js.x.net/app.js", destination: "script", rel: "preload" },
          // Preloaded but never run from a <script src>: mixed content of its own.
          {
            element: "link",
            url: "http://js.x.net/lazy.js",
            destination: "script",
            rel: "preload",
          },
          // The same URL fetched as something else is not the script.
          { element: "link", url: "http://js.x.net/app.js", destination: "", rel: "prefetch" },
        ],
        metaReferrer: [],
      },
    });
    const r = judgeProbes(e);
    expect(ids(r)).toEqual(["script-over-http", "mixed-content-active"]);
    expect(r[1]?.message).toContain(
      "loads a preloaded script and a prefetched resource over plain HTTP (from js.x.net)",
    );
  });

  it("a loopback host is potentially trustworthy: no mixed content, no script over http", () => {
    const local = [
      "http://localhost:8080/a",
      "http://127.0.0.1/a",
      "http://[::1]/a",
      "http://x.localhost/a",
    ];
    const e = evidence({
      page: {
        metaCsp: [],
        scripts: local.map((src) => ({ src: `${src}.js`, integrity: null })),
        insecure: local.flatMap((url): PageEvidence["insecure"] => [
          { element: "img", url: `${url}.png`, destination: "image" },
          { element: "iframe", url, destination: "iframe" },
        ]),
        metaReferrer: [],
      },
    });
    expect(judgeMixedContent(e)).toEqual([]);
    // Cross-origin scripts all the same: they need integrity like any other.
    expect(ids(judgeSri(e))).toEqual(["sri-missing"]);
  });
});

describe("the page parser", () => {
  const at = new URL("https://example.com/dir/page");
  const csp = (content: string, equiv = "Content-Security-Policy") =>
    `<meta http-equiv="${equiv}" content="${content}">`;

  it("a meta CSP counts only as a child of the head, where HTML applies it", async () => {
    const cases: [string, string[]][] = [
      // Inside <noscript> (its content is text where scripts run) or <template>: not in the head.
      [`<head><noscript>${csp("a")}</noscript>${csp("b")}</head>`, ["b"]],
      [`<head><template>${csp("a")}<div>x</div></template>${csp("b")}</head>`, ["b"]],
      // Text in the head ends it; blank text and comments do not.
      [`<head><title>t i t l e</title> \n<!-- c -->${csp("a")}x${csp("b")}</head>`, ["a"]],
      [`<head>&nbsp;${csp("a")}</head>`, []],
      // http-equiv is matched exactly (any case): a trailing space is another value.
      [
        `<head>${csp("a", "content-security-policy ")}${csp("b", "CONTENT-security-POLICY")}</head>`,
        ["b"],
      ],
      // Between </head> and the body the parser still puts a <meta> in the head.
      [`<head></head>\n${csp("a")}<body>${csp("b")}</body>`, ["a"]],
      [`<head></head>x${csp("a")}`, []],
      // …but a <noscript> there begins the body (HTML "after head"): what follows is not.
      [`<head>${csp("a")}</head><noscript>x</noscript>${csp("b")}`, ["a"]],
      [`<head><noscript></noscript>${csp("a")}</head>`, ["a"]],
      // The content is kept whole: one policy, commas and all.
      [
        `<head>${csp("script-src 'self', 'unsafe-inline'")}</head>`,
        ["script-src 'self', 'unsafe-inline'"],
      ],
    ];
    for (const [html, expected] of cases) {
      expect((await parsePage(`<!doctype html><html>${html}</html>`, at)).metaCsp, html).toEqual(
        expected,
      );
    }
  });

  it("<meta name=referrer> anywhere in the document, not in <template> or <noscript>", async () => {
    const html =
      '<head><meta name="Referrer" content="origin"><noscript><meta name="referrer" content="never"></noscript></head>' +
      '<body><template><meta name="referrer" content="always"></template><meta name="referrer" content="no-referrer"><meta name="referrer" content=""></body>';
    expect((await parsePage(html, at)).metaReferrer).toEqual(["origin", "no-referrer"]);
  });

  it("http: subresources: images, media, stylesheets, frames, plugins; not inert or text ones", async () => {
    const html =
      '<head><link rel="stylesheet" href="http://a.net/s.css">' +
      '<noscript><link rel="stylesheet" href="http://ns.net/s.css"></noscript></head><body>' +
      '<img src="//b.net/i.png" srcset="https://c.net/1x.png 1x, http://c.net/2x.png 2x">' +
      '<picture><source srcset="http://p.net/a.jpg 1x" src="http://p.net/s.jpg"></picture>' +
      '<video src="http://d.net/v.mp4" poster="https://d.net/p.png"></video>' +
      '<iframe src="http://e.net/"></iframe><object data="http://f.net/o"></object>' +
      '<embed src="http://f.net/e"><frame src="http://e.net/f">' +
      '<template><img src="http://inert.net/i.png"></template><img src="https://ok.net/i.png">' +
      '<noscript><img src="http://ns.net/i.png"></noscript><img src="data:image/png;base64,AA">';
    expect((await parsePage(html, new URL("http://example.com/"))).insecure).toEqual([
      { element: "link", url: "http://a.net/s.css", destination: "style", rel: "stylesheet" },
      { element: "img", url: "http://b.net/i.png", destination: "image" },
      { element: "img", url: "http://c.net/2x.png", destination: "image", imageset: true },
      { element: "source", url: "http://p.net/a.jpg", destination: "image", imageset: true },
      { element: "video", url: "http://d.net/v.mp4", destination: "video" },
      { element: "iframe", url: "http://e.net/", destination: "iframe" },
      { element: "object", url: "http://f.net/o", destination: "object" },
      { element: "embed", url: "http://f.net/e", destination: "embed" },
      { element: "frame", url: "http://e.net/f", destination: "frame" },
    ]);
  });

  it("a <source src> is its <audio>/<video>'s media; a poster is an image; <picture> reads srcset only", async () => {
    const html =
      '<audio poster="http://a.net/p.png"><source src="http://a.net/a.ogg" srcset="http://a.net/x.png">' +
      '<track src="http://a.net/t.vtt"></audio>' +
      '<video poster="http://v.net/p.png"><source src="http://v.net/v.webm"></video>' +
      '<picture><source src="http://p.net/s.jpg"><img src="http://p.net/i.jpg"></picture>' +
      '<source src="http://loose.net/s.mp4">';
    expect((await parsePage(html, new URL("http://example.com/"))).insecure).toEqual([
      { element: "source", url: "http://a.net/a.ogg", destination: "audio" },
      { element: "track", url: "http://a.net/t.vtt", destination: "track" },
      { element: "video", url: "http://v.net/p.png", destination: "image" },
      { element: "source", url: "http://v.net/v.webm", destination: "video" },
      { element: "img", url: "http://p.net/i.jpg", destination: "image" },
    ]);
  });

  it("<input type=image>: the type in any case, not trimmed; other inputs fetch nothing", async () => {
    const html =
      '<form><input type="IMAGE" src="http://a.net/go.png"><input type=image src="/rel.png">' +
      '<input type=" image" src="http://a.net/no1.png"><input src="http://a.net/no2.png">' +
      '<input type="submit" src="http://a.net/no3.png"><input type="image"></form>';
    expect((await parsePage(html, new URL("http://example.com/"))).insecure).toEqual([
      { element: "input", url: "http://a.net/go.png", destination: "image" },
      { element: "input", url: "http://example.com/rel.png", destination: "image" },
    ]);
  });

  it("<link rel=icon>, by its tokens in any case; not apple-touch-icon nor other link types", async () => {
    const html =
      '<link rel="Shortcut Icon" href="http://a.net/favicon.ico"><link rel="icon" href="http://a.net/i.svg">' +
      '<link rel="\ticon\n" href="http://a.net/ws.png"><link rel="apple-touch-icon" href="http://a.net/t.png">' +
      '<link rel="apple-touch-icon-precomposed" href="http://a.net/p.png"><link rel="mask-icon" href="http://a.net/m.svg">' +
      '<link rel="icon\u00a0" href="http://a.net/nbsp.png">' +
      '<link rel="dns-prefetch preconnect" href="http://a.net/"><link rel="alternate" href="http://a.net/feed">' +
      '<link rel="stylesheet icon" href="http://a.net/both">';
    expect((await parsePage(html, new URL("https://example.com/"))).insecure).toEqual([
      { element: "link", url: "http://a.net/favicon.ico", destination: "image", rel: "icon" },
      { element: "link", url: "http://a.net/i.svg", destination: "image", rel: "icon" },
      { element: "link", url: "http://a.net/ws.png", destination: "image", rel: "icon" },
      { element: "link", url: "http://a.net/both", destination: "style", rel: "stylesheet" },
      { element: "link", url: "http://a.net/both", destination: "image", rel: "icon" },
    ]);
  });

  it("<link rel=preload>: the destination its as gives, when its type matches; else nothing", async () => {
    const pre = (as: string | null, href: string, more = "") =>
      `<link rel="preload"${as === null ? "" : ` as="${as}"`} href="http://p.net/${href}"${more}>`;
    const html = [
      pre("image", "a.png"),
      pre("IMAGE", "b.png", ' imagesrcset="http://p.net/1x.png 1x, https://p.net/2x.png 2x"'),
      pre("font", "f.woff2", ' type="font/woff2" crossorigin'),
      pre("font", "g.ttf", ' type="application/font-ttf"'),
      pre("style", "s.css", ' type="text/css; charset=utf-8"'),
      pre("script", "p.js", ' type="text/javascript"'),
      pre("fetch", "d.json", ' type="application/json"'),
      pre("track", "t.vtt"),
      // No fetch: an `as` HTML does not preload, or none, or one with spaces …
      pre("video", "v.mp4"),
      pre("audio", "a.mp3"),
      pre("document", "d.html"),
      pre("worker", "w.js"),
      pre("", "empty.js"),
      pre(null, "none.js"),
      pre(" script", "spaced.js"),
      // … or a type that is no MIME type of the destination.
      pre("font", "wrong.woff2", ' type="text/css"'),
      pre("style", "wrong.css", ' type="text/plain"'),
      pre("image", "wrong.png", ' type="image"'),
      pre("script", "wrong.js", ' type="module"'),
    ].join("");
    expect((await parsePage(html, new URL("https://example.com/"))).insecure).toEqual([
      { element: "link", url: "http://p.net/a.png", destination: "image", rel: "preload" },
      { element: "link", url: "http://p.net/b.png", destination: "image", rel: "preload" },
      { element: "link", url: "http://p.net/1x.png", destination: "image", rel: "preload" },
      { element: "link", url: "http://p.net/f.woff2", destination: "font", rel: "preload" },
      { element: "link", url: "http://p.net/g.ttf", destination: "font", rel: "preload" },
      { element: "link", url: "http://p.net/s.css", destination: "style", rel: "preload" },
      { element: "link", url: "http://p.net/p.js", destination: "script", rel: "preload" },
      { element: "link", url: "http://p.net/d.json", destination: "", rel: "preload" },
      { element: "link", url: "http://p.net/t.vtt", destination: "track", rel: "preload" },
    ]);
  });

  it("<link rel=modulepreload> fetches a script-like destination; <link rel=prefetch> the empty one", async () => {
    const html =
      '<link rel="modulepreload" href="http://m.net/a.js"><link rel="modulepreload" as="Worker" href="http://m.net/w.js">' +
      '<link rel="modulepreload" as="nonsense" href="http://m.net/n.js">' +
      '<link rel="modulepreload" as="style" href="http://m.net/no.css"><link rel="modulepreload" as="image" href="http://m.net/no.png">' +
      '<link rel="prefetch" href="http://n.net/next.html"><link rel="prefetch" as="image" href="http://n.net/i.png">' +
      '<link rel="modulepreload" href="https://m.net/ok.js"><link rel="prefetch" href="/same.html">' +
      '<template><link rel="prefetch" href="http://inert.net/"></template>';
    expect((await parsePage(html, new URL("https://example.com/"))).insecure).toEqual([
      { element: "link", url: "http://m.net/a.js", destination: "script", rel: "modulepreload" },
      { element: "link", url: "http://m.net/w.js", destination: "worker", rel: "modulepreload" },
      { element: "link", url: "http://m.net/n.js", destination: "script", rel: "modulepreload" },
      { element: "link", url: "http://n.net/next.html", destination: "", rel: "prefetch" },
      { element: "link", url: "http://n.net/i.png", destination: "", rel: "prefetch" },
    ]);
  });

  it("meta CSP in the head counts (any case); in the body it does not", async () => {
    const html =
      '<!doctype html><html><head><META HTTP-EQUIV="Content-Security-Policy" content="default-src \'self\'"></head>' +
      '<body><meta http-equiv="content-security-policy" content="script-src *"></body></html>';
    expect((await parsePage(html, at)).metaCsp).toEqual(["default-src 'self'"]);
  });

  it("a head without tags ends at the first element that cannot be in a head", async () => {
    const html =
      '<meta http-equiv="content-security-policy" content="a"><p>x</p><meta http-equiv="content-security-policy" content="b">';
    expect((await parsePage(html, at)).metaCsp).toEqual(["a"]);
  });

  it("script URLs resolve against the page, then against the first <base href>", async () => {
    const html =
      '<script src="a.js"></script><base href="https://static.example.net/s/"><base href="https://x.net/">' +
      '<script src="b.js" integrity="sha256-abc"></script><script>inline()</script>' +
      '<script type="text/template" src="t.html"></script><script src="data:text/javascript,1"></script>' +
      '<template><script src="https://inert.net/t.js"></script></template>';
    expect((await parsePage(html, at)).scripts).toEqual([
      { src: "https://example.com/dir/a.js", integrity: null },
      { src: "https://static.example.net/s/b.js", integrity: "sha256-abc" },
    ]);
  });
});

describe("the first <base href> only", () => {
  const at = new URL("https://example.com/dir/page");

  it("a first data: or javascript: <base> leaves the page URL; a later one does not count", async () => {
    for (const first of ["javascript:void(0)", "DATA:text/html,x"]) {
      const p = await parsePage(
        `<base href="${first}"><base href="http://cdn.test/"><script src="b.js"></script>` +
          '<img src="a.png"><script src="https://x.net/c.js"></script>',
        at,
      );
      expect(p.scripts, first).toEqual([
        { src: "https://example.com/dir/b.js", integrity: null },
        { src: "https://x.net/c.js", integrity: null },
      ]);
      expect(p.insecure, first).toEqual([]);
    }
    // Any other scheme is kept: relative URLs against it are no http(s) URLs, so not fetched.
    const about = await parsePage('<base href="about:blank"><script src="b.js"></script>', at);
    expect(about.scripts).toEqual([]);
  });

  it("a first <base> that is no URL leaves the page URL; one without href is skipped", async () => {
    const p = await parsePage(
      '<base target="_top"><base href="http://[::1"><base href="http://cdn.test/"><script src="b.js"></script>',
      at,
    );
    expect(p.scripts).toEqual([{ src: "https://example.com/dir/b.js", integrity: null }]);
  });
});

describe("a <base> that CSP's base-uri blocks leaves the page URL (HTML, CSP3 §6.3.1.1)", () => {
  const at = new URL("https://example.com/dir/page");
  const csp = (policy: string) => `<meta http-equiv="content-security-policy" content="${policy}">`;
  const BASE = '<base href="http://cdn.other.example/">';
  const REFS = '<img src="a.png"><link rel="stylesheet" href="s.css"><script src="b.js"></script>';
  /** The page's http: subresources and scripts, with these header values and this head. */
  const parse = async (header: string[], head: string) => {
    const p = await parsePage(
      `<head>${head}</head><body>${REFS}</body>`,
      at,
      headerBaseUri(header),
    );
    return { insecure: p.insecure.map((i) => i.url), scripts: p.scripts.map((s) => s.src) };
  };
  const OWN = {
    insecure: [],
    scripts: ["https://example.com/dir/b.js"],
  };
  const CDN = {
    insecure: ["http://cdn.other.example/a.png", "http://cdn.other.example/s.css"],
    scripts: ["http://cdn.other.example/b.js"],
  };

  it("the header's base-uri that the base does not match: relative URLs stay on the page's", async () => {
    expect(await parse(["base-uri 'self'"], BASE)).toEqual(OWN);
    expect(await parse(["default-src *; base-uri 'none'"], BASE)).toEqual(OWN);
    // Without a scheme, a source takes the https page's: no http: base.
    expect(await parse(["base-uri cdn.other.example"], BASE)).toEqual(OWN);
    // The next <base> does not count instead: the page URL is the base.
    expect(await parse(["base-uri 'self'"], `${BASE}<base href="/static/">`)).toEqual(OWN);
  });

  it("a <meta> policy applied before the <base> blocks it; one after it does not", async () => {
    expect(await parse([], `${csp("base-uri 'self'")}${BASE}`)).toEqual(OWN);
    expect(await parse([], `${BASE}${csp("base-uri 'self'")}`)).toEqual(CDN);
  });

  it("a policy without base-uri allows any base, as does a base-uri the base matches", async () => {
    expect(await parse(["default-src 'self'"], `${csp("script-src 'self'")}${BASE}`)).toEqual(CDN);
    expect(await parse(["base-uri http://cdn.other.example"], BASE)).toEqual(CDN);
    expect(await parse(["base-uri *"], BASE)).toEqual(CDN);
    expect(await parse([], `${csp("base-uri 'self' http://*.other.example")}${BASE}`)).toEqual(CDN);
  });

  it("every policy is enforced: one that blocks is enough, whichever header or meta it is in", async () => {
    const allows = "base-uri http://cdn.other.example";
    expect(await parse([`${allows}, base-uri 'self'`], BASE)).toEqual(OWN);
    expect(await parse([allows, "base-uri https:"], BASE)).toEqual(OWN);
    expect(await parse([allows], `${csp("base-uri 'none'")}${BASE}`)).toEqual(OWN);
    expect(await parse([allows, "default-src 'self'"], BASE)).toEqual(CDN);
  });
});

describe("docs/findings.md", () => {
  it("lists every probe finding id with its severity", async () => {
    const { readFile } = await import("node:fs/promises");
    const doc = await readFile(new URL("../../docs/findings.md", import.meta.url), "utf8");
    for (const def of PROBE_FINDINGS) {
      expect(doc).toMatch(
        new RegExp(`\\| \`${def.id}\` +\\| ${def.severity} +\\| \`${def.check}\``),
      );
    }
  });
});
