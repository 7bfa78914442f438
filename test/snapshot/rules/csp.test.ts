import { describe, expect, it } from "vitest";
import { judgeCsp } from "../../../src/snapshot/rules/csp.js";
import type { Evidence } from "../../../src/snapshot/rules/evidence.js";
import { judge } from "../../../src/snapshot/rules/index.js";
import { evidenceOf, idsOf } from "../../fixtures/evidence.js";

const STRICT =
  "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
/** The findings of the judge but csp-no-form-action: most cases leave form-action out (its own test). */
const judgeOthers = (e: Evidence) => judgeCsp(e).filter((f) => f.id !== "csp-no-form-action");
const ids = (headers: Record<string, string | string[]>, metaCsp?: string[]) =>
  idsOf(
    judgeOthers(
      evidenceOf(headers, {
        page: metaCsp ? { metaCsp, scripts: [], insecure: [], metaReferrer: [] } : null,
      }),
    ),
  );

describe("Content-Security-Policy", () => {
  it("good: a strict policy, or inline scripts allowed only by nonce, hash or strict-dynamic", () => {
    expect(ids({ "content-security-policy": STRICT })).toEqual([]);
    expect(ids({ "content-security-policy": "default-src 'none'; base-uri 'self'" })).toEqual([]);
    for (const neutral of ["'nonce-abc'", "'sha256-abc='", "'strict-dynamic'"]) {
      expect(
        ids({ "content-security-policy": `${STRICT}; script-src 'unsafe-inline' ${neutral}` }),
      ).toEqual([]);
    }
  });

  it("script-src-elem governs `<script>`, script-src-attr event handlers, script-src eval (CSP3 §6.8.3)", () => {
    const with_ = (directives: string) =>
      ids({ "content-security-policy": `${directives}; object-src 'none'; base-uri 'none'` });
    // default-src * still reaches handlers and eval, neither of which a host source lets run.
    expect(with_("default-src *; script-src-elem 'self'")).toEqual([]);
    expect(with_("script-src 'self'; script-src-elem 'self' https:")).toEqual([
      "csp-script-any-source",
    ]);
    expect(with_("script-src 'self'; script-src-attr 'unsafe-inline'")).toEqual([
      "csp-unsafe-inline",
    ]);
    expect(
      with_("script-src 'unsafe-inline'; script-src-elem 'self'; script-src-attr 'none'"),
    ).toEqual([]);
    expect(with_("script-src 'self' 'unsafe-eval'; script-src-elem 'self'")).toEqual([
      "csp-unsafe-eval",
    ]);
    // Only elements restricted: event handlers still run whatever markup is injected.
    const [handlers, ...rest] = judgeOthers(
      evidenceOf({
        "content-security-policy": "script-src-elem 'self'; object-src 'none'; base-uri 'none'",
      }),
    );
    expect(rest).toEqual([]);
    expect(handlers?.id).toBe("csp-unsafe-inline");
    expect(handlers?.message).toMatch(/restricts `<script>` elements but not event handlers/);
    // Only handlers restricted: `<script>` elements run whatever is injected.
    const [elements] = judgeOthers(
      evidenceOf({
        "content-security-policy": "script-src-attr 'none'; object-src 'none'; base-uri 'none'",
      }),
    );
    expect(elements?.message).toMatch(/restricts event handlers but not `<script>` elements/);
    // Both restricted, one by 'unsafe-inline': the usual words.
    const [usual] = judgeOthers(
      evidenceOf({
        "content-security-policy":
          "script-src-elem 'unsafe-inline'; script-src-attr 'none'; object-src 'none'; base-uri 'none'",
      }),
    );
    expect(usual?.message).toMatch(/allows inline scripts \('unsafe-inline' without/);
  });

  it("a base-uri that lets <base> point to any host is no base-uri", () => {
    const base = (list: string) =>
      judgeOthers(
        evidenceOf({
          "content-security-policy": `default-src 'self'; object-src 'none'; base-uri ${list}`,
        }),
      );
    for (const open of ["*", "https:", "'self' https:", "https://*", "http:"]) {
      const f = base(open);
      expect(idsOf(f), open).toEqual(["csp-no-base-uri"]);
      expect(f[0]?.message, open).toMatch(
        /lets `<base>` point to any host, so it restricts nothing/,
      );
    }
    for (const closed of ["'none'", "'self'", "https://cdn.site.test", "https://*.site.test"]) {
      expect(idsOf(base(closed)), closed).toEqual([]);
    }
    // Two policies: one that restricts base is enough.
    expect(
      ids({
        "content-security-policy": [
          "default-src 'self'; object-src 'none'; base-uri *",
          "base-uri 'self'",
        ],
      }),
    ).toEqual([]);
  });

  it("weak: a nonce or hash that is not valid base64 leaves 'unsafe-inline' in force", () => {
    for (const invalid of [
      "'nonce-{{nonce}}'",
      "'nonce-'",
      "'nonce-<%= nonce %>'",
      "'sha256-'",
      "'sha256-abc==='",
      "'sha1-abc='",
      "'nonce-abc",
    ]) {
      expect(
        ids({
          "content-security-policy": `${STRICT}; script-src 'self' 'unsafe-inline' ${invalid}`,
        }),
        invalid,
      ).toEqual(["csp-unsafe-inline"]);
    }
    for (const valid of ["'nonce-R4nd0m+/_-=='", "'SHA384-abc'", "'NONCE-x'"]) {
      expect(
        ids({ "content-security-policy": `${STRICT}; script-src 'self' 'unsafe-inline' ${valid}` }),
        valid,
      ).toEqual([]);
    }
  });

  it("weak: 'unsafe-inline' / 'unsafe-eval' in script-src or its default-src fallback", () => {
    expect(
      ids({
        "content-security-policy": `${STRICT}; script-src 'self' 'unsafe-inline' 'unsafe-eval'`,
      }),
    ).toEqual(["csp-unsafe-inline", "csp-unsafe-eval"]);
    expect(
      ids({
        "content-security-policy":
          "default-src 'self' 'unsafe-inline'; object-src 'none'; base-uri 'none'",
      }),
    ).toEqual(["csp-unsafe-inline"]);
    // script-src decides, default-src is only its fallback.
    expect(
      ids({
        "content-security-policy":
          "default-src 'unsafe-inline'; script-src 'self'; object-src 'none'; base-uri 'none'",
      }),
    ).toEqual([]);
  });

  it("weak: a source that lets any host or scheme run script, in script-src or its fallback", () => {
    for (const any of [
      "*",
      "https:",
      "http:",
      "data:",
      "HTTPS:",
      "https://*",
      // A host of `*` matches every host, whatever its port or path.
      "https://*:443",
      "*:*",
      "http://*/js/",
    ]) {
      expect(ids({ "content-security-policy": `${STRICT}; script-src 'self' ${any}` })).toEqual([
        "csp-script-any-source",
      ]);
    }
    const r = judgeOthers(
      evidenceOf({
        "content-security-policy":
          "default-src 'self' https: data:; object-src 'none'; base-uri 'none'",
      }),
    );
    expect(idsOf(r)).toEqual(["csp-script-any-source"]);
    expect(r[0]?.message).toContain("(`https:`, `data:`)");
    // With 'unsafe-inline' too: both said, at the same severity.
    expect(
      ids({ "content-security-policy": `${STRICT}; script-src 'unsafe-inline' https:` }),
    ).toEqual(["csp-unsafe-inline", "csp-script-any-source"]);
  });

  it("good: hosts named, a scheme source outside scripts, or 'strict-dynamic' (hosts ignored)", () => {
    const good = [
      `${STRICT}; script-src 'self' https://cdn.site.test`,
      // A wildcard subdomain is not every host.
      `${STRICT}; script-src 'self' https://*.site.test:443`,
      `${STRICT}; img-src https: data:`,
      `${STRICT}; script-src 'nonce-abc' 'strict-dynamic' https: 'unsafe-inline'`,
      // script-src decides: the wide default-src is not its fallback here.
      "default-src *; script-src 'self'; object-src 'none'; base-uri 'none'",
    ];
    for (const policy of good) expect(ids({ "content-security-policy": policy })).toEqual([]);
    // Two policies: a script must pass both, so one that names hosts closes it.
    expect(ids({ "content-security-policy": [`${STRICT}; script-src https:`, STRICT] })).toEqual(
      [],
    );
  });

  it("weak: no object-src / base-uri hardening; a policy that does not restrict scripts", () => {
    expect(ids({ "content-security-policy": "default-src 'self'" })).toEqual([
      "csp-no-object-src",
      "csp-no-base-uri",
    ]);
    const r = judgeOthers(evidenceOf({ "content-security-policy": "frame-ancestors 'none'" }));
    expect(idsOf(r)).toEqual(["csp-unsafe-inline", "csp-no-object-src", "csp-no-base-uri"]);
    expect(r[0]?.message).toMatch(/does not restrict scripts/);
  });

  it("several policies are all enforced: a weakness counts only if every policy has it", () => {
    expect(
      ids({
        "content-security-policy": [`script-src 'unsafe-inline'`, STRICT],
      }),
    ).toEqual([]);
    expect(ids({ "content-security-policy": `script-src 'unsafe-inline', ${STRICT}` })).toEqual([]);
  });

  it("invalid: a header with no known directive protects nothing (and is not 'missing')", () => {
    for (const bad of [" ; ;", "default-src: 'self'", "self", "'self' 'unsafe-inline'"]) {
      const r = idsOf(judge(evidenceOf({ "content-security-policy": bad })));
      expect(r, bad).toContain("csp-invalid");
      expect(r, bad).not.toContain("csp-missing");
      expect(r, bad).not.toContain("csp-unsafe-inline");
    }
  });

  it("Report-Only alone protects nothing: csp-missing and csp-report-only", () => {
    const r = idsOf(judge(evidenceOf({ "content-security-policy-report-only": STRICT })));
    expect(r).toContain("csp-missing");
    expect(r).toContain("csp-report-only");
    expect(
      ids({ "content-security-policy": STRICT, "content-security-policy-report-only": STRICT }),
    ).toEqual([]);
  });

  it("a <meta> policy counts, is judged, and is said to be one", () => {
    expect(ids({}, [STRICT])).toEqual(["csp-in-meta"]);
    expect(ids({}, ["default-src 'self' 'unsafe-eval'"])).toEqual([
      "csp-unsafe-eval",
      "csp-no-object-src",
      "csp-no-base-uri",
      "csp-in-meta",
    ]);
    const all = idsOf(
      judge(
        evidenceOf(
          {},
          { page: { metaCsp: [STRICT], scripts: [], insecure: [], metaReferrer: [] } },
        ),
      ),
    );
    expect(all).not.toContain("csp-missing");
    // frame-ancestors in a meta tag is ignored by browsers: X-Frame-Options is still missing.
    expect(all).toContain("x-frame-options-missing");
  });

  it("a <meta> policy without frame-ancestors, report-uri and sandbox; one left empty is none", () => {
    for (const meta of [
      "frame-ancestors 'none'",
      "report-uri /csp",
      "sandbox; frame-ancestors 'self'",
    ]) {
      const all = idsOf(
        judge(
          evidenceOf(
            {},
            { page: { metaCsp: [meta], scripts: [], insecure: [], metaReferrer: [] } },
          ),
        ),
      );
      expect(all, meta).toContain("csp-missing");
      expect(all, meta).toContain("x-frame-options-missing");
      expect(all, meta).not.toContain("csp-in-meta");
    }
    // What is left is judged: the sandbox of a meta policy restricts nothing.
    expect(ids({}, ["sandbox; script-src 'self'; object-src 'none'; base-uri 'none'"])).toEqual([
      "csp-in-meta",
    ]);
  });

  it("frame-ancestors in the header waives x-frame-options-missing", () => {
    expect(idsOf(judge(evidenceOf({ "content-security-policy": STRICT })))).not.toContain(
      "x-frame-options-missing",
    );
    expect(
      idsOf(
        judge(evidenceOf({ "content-security-policy": "default-src 'self'; frame-ancestors *" })),
      ),
    ).toContain("x-frame-options-missing");
  });

  it("frame-ancestors with a source matching any host protects nothing", () => {
    const xfo = (csp: string | string[], headers: Record<string, string> = {}) =>
      idsOf(judge(evidenceOf({ "content-security-policy": csp, ...headers }))).filter((id) =>
        id.startsWith("x-frame-options"),
      );
    const withSources = (sources: string) =>
      STRICT.replace("frame-ancestors 'none'", `frame-ancestors ${sources}`);
    for (const open of [
      "https:",
      "HTTP:",
      "https://*",
      "'self' *",
      "'self' http://*/",
      "https://*:443",
    ]) {
      const csp = withSources(open);
      expect(xfo(csp), open).toEqual(["x-frame-options-missing"]);
      // Browsers ignore X-Frame-Options beside frame-ancestors (HTML): DENY protects nothing.
      expect(xfo(csp, { "x-frame-options": "DENY" }), open).toEqual(["x-frame-options-invalid"]);
    }
    const [f] = judge(
      evidenceOf({
        "content-security-policy": "frame-ancestors https:",
        "x-frame-options": "DENY",
      }),
    ).filter((x) => x.id === "x-frame-options-invalid");
    expect(f?.message).toContain("lets any site frame the page (`https:`)");
    // Named hosts protect; so does one policy that protects beside one that does not.
    expect(xfo(withSources("'self' https://partner.test"))).toEqual([]);
    expect(xfo([`default-src 'self'; frame-ancestors https:`, STRICT])).toEqual([]);
  });

  it("a broad object-src (any host or a whole scheme) restricts no plugin: csp-object-any-source", () => {
    const object = (list: string) =>
      judgeOthers(
        evidenceOf({
          "content-security-policy": STRICT.replace("object-src 'none'", `object-src ${list}`),
        }),
      );
    for (const broad of ["*", "https:", "http:", "data:", "blob:", "https://*", "'self' *:*"]) {
      const f = object(broad);
      expect(idsOf(f), broad).toEqual(["csp-object-any-source"]);
      expect(f[0]?.severity).toBe("medium");
    }
    expect(object("https: data:")[0]?.message).toContain("(`https:`, `data:`)");
    for (const closed of ["'none'", "'self'", "https://cdn.site.test", "https://*.site.test"]) {
      expect(idsOf(object(closed)), closed).toEqual([]);
    }
    // Another policy that restricts plugins is enough.
    expect(ids({ "content-security-policy": [`${STRICT}, object-src *`] })).toEqual([]);
  });

  it("plugins are blocked by a default-src that allows no URL: no csp-no-object-src", () => {
    for (const blocked of ["default-src", "default-src 'none'", "default-src 'unsafe-inline'"]) {
      expect(
        ids({ "content-security-policy": `${blocked}; script-src 'self'; base-uri 'none'` }),
        blocked,
      ).toEqual([]);
    }
    for (const open of [
      "default-src 'self'",
      "default-src 'unsafe-inline' https://cdn.site.test",
    ]) {
      expect(
        ids({ "content-security-policy": `${open}; script-src 'self'; base-uri 'none'` }),
        open,
      ).toEqual(["csp-no-object-src"]);
    }
  });

  it("form-action, which has no default-src fallback: missing or open to any host is said, as info", () => {
    const form = (policy: string) => judgeCsp(evidenceOf({ "content-security-policy": policy }));
    const [missing] = form("default-src 'none'; base-uri 'none'");
    expect(missing).toMatchObject({ id: "csp-no-form-action", severity: "info" });
    for (const open of ["*", "https:", "'self' https://*"]) {
      const f = form(`default-src 'none'; base-uri 'none'; form-action ${open}`);
      expect(idsOf(f), open).toEqual(["csp-no-form-action"]);
      expect(f[0]?.message).toMatch(/lets forms submit to any host, so it restricts nothing/);
    }
    for (const closed of ["'none'", "'self'", "https://login.site.test"]) {
      expect(idsOf(form(`default-src 'none'; base-uri 'none'; form-action ${closed}`))).toEqual([]);
    }
    // In a <meta> policy too: form-action is enforced there.
    expect(
      idsOf(
        judgeCsp(
          evidenceOf(
            {},
            {
              page: {
                metaCsp: ["default-src 'none'; base-uri 'none'; form-action 'self'"],
                scripts: [],
                insecure: [],
                metaReferrer: [],
              },
            },
          ),
        ),
      ),
    ).toEqual(["csp-in-meta"]);
  });
});
