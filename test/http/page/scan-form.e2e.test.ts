/**
 * The page's scan form end to end (docs/http-api.md "The scan form"): in devnet mode it pays
 * from the funded devnet account on the server's side through the official x402 client and
 * renders the report — money checked on chain, a hostile site's strings escaped; in production
 * mode it shows the decoded 402 challenge and charges nothing.
 */
import { Parser } from "htmlparser2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PAYER } from "../../../src/devnet/constants.js";
import { HOSTILE, PRICE_UNITS, startScanServices, type ScanServices } from "./scan-services.js";

const PER_MINUTE = 6;
let services: ScanServices;

beforeAll(async () => {
  services = await startScanServices({ perMinute: PER_MINUTE });
}, 120_000);
afterAll(() => services?.close());

/** A form post as a browser sends it from the page. */
function submit(base: string, path: string, url: string, origin = base) {
  return fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin },
    body: new URLSearchParams({ url }).toString(),
  });
}

/** Tag names of every element in the document. */
function tags(document: string): string[] {
  const found: string[] = [];
  new Parser({ onopentag: (name) => found.push(name) }).end(document);
  return found;
}

describe("the scan form in devnet mode", () => {
  it("pays from the funded devnet account and renders the report, every hostile string escaped", async () => {
    const { devnet } = services;
    const before = {
      payer: await services.balance(services.payer),
      payTo: await services.balance(devnet.payTo),
    };
    // The submitted URL comes back in the report (`requested_url`), hostile as it was typed.
    const url = `${services.hostileUrl}?q="><script>alert(1)</script>`;
    const res = await submit(services.devnetUrl, "/demo/pay-and-scan", url);
    const page = await res.text();
    expect(res.status, page).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(page).toContain('data-outcome="report"');
    expect(page).toMatch(/<strong data-grade>[A-F][+-]?<\/strong>/);
    expect(page).toContain("data-check=");
    expect(page).toContain("data-finding=");
    expect(page).toMatch(/data-receipt>Paid 0\.05 USDC from <code>0x[0-9a-fA-F]{40}<\/code>/);
    // The badge names the report's proof, checked against the key the service serves.
    const { keys } = (await (
      await fetch(`${services.devnetUrl}/.well-known/jwks.json`)
    ).json()) as {
      keys: { kid: string }[];
    };
    expect(page).toMatch(
      new RegExp(
        `data-verified>✓ Verified</span> <span class="muted">signed by\nthis service's key <code>${keys[0]!.kid}</code>`,
      ),
    );
    expect(page).toMatch(/snapshot\n<code>[0-9a-f]{32}<\/code>/);
    // Money moved once: the devnet payer −0.05 USDC, the payee +0.05 USDC.
    expect(await services.balance(services.payer)).toBe(before.payer - PRICE_UNITS);
    expect(await services.balance(devnet.payTo)).toBe(before.payTo + PRICE_UNITS);
    // The `<script>` of the URL (and of the site's headers) is shown as text only.
    expect(page).toContain("q=&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(page).not.toContain(HOSTILE);
    expect(tags(page)).not.toContain("script");
  });

  it("shows no verified badge for a paid report whose proof does not verify against the page's key", async () => {
    const base = await services.serveDevnetCheckingAnotherKey();
    const before = await services.balance(services.payer);
    const res = await submit(base, "/demo/pay-and-scan", services.hostileUrl);
    const page = await res.text();
    expect(res.status, page).toBe(200);
    // Paid and shown, with its receipt, but the signature is not the key's: no badge.
    expect(page).toContain("data-receipt>Paid 0.05 USDC");
    expect(page).not.toContain("data-verified");
    expect(await services.balance(services.payer)).toBe(before - PRICE_UNITS);
  });

  it("refuses a blocked URL before payment, charging nothing", async () => {
    const before = await services.balance(services.payer);
    const res = await submit(services.devnetUrl, "/demo/pay-and-scan", "http://169.254.169.254/");
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toContain('data-outcome="refused"');
    expect(page).toContain("<code>ssrf</code>");
    expect(page).toContain("Nothing was charged.");
    expect(await services.balance(services.payer)).toBe(before);
  });

  it("names the funded devnet account on the page, and its form pays", async () => {
    const page = await (await fetch(`${services.devnetUrl}/`)).text();
    // The demo report is not paid for: no proof, no badge.
    expect(page).toContain('id="demo"');
    expect(page).not.toContain("data-verified");
    expect(page).toContain('action="/demo/pay-and-scan"');
    expect(page).toContain(DEFAULT_PAYER.address);
    expect(page).toContain(DEFAULT_PAYER.privateKey);
    expect(page).not.toMatch(/eip155:8453(?!2)|Base \(/);
  });

  it("refuses a form posted from another site", async () => {
    const before = await services.balance(services.payer);
    const res = await submit(
      services.devnetUrl,
      "/demo/pay-and-scan",
      services.hostileUrl,
      "https://evil.example",
    );
    expect(res.status).toBe(403);
    expect(await services.balance(services.payer)).toBe(before);
  });
});

describe("the devnet form's budget of failing scans", () => {
  it("is each client's own: one client's failing scans do not lock the form for another", async () => {
    // The devnet payer may cause 4 unpaid snapshots a minute; each client's form scans 2.
    const base = await services.serveDevnet({
      refusedPerPayerPerMinute: 4,
      failingFormScansPerClient: 2,
    });
    // Two clients behind the trusted proxy on 127.0.0.1 (TRUSTED_PROXIES), as X-Forwarded-For says.
    const scan = (client: string, url: string) =>
      fetch(`${base}/demo/pay-and-scan`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: base,
          "x-forwarded-for": client,
        },
        body: new URLSearchParams({ url }).toString(),
      });
    const before = await services.balance(services.payer);
    // Client A scans a closed port until the form refuses it: each one paid for, never charged.
    const statuses: number[] = [];
    let last: Response | undefined;
    while (statuses.length < 6 && last?.status !== 429) {
      last = await scan("192.0.2.1", services.closedUrl);
      statuses.push(last.status);
    }
    // Client B's scan is still paid from the devnet account and served.
    const other = await scan("192.0.2.2", services.hostileUrl);
    expect(other.status).toBe(200);
    expect(await other.text()).toContain('data-outcome="report"');
    expect(statuses).toEqual([400, 400, 429]);
    expect(last!.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    const refused = await last!.text();
    expect(refused).toContain("<code>rate_limited</code>");
    expect(refused).toContain("Nothing was charged.");
    expect(await services.balance(services.payer)).toBe(before - PRICE_UNITS);
  });
});

describe("the scan form in production mode", () => {
  it("shows the decoded 402 challenge and how to pay, charging nothing", async () => {
    const before = await services.balance(services.payer);
    const res = await submit(services.productionUrl, "/demo/challenge", services.hostileUrl);
    const page = await res.text();
    expect(res.status, page).toBe(200);
    expect(page).toContain('data-outcome="challenge"');
    expect(page).toContain("<dd data-price>0.05 USDC</dd>");
    expect(page).toContain(`<code>${services.devnet.network}</code>`);
    expect(page).toContain(`<dd data-pay-to><code>${services.devnet.payTo}</code></dd>`);
    // How to pay, for the URL submitted.
    expect(page).toContain(`./bin/secsnap.js pay ${services.hostileUrl}`);
    expect(await services.balance(services.payer)).toBe(before);
  });

  it("has no paying route, and its page no devnet key", async () => {
    const res = await submit(services.productionUrl, "/demo/pay-and-scan", services.hostileUrl);
    expect(res.status).toBe(404);
    const page = await (await fetch(`${services.productionUrl}/`)).text();
    expect(page).toContain('action="/demo/challenge"');
    expect(page).not.toContain(DEFAULT_PAYER.privateKey);
  });

  it("counts each form post against the client's budget of free answers", async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= PER_MINUTE; i++) {
      statuses.push((await submit(services.productionUrl, "/demo/challenge", "not a url")).status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, 2)).toEqual([400, 400]);
  });
});
