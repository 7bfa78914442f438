/**
 * The grade's caps (docs/findings.md "Score and grade") through the engine, on real
 * targets: no working HTTPS is F, a site with no security header is D at best, and a check our
 * own settings stopped (the HTTPS probe's port not allowed) is not held against the site.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotResult } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { ALL_FINDINGS } from "../../src/snapshot/rules/registry.js";
import { PENALTY, gradeCapOf, gradeOf, scoreOf } from "../../src/snapshot/rules/score.js";
import type { Finding } from "../../src/snapshot/rules/finding.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { GOOD_HEADERS, SECURITY_TXT } from "../fixtures/finding-cases.js";
import {
  PUBLIC_HOST,
  closedPort,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

let dns: DnsFixture;
/** Plain HTTP with every good header and a security.txt; nothing HTTPS on its host. */
let plain: TargetServer;
/** HTTPS with no security header at all. */
let bare: TargetServer;
let refusedPort: number;

beforeAll(async () => {
  const ca = await loadTestCa();
  dns = await startDnsServer({ "site.test": { A: [PUBLIC_HOST] } });
  plain = await startHttpTarget({
    routes: { "/": respond.text("plain", GOOD_HEADERS), ...SECURITY_TXT },
  });
  bare = await startHttpsTarget({
    cert: await issueLeaf(ca, { dnsNames: ["site.test"], ips: [PUBLIC_HOST] }),
    routes: { "/": respond.text("no headers"), ...SECURITY_TXT },
  });
  refusedPort = await closedPort();
});

afterAll(async () => {
  await Promise.all([plain, bare, dns].map((s) => s.close()));
});

async function snap(
  url: string,
  ports: number[],
  httpsProbePort: number,
  httpProbePort = plain.port,
): Promise<SnapshotResult> {
  const engine = createTestEngine({ dns, ports, httpsProbePort, httpProbePort });
  try {
    const r = await engine.snapshot(url);
    expect(SnapshotResultSchema.parse(r)).toEqual(r);
    return r;
  } finally {
    await engine.close();
  }
}

const ids = (r: SnapshotResult) => r.findings.map((f) => f.id);

describe("the grade's caps", () => {
  it("no working HTTPS is F whatever the headers: the site refuses https://", async () => {
    const r = await snap(plain.url("/", "site.test"), [plain.port, refusedPort], refusedPort);
    expect(r.https_ok).toBe(false);
    // Its HSTS header, sent over plain HTTP only, is no HSTS to a browser.
    expect(ids(r)).toEqual(["http-only", "hsts-missing"]);
    // 100 − 25 − 20 is a C− by score; the cap makes it F.
    expect(r.score).toBe(55);
    expect(r.grade).toBe("F");
  });

  it("HTTPS our settings do not let us check: false with a note, no finding, no cap", async () => {
    // The probe's port is not among the allowed ones, as with SNAPSHOT_ALLOWED_PORTS lacking 443.
    const r = await snap(plain.url("/", "site.test"), [plain.port], refusedPort);
    expect(r.https_ok).toBe(false);
    expect(r.checks.https).toBe(false);
    expect(r.notes).toContain(
      `HTTPS was not checked (https://site.test:${refusedPort}/): this service's settings do not allow that target (port ${refusedPort} is not allowed).`,
    );
    expect(r.notes.join(" ")).not.toMatch(/HTTPS does not work/);
    // What was learned still counts: http:// answered without redirecting. Not F.
    expect(ids(r)).toEqual(["http-no-redirect"]);
    expect(r).toMatchObject({ score: 80, grade: "B+" });
  });

  it("a site that answers without any security header is D at best", async () => {
    // http:// is not probed (its port is not allowed): only the headers are judged.
    const r = await snap(bare.url("/", "site.test"), [bare.port], bare.port, refusedPort);
    expect(r.https_ok).toBe(true);
    expect(ids(r)).toEqual([
      "hsts-missing",
      "csp-missing",
      "x-frame-options-missing",
      "x-content-type-options-missing",
      "referrer-policy-missing",
      "permissions-policy-missing",
    ]);
    expect(r.score).toBe(25);
    expect(["D", "D-", "F"]).toContain(r.grade);
    expect(r.grade).toBe(gradeOf(r.score));
  });
});

describe("gradeOf and gradeCapOf", () => {
  const finding = (id: string, severity: Finding["severity"]): Finding => ({
    id,
    check: "x",
    severity,
    message: id,
    recommendation: "",
  });

  it("a cap only lowers the grade", () => {
    expect(gradeOf(100, "D")).toBe("D");
    expect(gradeOf(10, "D")).toBe("F");
    expect(gradeOf(95)).toBe("A");
  });

  it("https-failed and http-only cap at F; no security header at D; nothing else caps", () => {
    expect(gradeCapOf([finding("https-failed", "high")], false)).toBe("F");
    expect(gradeCapOf([finding("http-only", "high")], true)).toBe("F");
    expect(gradeCapOf([finding("csp-missing", "medium")], true)).toBe("D");
    expect(gradeCapOf([finding("redirect-https-to-http", "high")], false)).toBe("A+");
  });

  it("a finding's own penalty, else its severity's", () => {
    expect(scoreOf([finding("csp-missing", "medium")])).toBe(75);
    expect(scoreOf([finding("csp-unsafe-eval", "medium")])).toBe(90);
    expect(scoreOf([finding("some-new-id", "medium")])).toBe(80);
    expect(scoreOf([finding("some-new-id", "high"), finding("other-new-id", "low")])).toBe(70);
  });
});

describe('docs/findings.md "Score and grade"', () => {
  const doc = readFileSync(new URL("../../docs/findings.md", import.meta.url), "utf8");
  const section = doc.slice(
    doc.indexOf("## Score and grade"),
    doc.indexOf("\n## ", doc.indexOf("## Score and grade") + 1),
  );

  it("states each severity's penalty", () => {
    const rows = [...section.matchAll(/^\|\s*(high|medium|low|info)\s*\|\s*(\d+)\s*\|/gm)];
    expect(Object.fromEntries(rows.map((r) => [r[1], Number(r[2])]))).toEqual(PENALTY);
  });

  it("lists exactly the findings with a penalty of their own, with it and their severity", () => {
    const rows = [
      ...section.matchAll(/^\|\s*`([a-z0-9-]+)`\s*\|\s*(high|medium|low|info)\s*\|\s*(\d+)\s*\|/gm),
    ];
    const own = ALL_FINDINGS.filter((d) => d.penalty !== undefined);
    expect(rows.map((r) => [r[1], r[2], Number(r[3])])).toEqual(
      own.map((d) => [d.id, d.severity, d.penalty]),
    );
  });

  it("names the findings that cap the grade at F", () => {
    for (const d of ALL_FINDINGS.filter((f) => f.gradeCap === "F")) {
      expect(section).toContain(`\`${d.id}\``);
    }
  });
});
