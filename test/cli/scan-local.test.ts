/**
 * `secsnap scan --local` on a plain-HTTP development site, as a site owner runs it: by name (a
 * real DNS server answers it) and by address, scheme-less and as http://.
 */
import { createServer, type Server } from "node:net";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { startDnsServer, type DnsFixture } from "../fixtures/dns-server.js";
import { respond, startHttpTarget, type TargetServer } from "../fixtures/targets.js";
import { cleanEnv, runCli } from "./run.js";

/** A loopback address of its own, so that port 443 on it is this file's alone. */
const SITE_HOST = `127.${20 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 250)}.7`;

let site: TargetServer;
let dns: DnsFixture;
/** Whatever listens on SITE_HOST:443: connections to it are the HTTPS probe's. */
let port443: Server;
let connectionsTo443 = 0;

beforeAll(async () => {
  site = await startHttpTarget({
    host: SITE_HOST,
    routes: { "/": respond.status(200, { "content-type": "text/html" }, "<p>dev</p>") },
  });
  dns = await startDnsServer({ "dev-site.test": { A: [SITE_HOST] } });
  port443 = createServer((socket) => {
    connectionsTo443++;
    socket.destroy();
  });
  port443.listen(443, SITE_HOST);
  await once(port443, "listening");
});

afterAll(async () => {
  await site.close();
  await dns.close();
  port443.close();
});

async function scanLocal(url: string) {
  const env = cleanEnv({ SNAPSHOT_DNS_SERVERS: dns.address });
  const run = await runCli(["scan", "--local", url, "--json"], env);
  expect(run.code, run.stdout).toBe(0);
  return SnapshotResultSchema.parse(JSON.parse(run.stdout));
}

describe("scan --local of a plain-HTTP site", () => {
  it.each([
    ["by name", () => `dev-site.test:${site.port}`, () => `http://dev-site.test:${site.port}/`],
    ["by address", () => `${SITE_HOST}:${site.port}`, () => site.url("/")],
  ])(
    "a scheme-less input %s whose https:// meets no TLS is reported as its http://",
    async (_how, input, expected) => {
      const report = await scanLocal(input());
      expect(report).toMatchObject({
        normalized_url: `https://${input()}/`,
        final_url: expected(),
        reachable: true,
        final_status_code: 200,
        https_ok: false,
      });
      expect(report.notes).toContain(
        `The input had no scheme and https://${input()}/ answered without TLS, so this report is of ${expected()} (plain HTTP).`,
      );
      // Without --local the same input is still refused: only local mode allows loopback.
      const env = cleanEnv({ SNAPSHOT_DNS_SERVERS: dns.address });
      const refused = await runCli(["scan", input(), "--json"], env);
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stdout)).toMatchObject({ error_type: "ssrf" });
    },
  );

  it("says no header is missing when no response was read", async () => {
    const report = await scanLocal(site.url("/").replace("http:", "https:"));
    expect(report).toMatchObject({ reachable: false, final_status_code: null });
    expect(report.notes.join("\n")).not.toMatch(/header is missing/);
    expect(report.notes.join("\n")).toMatch(/TLS handshake failed/);
  });

  it("does not judge the missing HTTPS of a loopback site: no port 443, no F for it", async () => {
    const before = connectionsTo443;
    const report = await scanLocal(site.url("/"));
    expect(connectionsTo443 - before).toBe(0);
    expect(report.https_ok).toBe(false);
    expect(report.notes).toContain(
      `HTTPS was not judged (${site.url("/")}): in local mode a loopback site is a secure context for browsers without HTTPS, so port 443 was not asked; put HTTPS in front of it where it is served for real.`,
    );
    const ids = report.findings.map((f) => f.id);
    expect(ids).not.toContain("https-failed");
    expect(ids).not.toContain("hsts-missing");
    expect(ids).toContain("csp-missing");
    // No security header at all: D at best, as for any site; the score speaks of its headers.
    expect(report.grade).toBe("D");
    expect(report.score).toBeGreaterThan(0);

    // A name that resolves to loopback is no secure context for browsers: its HTTPS is judged.
    const byName = await scanLocal(`http://dev-site.test:${site.port}/`);
    expect(connectionsTo443 - before).toBeGreaterThan(0);
    expect(byName.findings.map((f) => f.id)).toContain("https-failed");
    expect(byName.grade).toBe("F");
  });
});
