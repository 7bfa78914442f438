import { createHash } from "node:crypto";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { Parser } from "htmlparser2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../../src/http/index.js";
import { renderPage } from "../../../src/http/page/home.js";
import {
  CHECKS,
  createUrlPolicy,
  demoSnapshot,
  type SnapshotResult,
} from "../../../src/snapshot/index.js";
import { startDnsServer } from "../../fixtures/dns-server.js";
import { PUBLIC_HOST, createTestEngine } from "../../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../../fixtures/tls.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult, serveApp, type Served } from "../helpers.js";

const engine = new ScriptedEngine(async (raw) => sampleResult(raw));
let served: Served;

beforeAll(async () => {
  served = await serveApp({ engine });
});
afterAll(() => served.stop());

/** The text of every element matching `name`, and the attributes of each. */
function elements(
  document: string,
  name: string,
): { text: string; attrs: Record<string, string> }[] {
  const found: { text: string; attrs: Record<string, string> }[] = [];
  let open: { text: string; attrs: Record<string, string> } | null = null;
  const parser = new Parser({
    onopentag(tag, attrs) {
      if (tag === name) open = { text: "", attrs };
    },
    ontext(text) {
      if (open) open.text += text;
    },
    onclosetag(tag) {
      if (tag === name && open) {
        found.push(open);
        open = null;
      }
    },
  });
  parser.end(document);
  return found;
}

function directives(csp: string): Map<string, string[]> {
  return new Map(
    csp.split(";").map((d) => {
      const [name = "", ...values] = d.trim().split(/\s+/);
      return [name, values] as const;
    }),
  );
}

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

/** A report with a finding of each severity, in a scrambled order, one of them hostile. */
function reportWithFindings(): SnapshotResult {
  return {
    ...sampleResult("https://example.com"),
    findings: [
      {
        id: "t-low",
        check: "csp",
        severity: "low",
        message: "Low one.",
        recommendation: "Do low.",
      },
      {
        id: "t-high",
        check: "hsts",
        severity: "high",
        message: "High <script>alert(1)</script> one.",
        recommendation: "Set `Strict-Transport-Security: max-age=31536000`.",
      },
      {
        id: "t-info",
        check: "cors",
        severity: "info",
        message: "Info one.",
        recommendation: "Nothing.",
      },
      {
        id: "t-med",
        check: "csp",
        severity: "medium",
        message: "Medium one.",
        recommendation: "Do medium.",
      },
    ],
    score: 60,
    grade: "C+",
  };
}

