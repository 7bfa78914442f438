/**
 * The grade explained on the terminal (`secsnap scan` on a terminal, docs/contract.md §8): each
 * check as the findings judge it, each finding's cost, what capped the grade, and the TLS,
 * domain and cross-origin sections as labelled tables. Real sites, a real DNS server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { startDnsServer, type DnsFixture } from "../fixtures/dns-server.js";
import {
  PUBLIC_CIDRS,
  respond,
  startHttpTarget,
  startHttpsTarget,
  type TargetServer,
} from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";
import { cleanEnv, runCli } from "./run.js";

const SHOP = "shop.example.com";

let plain: TargetServer;
let secure: TargetServer;
let dns: DnsFixture;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  // Present, but each one ignored by browsers: an unknown X-Frame-Options value, a
  // X-Content-Type-Options that is not nosniff, HSTS over plain HTTP.
  plain = await startHttpTarget({
    routes: {
      "/": respond.html("<!doctype html><p>shop</p>", {
        "x-frame-options": "ALLOWALL",
        "x-content-type-options": "sniff",
        "strict-transport-security": "max-age=31536000",
        // The rest is well set, so the score alone is well above F.
        "content-security-policy": "default-src 'self'; object-src 'none'; base-uri 'none'",
        "referrer-policy": "no-referrer",
        "permissions-policy": "camera=()",
      }),
    },
  });
  dns = await startDnsServer({
    [SHOP]: { A: [plain.host] },
    "example.com": { CAA: [{ tag: "issue", value: "letsencrypt.org" }], TXT: ["v=spf1 -all"] },
  });
  const cert = await issueLeaf(await loadTestCa(), { dnsNames: [SHOP] });
  secure = await startHttpsTarget({
    cert,
    routes: {
      "/": respond.html("<!doctype html><p>shop</p>", {
        "cross-origin-opener-policy": "same-origin",
      }),
    },
  });
  env = cleanEnv({
    SNAPSHOT_ALLOW_CIDRS: PUBLIC_CIDRS.join(","),
    SNAPSHOT_ALLOWED_PORTS: `80,443,${plain.port},${secure.port}`,
    SNAPSHOT_DNS_SERVERS: dns.address,
    // A terminal, without colour: the text as one reads it.
    NO_COLOR: "1",
  });
});

afterAll(async () => {
  await Promise.all([plain.close(), secure.close(), dns.close()]);
});

/** The terminal text and the JSON of one scan. */
async function scanBoth(url: string) {
  const text = await runCli(["scan", url], env, { tty: true });
  expect(text.code, text.stdout).toBe(0);
  const json = await runCli(["scan", url], env);
  return { text: text.stdout, report: SnapshotResultSchema.parse(JSON.parse(json.stdout)) };
}

/** The checklist line of a check's label. */
function checkLine(text: string, label: string): string {
  const line = text.split("\n").find((l) => l.trimEnd().includes(`  ${label}`));
  expect(line, label).toBeDefined();
  return line as string;
}

describe("scan on a terminal explains the grade", () => {
  it("headers present but ignored are flawed, not ✓; each finding's cost; what capped the grade", async () => {
    const { text, report } = await scanBoth(plain.url("/"));
    for (const label of [
      "X-Frame-Options",
      "X-Content-Type-Options",
      "Strict-Transport-Security (HSTS)",
    ]) {
      expect(checkLine(text, label)).toMatch(/^ {2}! flawed\s/);
    }
    expect(report.x_frame_options_present).toBe(true);

    // Every finding shows what it cost; together they are what the score lost.
    let lost = 0;
    for (const f of report.findings) {
      const line = text.split("\n").find((l) => l.includes(`(${f.id}) [`));
      expect(line, f.id).toBeDefined();
      const points = /\[(?:−(\d+) points?|no points)/.exec(line as string);
      lost += Number(points?.[1] ?? 0);
    }
    expect(100 - lost).toBe(report.score);
    // HTTPS fails on this site: the grade is F whatever the score, and the text says why.
    expect(report.grade).toBe("F");
    expect(text).toMatch(/The score alone gives [A-D][+-]?; the grade is capped by:/);
    expect(text).toMatch(/ {4}- https-failed: HTTPS does not work .*\(F at best\)/);
  });

  it("shows the TLS, domain and cross-origin sections as tables with human titles", async () => {
    const { text, report } = await scanBoth(secure.url("/", SHOP));
    expect(report.tls).not.toBeNull();
    expect(report.dns).not.toBeNull();
    const section = (title: string) => {
      const start = text.indexOf(`\n${title}:\n`);
      expect(start, title).toBeGreaterThan(-1);
      return text.slice(start + title.length + 3).split("\n\n")[0] as string;
    };
    const tls = section("TLS");
    expect(tls).toMatch(new RegExp(`^ {2}Protocol\\s+${report.tls?.protocol}$`, "m"));
    expect(tls).toMatch(/^ {2}Certificate days left\s+\d+$/m);
    expect(tls).toMatch(/^ {2}TLS 1\.0 accepted\s+(yes|no|unknown)$/m);
    const domain = section("Domain (DNS)");
    expect(domain).toMatch(/^ {2}Domain\s+example\.com$/m);
    expect(domain).toMatch(/^ {2}CAA issuers\s+letsencrypt\.org$/m);
    expect(domain).toMatch(/^ {2}SPF record\s+v=spf1 -all$/m);
    const crossOrigin = section("Cross-origin isolation");
    expect(crossOrigin).toMatch(/^ {2}Cross-Origin-Opener-Policy\s+same-origin$/m);
    // Readable labels, no JSON and no snake_case keys.
    for (const line of [tls, domain, crossOrigin].flatMap((body) => body.split("\n"))) {
      const [label, value] = line.trim().split(/\s{2,}/);
      expect(label).not.toMatch(/_/);
      expect(value).not.toMatch(/^[{[]/);
    }
  });
});
