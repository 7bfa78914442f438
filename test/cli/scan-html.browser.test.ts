/**
 * `secsnap scan --format html` (docs/contract.md §8.5) in headless Chromium: one
 * self-contained page that loads nothing else, shows the grade and the judged checks, and prints
 * — made by the CLI against a real local site by name (a real DNS server).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { systemBinary } from "../fixtures/system-binary.js";
import { startFlawedSite, type FlawedSite } from "./flawed-site.js";
import { runCli } from "./run.js";

const chromiumPath = systemBinary("chromium", "chromium");

let flawed: FlawedSite;
let scratch: string;

beforeAll(async () => {
  flawed = await startFlawedSite();
  scratch = await mkdtemp(join(tmpdir(), "secsnap-scan-html-"));
});

afterAll(async () => {
  await flawed.close();
  await rm(scratch, { recursive: true, force: true });
});

const flawedByName = () => flawed.byName();

describe("formats", () => {
  it.skipIf(!chromiumPath)(
    "html: one self-contained page that loads nothing else, shows the grade and judged checks, and prints",
    { timeout: 60_000 },
    async () => {
      const file = join(scratch, "scan.html");
      const { code } = await runCli(
        ["scan", "--local", flawedByName(), "--format", "html", "--output", file],
        flawed.env,
      );
      expect(code).toBe(0);
      const report = SnapshotResultSchema.parse(
        JSON.parse((await runCli(["scan", "--local", flawedByName()], flawed.env)).stdout),
      );
      const browser = await chromium.launch({
        executablePath: chromiumPath as string,
        args: ["--no-sandbox"],
        headless: true,
      });
      try {
        const page = await browser.newPage();
        const requests: string[] = [];
        const problems: string[] = [];
        page.on("request", (r) => requests.push(r.url()));
        page.on("console", (m) => {
          if (m.type() === "error" || m.type() === "warning") problems.push(m.text());
        });
        const url = pathToFileURL(file).href;
        await page.goto(url, { waitUntil: "load" });
        expect(requests).toEqual([url]);
        expect(problems).toEqual([]);
        expect(await page.locator("[data-grade]").innerText()).toBe(report.grade);
        expect(await page.locator("[data-score]").innerText()).toBe(String(report.score));
        const state = (name: string) =>
          page.locator(`li[data-check="${name}"]`).getAttribute("data-state");
        expect(await state("x_frame_options")).toBe("flawed");
        expect(await state("x_content_type_options")).toBe("flawed");
        expect(await state("csp")).toBe("pass");
        expect(
          await page
            .locator('li[data-finding="x-frame-options-invalid"] [data-points]')
            .innerText(),
        ).toBe("−20 points");
        expect(
          await page.locator('table[data-section="cross_origin"] th').first().innerText(),
        ).toBe("Cross-Origin-Opener-Policy");
        const pdf = await page.pdf({ format: "A4" });
        expect(pdf.subarray(0, 5).toString()).toBe("%PDF-");
      } finally {
        await browser.close();
      }
    },
  );
});
