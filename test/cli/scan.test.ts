import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SnapshotErrorBodySchema, SnapshotResultSchema } from "../../src/snapshot/result.js";
import { cleanEnv, runCli } from "./run.js";
import { startTarget } from "./target.js";

let target: Awaited<ReturnType<typeof startTarget>>;
beforeAll(async () => {
  target = await startTarget();
});
afterAll(() => target.close());

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

  it("without a terminal, scan prints JSON even without --json", async () => {
    const { code, stdout } = await runCli(["scan", "ftp://example.com/"]);
    expect(code).toBe(2);
    expect(JSON.parse(stdout)).toMatchObject({ error_type: "invalid_url" });
  });
});
