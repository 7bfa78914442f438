/**
 * The page and the API reference in Debian's Chromium, headless: what a person sees, with no
 * console error, no failed request and no CSP violation. Screenshots go to test-results/.
 */
import { mkdirSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKS, demoSnapshot } from "../../src/snapshot/index.js";
import { systemBinary } from "../fixtures/system-binary.js";
import { ScriptedEngine, sampleResult, serveApp, type Served } from "./helpers.js";

const chromiumPath = systemBinary("chromium", "chromium");
const SCREENSHOTS = "test-results";
/** Bounds on launch and on each navigation, so a stuck browser fails the test, never hangs it. */
const LAUNCH_MS = 30_000;
const NAVIGATION_MS = 20_000;

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

      expect(await page.locator("[data-grade]").innerText()).toBe(demo.grade);
      expect(await page.locator("[data-score]").innerText()).toBe(String(demo.score));
      const checks = page.locator("li[data-check]");
      expect(await checks.count()).toBe(CHECKS.length);
      for (const check of CHECKS) {
        const row = page.locator(`li[data-check="${check.name}"]`);
        const value = demo.checks[check.name];
        const mark = value === true ? "✓" : value === false ? "✗" : "?";
        expect(await row.innerText()).toMatch(new RegExp(`^${mark}\\s+${escape(check.label)}$`));
      }
      const findings = page.locator("li[data-finding]");
      expect(
        await findings.evaluateAll((els) => els.map((e) => e.getAttribute("data-finding"))),
      ).toEqual(demo.findings.map((f) => f.id));
      for (const f of demo.findings) {
        const text = await page.locator(`li[data-finding="${f.id}"]`).innerText();
        expect(text).toContain(f.message);
        expect(text).toContain(f.recommendation);
      }
      expect(await page.getByText("0.05 USDC", { exact: true }).count()).toBe(1);
      await expect(
        page.getByRole("link", { name: "Interactive API reference" }).getAttribute("href"),
      ).resolves.toBe("/reference");
      expect(problems).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it("fits a phone's width, and follows the dark colour scheme", async () => {
    const backgrounds: string[] = [];
    for (const colorScheme of ["light", "dark"] as const) {
      const page = await browser.newPage({ viewport: { width: 360, height: 740 }, colorScheme });
      page.setDefaultTimeout(NAVIGATION_MS);
      try {
        await page.goto(`${served.url}/`, { waitUntil: "load" });
        // Long lines scroll inside their code blocks; the page itself never scrolls sideways.
        const overflow = await page.evaluate<number>(
          "document.documentElement.scrollWidth - document.documentElement.clientWidth",
        );
        expect(overflow).toBe(0);
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

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
