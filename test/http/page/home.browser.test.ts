/**
 * The page, its scan form and the API reference in Debian's Chromium, headless: what a person
 * sees, with no console error, no failed request and no CSP violation. Screenshots go to
 * test-results/; with SECSNAP_SCREENSHOTS=1 the page's are written to docs/screenshots/ instead
 * (the committed set, refreshed only when asked: docs/http-api.md "Screenshots").
 */
import { mkdirSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKS, demoSnapshot } from "../../../src/snapshot/index.js";
import { systemBinary } from "../../fixtures/system-binary.js";
import { ScriptedEngine, sampleResult, serveApp, type Served } from "../helpers.js";
import { PRICE_UNITS, startScanServices, type ScanServices } from "./scan-services.js";

const chromiumPath = systemBinary("chromium", "chromium");
const SCREENSHOTS = "test-results";
/** The committed screenshots, rewritten only with SECSNAP_SCREENSHOTS=1. */
const DOCS_SCREENSHOTS =
  process.env.SECSNAP_SCREENSHOTS === "1" ? "docs/screenshots" : `${SCREENSHOTS}/docs`;
/** A narrow phone. */
const PHONE = { width: 360, height: 740 };
/** Bounds on launch and on each navigation, so a stuck browser fails the test, never hangs it. */
const LAUNCH_MS = 30_000;
const NAVIGATION_MS = 20_000;
/** The reference's rendering, on a busy machine. */
const REFERENCE_MS = 60_000;