describe("GET / (the page)", () => {
  it("is HTML with the six security headers, a CSP without inline scripts, cacheable", async () => {
    const res = await fetch(`${served.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    expect(res.headers.get("strict-transport-security")).toMatch(
      /max-age=\d{8}; includeSubDomains/,
    );
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    // The form's post keeps its Origin (null under no-referrer); other origins learn nothing.
    expect(res.headers.get("referrer-policy")).toBe("same-origin");
    expect(res.headers.get("permissions-policy")).toContain("camera=()");
    const csp = directives(res.headers.get("content-security-policy") ?? "");
    expect(csp.get("default-src")).toEqual(["'none'"]);
    expect(csp.has("script-src")).toBe(false); // no script at all: default-src 'none' holds
    expect(csp.get("frame-ancestors")).toEqual(["'none'"]);
    expect(csp.get("object-src")).toEqual(["'none'"]);
    expect(csp.get("base-uri")).toEqual(["'none'"]);

    const body = await res.text();
    expect(elements(body, "script")).toEqual([]);
    // The one inline stylesheet is exactly what the CSP's hash allows, and nothing else is.
    const styles = elements(body, "style");
    expect(styles).toHaveLength(1);
    expect(csp.get("style-src")).toEqual([sha256(styles[0]!.text)]);
    // No resource from another origin: the one linked resource is the service's own icon.
    const links = elements(body, "link");
    expect(links.map((link) => link.attrs.href)).toEqual(["/favicon.svg"]);
    expect(csp.get("img-src")).toContain("'self'");
  });

  it("renders the demo: its grade, score, each of the ten checks and its findings", async () => {
    const demo = demoSnapshot();
    const body = await (await fetch(`${served.url}/`)).text();
    expect(elements(body, "strong").map((e) => e.text)).toContain(demo.grade);
    const checks = elements(body, "li").filter((li) => li.attrs["data-check"] !== undefined);
    expect(checks.map((li) => li.attrs["data-check"])).toEqual(Object.keys(demo.checks));
    const marks = elements(body, "span")
      .filter((s) => s.attrs.class?.startsWith("mark"))
      .map((s) => s.text);
    const expected = Object.values(demo.checks).map((v) =>
      v === true ? "✓" : v === false ? "✗" : "?",
    );
    expect(marks).toEqual(expected);
    const findings = elements(body, "li").filter((li) => li.attrs["data-finding"] !== undefined);
    expect(findings.map((li) => li.attrs["data-finding"])).toEqual(demo.findings.map((f) => f.id));
  });

  it("states the configured price and networks, and how to pay with both x402 generations", async () => {
    const app = createApp({
      engine,
      urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
      priceUsdc: "0.07",
      networks: ["eip155:84532"],
      devnet: true,
      publicUrl: "https://snap.example/tools",
    });
    const body = await (await app.request("http://localhost/")).text();
    expect(body).toContain("<strong>0.07 USDC</strong>");
    expect(body).toContain("Base Sepolia (eip155:84532), here the local devnet");
    expect(body).not.toContain("eip155:8453)");
    // In devnet mode secsnap pay needs no key; it is run from the clone.
    expect(body).toContain(
      '<code data-sample="cli">./bin/secsnap.js pay https://example.com --api https://snap.example/tools',
    );
    // The package is not published: whoever took that name would get the payer's key.
    expect(body).not.toContain("npx secsnap");
    expect(body).toContain("from &quot;@x402/fetch&quot;");
    expect(body).toContain("from &quot;x402-fetch&quot;");
    expect(body).toContain("https://snap.example/tools/v1/snapshot");

    // Without PUBLIC_URL the samples name the URL the page was asked at.
    const local = await (await fetch(`${served.url}/`)).text();
    expect(local).toContain(
      `SECSNAP_PRIVATE_KEY=0x… ./bin/secsnap.js pay https://example.com --api ${served.url}`,
    );
    expect(local).toContain("Base (eip155:8453) or Base Sepolia (eip155:84532)");
  });

  it("answers HEAD, and 405 with Allow to other methods", async () => {
    const head = await fetch(`${served.url}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    const post = await fetch(`${served.url}/`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toMatch(/GET/);
  });
});

describe("renderPage", () => {
  it("lists findings most severe first, with message and recommendation, all escaped", () => {
    const report = reportWithFindings();
    const page = renderPage({
      priceUsdc: "0.05",
      networks: ["eip155:8453"],
      devnet: false,
      serviceUrl: "https://x.example",
      report,
    });
    const findings = elements(page, "li").filter((li) => li.attrs["data-finding"] !== undefined);
    expect(findings.map((li) => li.attrs["data-finding"])).toEqual([
      "t-high",
      "t-med",
      "t-low",
      "t-info",
    ]);
    expect(findings.map((li) => li.attrs.class)).toEqual([
      "sev-high",
      "sev-medium",
      "sev-low",
      "sev-info",
    ]);
    expect(findings[0]!.text).toContain("High");
    expect(findings[0]!.text).toContain("High <script>alert(1)</script> one.");
    expect(findings[0]!.text).toContain("Fix: Set Strict-Transport-Security: max-age=31536000.");
    // Inline code is <code>, not literal backticks.
    expect(page).toContain("Fix: Set <code>Strict-Transport-Security: max-age=31536000</code>.");
    expect(page).not.toContain("`");
    // The hostile message is text, never markup.
    expect(page).toContain("High &lt;script&gt;alert(1)&lt;/script&gt; one.");
    expect(elements(page, "script")).toEqual([]);
    expect(elements(page, "strong").map((e) => e.text)).toContain("C+");
    expect(page).toMatch(/score <b data-score>60<\/b> \/ 100/);
  });

  it("says so when there are no findings", () => {
    const page = renderPage({
      priceUsdc: "0.05",
      networks: ["eip155:8453"],
      devnet: false,
      serviceUrl: "https://x.example",
      report: sampleResult("https://example.com"),
    });
    expect(page).toContain("No findings.");
  });
});

describe("the page's samples, links and form", () => {
  const payer = {
    index: 2,
    address: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
    privateKey: "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  } as const;
  const appWith = (deps: { devnet: boolean }) =>
    createApp({
      engine,
      urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
      networks: ["eip155:84532"],
      devnetPayer: payer,
      ...deps,
    });

  it("in devnet mode names the funded devnet account the samples and the form pay from", async () => {
    const body = await (await appWith({ devnet: true }).request("http://localhost/")).text();
    const js = elements(body, "code").find((c) => c.attrs["data-sample"] === "js")!.text;
    expect(js).toContain(`funded test account 2 (${payer.address})`);
    expect(js).toContain(payer.privateKey);
    const form = elements(body, "form")[0]!;
    expect(form.attrs).toMatchObject({ method: "post", action: "/demo/pay-and-scan" });
    expect(elements(body, "input")[0]!.attrs).toMatchObject({ name: "url", required: "" });
  });

  it("outside devnet mode names no key, and its form only shows the challenge", async () => {
    const app = appWith({ devnet: false });
    const body = await (await app.request("http://localhost/")).text();
    expect(body).not.toContain(payer.privateKey);
    expect(body).not.toContain(payer.address);
    expect(elements(body, "form")[0]!.attrs.action).toBe("/demo/challenge");
    const res = await app.request("http://localhost/demo/pay-and-scan", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: "http://localhost" },
      body: "url=https%3A%2F%2Fexample.com",
    });
    expect(res.status).toBe(404);
  });

  it("links the reference before the first section, and lets the form post only here", async () => {
    const res = await fetch(`${served.url}/`);
    const csp = directives(res.headers.get("content-security-policy") ?? "");
    expect(csp.get("form-action")).toEqual(["'self'"]);
    const body = await res.text();
    expect(body.indexOf('href="/reference"')).toBeGreaterThan(0);
    expect(body.indexOf('href="/reference"')).toBeLessThan(body.indexOf("<h2>"));
    // Code blocks wrap: no sample needs a scrollbar.
    expect(elements(body, "style")[0]!.text).toMatch(/pre\{[^}]*white-space:pre-wrap/);
  });

  it("refuses a form post from another origin, and an empty one", async () => {
    const post = (origin: string, body: string) =>
      fetch(`${served.url}/demo/challenge`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin },
        body,
      });
    expect((await post("https://evil.example", "url=https%3A%2F%2Fexample.com")).status).toBe(403);
    const empty = await post(served.url, "url=");
    expect(empty.status).toBe(400);
    expect(empty.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(await empty.text()).toContain("<code>invalid_url</code>");
  });
});

