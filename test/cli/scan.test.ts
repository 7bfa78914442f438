import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SnapshotErrorBodySchema,
  SnapshotResultSchema,
} from "../../src/http/documents/report-schemas.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { cleanEnv, runCli } from "./run.js";
import { startTarget } from "../fixtures/held-target.js";

let target: Awaited<ReturnType<typeof startTarget>>;
let dns: DnsFixture;
beforeAll(async () => {
  target = await startTarget();
  dns = await startDnsServer({ "cli-site.test": { A: ["127.0.0.1"] } });
});
afterAll(async () => {
  await target.close();
  await dns.close();
});

describe("secsnap scan", () => {
  it.each([
    ["ftp://example.com/", "invalid_url"],
    ["https://user:pw@example.com/", "invalid_url"],
    ["http://127.0.0.1/", "ssrf"],
    ["localhost", "ssrf"],
  ])("%s exits 2 and prints the SnapshotError JSON (%s)", async (url, errorType) => {
    const { code, stdout } = await runCli(["scan", url, "--json"]);
    expect(code).toBe(2);
    const body = SnapshotErrorBodySchema.parse(JSON.parse(stdout));
    expect(body).toMatchObject({ requested_url: url, error_type: errorType });
  });

  it("scan --json on a local target prints the report and exits 0", async () => {
    const env = cleanEnv({
      SNAPSHOT_ALLOW_CIDRS: "127.0.0.0/8",
      SNAPSHOT_ALLOWED_PORTS: String(target.port),
    });
    const { code, stdout, stderr } = await runCli(["scan", target.url, "--json"], env);
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const report = SnapshotResultSchema.parse(JSON.parse(stdout));
    expect(report).toMatchObject({
      requested_url: target.url,
      final_url: target.url,
      reachable: true,
      final_status_code: 200,
      redirect_count: 0,
      x_frame_options_present: true,
      x_content_type_options_present: true,
      hsts_present: false,
      csp_present: false,
    });
    expect(report.notes).toContain("Strict-Transport-Security (HSTS) header is missing.");
  });

  it("scan --local reports a local target on any port, its first stderr line saying so loudly", async () => {
    // No SNAPSHOT_ALLOW_CIDRS nor SNAPSHOT_ALLOWED_PORTS: the target's port is a random one.
    const { code, stdout, stderr } = await runCli(["scan", "--local", target.url, "--json"]);
    expect(stderr.split("\n")[0]).toBe(
      "secsnap: LOCAL MODE: private and loopback targets on any port are allowed (cloud host services stay blocked)",
    );
    expect(code).toBe(0);
    const report = SnapshotResultSchema.parse(JSON.parse(stdout));
    expect(report).toMatchObject({
      requested_url: target.url,
      final_url: target.url,
      reachable: true,
      final_status_code: 200,
    });
    // The probes (https on 443, the well-known files) were sent, not refused by our policy.
    expect(report.notes.join("\n")).not.toMatch(/not allowed|blocked/i);
    // The same target without --local: refused, and told how to allow it.
    const refused = await runCli(["scan", target.url, "--json"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe("");
    expect(JSON.parse(refused.stdout)).toMatchObject({
      error_type: "ssrf",
      error: expect.stringContaining("`secsnap scan --local`"),
    });
  });

  it("scan --local still refuses cloud metadata", async () => {
    const url = "http://169.254.169.254/latest/meta-data/";
    const { code, stdout } = await runCli(["scan", "--local", url, "--json"]);
    expect(code).toBe(2);
    expect(JSON.parse(stdout)).toMatchObject({ requested_url: url, error_type: "ssrf" });
  });

  it("SNAPSHOT_DNS_SERVERS from the environment is where target names are resolved", async () => {
    const env = cleanEnv({
      SNAPSHOT_ALLOW_CIDRS: "127.0.0.0/8",
      SNAPSHOT_ALLOWED_PORTS: String(target.port),
      SNAPSHOT_DNS_SERVERS: dns.address,
    });
    const url = `http://cli-site.test:${target.port}/`;
    const { code, stdout } = await runCli(["scan", url, "--json"], env);
    expect(code).toBe(0);
    expect(SnapshotResultSchema.parse(JSON.parse(stdout))).toMatchObject({
      final_url: url,
      reachable: true,
      final_status_code: 200,
    });
    expect(dns.queriesFor("cli-site.test").length).toBeGreaterThan(0);
  });

  it("a SnapshotError found by the engine (a name that does not resolve) also exits 2", async () => {
    const env = cleanEnv({
      SNAPSHOT_ALLOWED_PORTS: String(target.port),
      SNAPSHOT_DNS_SERVERS: dns.address,
    });
    const url = `http://nowhere.test:${target.port}/`;
    const { code, stdout } = await runCli(["scan", url, "--json"], env);
    expect(code).toBe(2);
    expect(SnapshotErrorBodySchema.parse(JSON.parse(stdout))).toMatchObject({
      requested_url: url,
      error_type: "unreachable",
    });
  });

  it("without a terminal, scan prints JSON even without --json", async () => {
    const { code, stdout } = await runCli(["scan", "ftp://example.com/"]);
    expect(code).toBe(2);
    expect(JSON.parse(stdout)).toMatchObject({ error_type: "invalid_url" });
  });
});