describe.skipIf(!chromiumPath)("the page in Chromium", () => {
  let served: Served;
  let browser: Browser;

  beforeAll(async () => {
    served = await serveApp({ engine: new ScriptedEngine(async (raw) => sampleResult(raw)) });
    browser = await chromium.launch({
      executablePath: chromiumPath as string,
      args: ["--no-sandbox"],
      headless: true,
      timeout: LAUNCH_MS,
    });
    mkdirSync(SCREENSHOTS, { recursive: true });
    mkdirSync(DOCS_SCREENSHOTS, { recursive: true });
  }, LAUNCH_MS + 10_000);

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
  });

  /** A fresh page that records every console error, page error and failed request. */
  async function openPage(): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage();
    page.setDefaultTimeout(NAVIGATION_MS);
    const problems: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warning") {
        problems.push(`console ${m.type()}: ${m.text()}`);
      }
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
    page.on("response", (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
    });
    return { page, problems };
  }

  it("shows the demo's grade, its ten checks and its findings, with no error", async () => {
    const demo = demoSnapshot();
    const { page, problems } = await openPage();
    try {
      const response = await page.goto(`${served.url}/`, { waitUntil: "load" });
      expect(response?.status()).toBe(200);
      await page.screenshot({ path: `${SCREENSHOTS}/page.png`, fullPage: true });

      const demoSection = page.locator("#demo");
      expect(await demoSection.locator("[data-grade]").innerText()).toBe(demo.grade);
      expect(await demoSection.locator("[data-score]").innerText()).toBe(String(demo.score));
      const checks = demoSection.locator("li[data-check]");
      expect(await checks.count()).toBe(CHECKS.length);
      for (const check of CHECKS) {
        const row = page.locator(`li[data-check="${check.name}"]`);
        const value = demo.checks[check.name];
        const mark = value === true ? "✓" : value === false ? "✗" : "?";
        expect(await row.innerText()).toMatch(new RegExp(`^${mark}\\s+${escape(check.label)}$`));
      }
      const findings = demoSection.locator("li[data-finding]");
      expect(
        await findings.evaluateAll((els) => els.map((e) => e.getAttribute("data-finding"))),
      ).toEqual(demo.findings.map((f) => f.id));
      for (const f of demo.findings) {
        const text = await page.locator(`li[data-finding="${f.id}"]`).innerText();
        // Inline code is rendered, so the backticks are gone from what one reads.
        expect(text).toContain(f.message.replaceAll("`", ""));
        expect(text).toContain(f.recommendation.replaceAll("`", ""));
        expect(text).not.toContain("`");
      }
      expect(await page.getByText("0.05 USDC", { exact: true }).count()).toBe(1);
      // The reference is linked near the top: in the first screenful.
      const reference = page.getByRole("link", { name: "Interactive API reference" });
      expect(await reference.getAttribute("href")).toBe("/reference");
      const box = await reference.boundingBox();
      expect(box!.y).toBeLessThan(page.viewportSize()!.height / 2);
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("fits a phone's width, and follows the dark colour scheme", async () => {
    const backgrounds: string[] = [];
    for (const colorScheme of ["light", "dark"] as const) {
      const page = await browser.newPage({ viewport: PHONE, colorScheme });
      page.setDefaultTimeout(NAVIGATION_MS);
      try {
        await page.goto(`${served.url}/`, { waitUntil: "load" });
        // Long lines scroll inside their code blocks; the page itself never scrolls sideways.
        const overflow = await page.evaluate<number>(
          "document.documentElement.scrollWidth - document.documentElement.clientWidth",
        );
        expect(overflow).toBe(0);
        // Code wraps: no block needs a scrollbar.
        const scrolling = await page.evaluate<number>(
          "[...document.querySelectorAll('pre')].filter((p) => p.scrollWidth > p.clientWidth).length",
        );
        expect(scrolling).toBe(0);
        backgrounds.push(
          await page.evaluate<string>("getComputedStyle(document.body).backgroundColor"),
        );
        await page.screenshot({ path: `${SCREENSHOTS}/page-phone-${colorScheme}.png` });
      } finally {
        await page.close();
      }
    }
    expect(backgrounds[0]).toBe("rgb(255, 255, 255)");
    expect(backgrounds[1]).not.toBe(backgrounds[0]);
  });

  it("the reference loads /openapi.json and renders the paid operation, with no error", async () => {
    const { page, problems } = await openPage();
    try {
      const document = page.waitForResponse((r) => new URL(r.url()).pathname === "/openapi.json");
      const response = await page.goto(`${served.url}/reference`, { waitUntil: "load" });
      expect(response?.status()).toBe(200);
      expect((await document).status()).toBe(200);
      const operation = page
        .getByRole("heading", { name: /Run a live security snapshot of one URL/ })
        .first();
      await operation.waitFor({ state: "visible" });
      await page
        .getByText("/v1/snapshot")
        .filter({ visible: true })
        .first()
        .waitFor({ state: "visible" });
      await page.screenshot({ path: `${SCREENSHOTS}/reference.png` });
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });
});

describe.skipIf(!chromiumPath)(
  "the scan form and the reference in Chromium, over the devnet",
  () => {
    let services: ScanServices;
    let browser: Browser;

    beforeAll(async () => {
      services = await startScanServices({ perMinute: 100 });
      browser = await chromium.launch({
        executablePath: chromiumPath as string,
        args: ["--no-sandbox"],
        headless: true,
        timeout: LAUNCH_MS,
      });
      mkdirSync(DOCS_SCREENSHOTS, { recursive: true });
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await services?.close();
    });

    async function openPage(viewport = { width: 1100, height: 900 }) {
      const page = await browser.newPage({ viewport });
      page.setDefaultTimeout(NAVIGATION_MS);
      const problems: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error" || m.type() === "warning") problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(e.message));
      page.on("requestfailed", (r) => problems.push(`failed: ${r.url()}`));
      return { page, problems };
    }

    it("in devnet mode pays from the funded account and renders the report; money moves on chain", async () => {
      const before = {
        payer: await services.balance(services.payer),
        payTo: await services.balance(services.devnet.payTo),
      };
      const { page, problems } = await openPage();
      try {
        await page.goto(`${services.devnetUrl}/`, { waitUntil: "load" });
        await page.screenshot({ path: `${DOCS_SCREENSHOTS}/page-devnet.png` });
        await page.getByLabel(/Scans a URL/).fill(services.hostileUrl);
        await Promise.all([
          page.waitForURL(`${services.devnetUrl}/demo/pay-and-scan`),
          page.getByRole("button", { name: "Pay and scan" }).click(),
        ]);
        const result = page.locator("#result");
        expect(await result.getAttribute("data-outcome")).toBe("report");
        expect(await result.locator("[data-grade]").innerText()).toMatch(/^[A-F][+-]?$/);
        expect(await result.locator("li[data-check]").count()).toBeGreaterThan(0);
        expect(await result.locator("li[data-finding]").count()).toBeGreaterThan(0);
        expect(await result.locator("[data-receipt]").innerText()).toMatch(/^Paid 0\.05 USDC/);
        expect(await result.locator("[data-verified]").isVisible()).toBe(true);
        await result.screenshot({ path: `${DOCS_SCREENSHOTS}/page-report.png` });
        expect(await services.balance(services.payer)).toBe(before.payer - PRICE_UNITS);
        expect(await services.balance(services.devnet.payTo)).toBe(before.payTo + PRICE_UNITS);
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    });

    it("fits a phone, form and all", async () => {
      const { page, problems } = await openPage(PHONE);
      try {
        await page.goto(`${services.devnetUrl}/`, { waitUntil: "load" });
        const overflow = await page.evaluate<number>(
          "document.documentElement.scrollWidth - document.documentElement.clientWidth",
        );
        expect(overflow).toBe(0);
        await page.getByRole("button", { name: "Pay and scan" }).waitFor({ state: "visible" });
        await page.screenshot({ path: `${DOCS_SCREENSHOTS}/page-mobile.png` });
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    });

    it("in production mode shows the 402 challenge: price, network, payee, and how to pay", async () => {
      const before = await services.balance(services.payer);
      const { page, problems } = await openPage();
      try {
        await page.goto(`${services.productionUrl}/`, { waitUntil: "load" });
        await page.getByLabel(/Shows the payment/).fill(services.hostileUrl);
        await Promise.all([
          page.waitForURL(`${services.productionUrl}/demo/challenge`),
          page.getByRole("button", { name: "Show the payment" }).click(),
        ]);
        const result = page.locator("#result");
        expect(await result.getAttribute("data-outcome")).toBe("challenge");
        expect(await result.locator("[data-price]").innerText()).toBe("0.05 USDC");
        expect(await result.locator("[data-network]").innerText()).toContain("eip155:84532");
        expect(await result.locator("[data-pay-to]").innerText()).toBe(services.devnet.payTo);
        expect(await result.locator('[data-sample="cli"]').innerText()).toContain(
          `./bin/secsnap.js pay ${services.hostileUrl}`,
        );
        await result.screenshot({ path: `${DOCS_SCREENSHOTS}/page-challenge.png` });
        expect(await services.balance(services.payer)).toBe(before);
        expect(problems).toEqual([]);
      } finally {
        await page.close();
      }
    });

    it(
      "the reference in devnet mode shows the demo report, real errors and the devnet's challenge",
      async () => {
        const { page } = await openPage();
        // Scalar's 3 MB script renders slowly on a busy machine.
        page.setDefaultTimeout(REFERENCE_MS);
        try {
          await page.goto(`${services.devnetUrl}/reference`, { waitUntil: "load" });
          const tab = (status: string) =>
            page.getByRole("tab", { name: new RegExp(`STATUS:\\s*${status}`, "i") }).first();
          await tab("200").waitFor({ state: "visible" });
          const shown = () => page.evaluate<string>("document.body.innerText");
          // Scalar invents values from the schema where there is no example (MIN_SAFE_INTEGER…).
          expect(await shown()).toContain('"final_status_code": 200');
          expect(await shown()).toContain(`"grade": "${demoSnapshot().grade}"`);
          expect(await shown()).not.toContain("9007199254740991");
          await tab("400").click();
          await page.getByText('"error_type": "ssrf"').first().waitFor({ state: "visible" });
          await tab("402").click();
          await page.getByText('"network": "base-sepolia"').first().waitFor({ state: "visible" });
          expect(await shown()).toContain(`"payTo": "${services.devnet.payTo}"`);
          expect(await shown()).not.toMatch(/eip155:8453(?!2)|"network": "base"/);
        } finally {
          await page.close();
        }
      },
      2 * REFERENCE_MS,
    );
  },
);

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