describe("renderPage", () => {
  const facts = {
    priceUsdc: "0.05",
    networks: ["eip155:8453"],
    devnet: false,
    serviceUrl: "https://x.example",
  };

  it("renders inline code as <code>, escaping what is inside and around it", () => {
    const report = reportWithFindings();
    report.findings[0]!.message = "Sent `<img src=x onerror=alert(1)>` as <b>header</b>.";
    report.notes = ["Note with `code` and <i>markup</i>."];
    const page = renderPage({ ...facts, report });
    expect(page).toContain(
      "Sent <code>&lt;img src=x onerror=alert(1)&gt;</code> as &lt;b&gt;header&lt;/b&gt;.",
    );
    expect(page).toContain("<li>Note with <code>code</code> and &lt;i&gt;markup&lt;/i&gt;.</li>");
    expect(elements(page, "img")).toEqual([]);
  });

  it("renders checks, findings and sections it does not know, from the report's JSON", () => {
    const report = {
      ...sampleResult("https://example.com"),
      checks: { ...sampleResult("x").checks, tls_version: false },
      findings: [
        {
          id: "tls-old",
          check: "tls_version",
          severity: "medium",
          message: "TLS 1.0 is accepted.",
          recommendation: "Turn off `TLSv1`.",
        },
      ],
      tls: { version: "TLSv1.3", issuer: "<script>x</script>" },
    } as unknown as SnapshotResult;
    const page = renderPage({ ...facts, report });
    const checks = elements(page, "li").filter((li) => li.attrs["data-check"] !== undefined);
    expect(checks.at(-1)!.attrs["data-check"]).toBe("tls_version");
    expect(checks.at(-1)!.text).toContain("tls_version");
    expect(page).toContain('data-finding="tls-old"');
    expect(page).toContain('data-section="tls"');
    // A section of its own is a table of its fields, spelled out; a hostile value is text.
    expect(page).toContain('<th scope="row">Issuer</th><td>&lt;script&gt;x&lt;/script&gt;</td>');
    expect(elements(page, "script")).toEqual([]);
  });

  it("shows a challenge and a refusal with the submitted URL escaped", () => {
    const url = 'https://e.example/?q="><script>alert(1)</script>';
    const challenge = renderPage(
      { ...facts, report: sampleResult("x") },
      {
        kind: "challenge",
        url,
        offers: [
          {
            network: "eip155:8453",
            amount: "50000",
            asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            payTo: "0x1111111111111111111111111111111111111111",
          },
        ],
      },
    );
    expect(challenge).toContain("<dd data-price>0.05 USDC</dd>");
    expect(challenge).toContain("Base (<code>eip155:8453</code>)");
    const refused = renderPage(
      { ...facts, report: sampleResult("x") },
      { kind: "refused", url, status: 400, message: "bad <b>url</b>", errorType: "invalid_url" },
    );
    for (const page of [challenge, refused]) {
      expect(elements(page, "script")).toEqual([]);
      expect(page).toContain("q=&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
      expect(elements(page, "input")[0]!.attrs.value).toBe(url);
    }
    expect(refused).toContain("bad &lt;b&gt;url&lt;/b&gt;");
  });
});

describe("GET /reference (the API reference)", () => {
  it("is Scalar's page over /openapi.json, its script ours, under a CSP without CDN or eval", async () => {
    const res = await fetch(`${served.url}/reference`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    const csp = directives(res.headers.get("content-security-policy") ?? "");
    const body = await res.text();
    const scripts = elements(body, "script");
    const external = scripts.filter((s) => s.attrs.src !== undefined);
    expect(external).toHaveLength(1);
    const src = external[0]!.attrs.src!;
    expect(src).toMatch(/^\/reference\/scalar\.[0-9a-f]{16}\.js$/);
    expect(body).toContain('"url": "/openapi.json"');
    // Every inline script is allowed by its hash; no 'unsafe-inline' or 'unsafe-eval' for scripts.
    const scriptSrc = csp.get("script-src") ?? [];
    for (const inline of scripts.filter((s) => s.attrs.src === undefined)) {
      expect(scriptSrc).toContain(sha256(inline.text));
    }
    expect(scriptSrc).not.toContain("'unsafe-inline'");
    expect(scriptSrc).not.toContain("'unsafe-eval'");
    expect(csp.get("connect-src")).toEqual(["'self'"]);
    expect(csp.get("frame-ancestors")).toEqual(["'none'"]);

    const installed = readFileSync(
      createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js"),
    );
    const script = await fetch(`${served.url}${src}`, {
      headers: { "accept-encoding": "identity" },
    });
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(script.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(script.headers.get("content-encoding")).toBeNull();
    expect(Buffer.from(await script.arrayBuffer()).equals(installed)).toBe(true);

    // Gzipped once, in the background: a client that accepts gzip soon gets the same bytes in
    // about a third of the size.
    let gzipped: Response | undefined;
    for (let i = 0; i < 100 && !gzipped; i++) {
      const res = await fetch(`${served.url}${src}`, { headers: { "accept-encoding": "gzip" } });
      if (res.headers.get("content-encoding") === "gzip") gzipped = res;
      else {
        await res.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(gzipped?.headers.get("vary")).toMatch(/accept-encoding/i);
    const length = gzipped?.headers.get("content-length") ?? "";
    expect(length).toMatch(/^\d+$/);
    expect(Number(length)).toBeLessThan(installed.length / 2);
    // fetch decodes the body: the same bytes as the installed file.
    expect(Buffer.from(await gzipped!.arrayBuffer()).equals(installed)).toBe(true);
  });

  it("serves nothing else under /reference", async () => {
    const res = await fetch(`${served.url}/reference/scalar.js`);
    expect(res.status).toBe(404);
  });
});

describe("our own report of ourselves", () => {
  it("the engine, asking for / over HTTPS, finds all six headers and nothing to say of them", async () => {
    const ca = await loadTestCa();
    const dns = await startDnsServer({ "secsnap.test": { A: [PUBLIC_HOST] } });
    const cert = await issueLeaf(ca, { dnsNames: ["secsnap.test"] });
    const app = createApp({
      engine,
      urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    });
    const server = createHttpsServer(
      { cert: cert.certPem, key: cert.keyPem },
      getRequestListener((request) => app.fetch(request)),
    );
    server.listen(0, PUBLIC_HOST);
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const snapshots = createTestEngine({ dns, ports: [port] });
    try {
      const report = await snapshots.snapshot(`https://secsnap.test:${port}/`);
      expect(report.final_status_code).toBe(200);
      expect(report.https_ok).toBe(true);
      for (const check of CHECKS.filter((c) => c.kind === "header")) {
        expect(report[check.field], check.name).toBe(true);
      }
      // Whatever the judges of header values say of ours is a regression of the page.
      const headerChecks = new Set<string>(
        CHECKS.filter((c) => c.kind === "header").map((c) => c.name),
      );
      expect(report.findings.filter((f) => headerChecks.has(f.check))).toEqual([]);
    } finally {
      await snapshots.close();
      server.closeAllConnections();
      server.close();
      await dns.close();
    }
  });
});
