/**
 * `secsnap serve` as a real process: its metrics listener (METRICS_PORT, METRICS_HOST) apart
 * from the public port, and its request log on stdout, one JSON line per request. Production
 * mode against a local facilitator that answers /supported: no devnet needed.
 */
import { connect as createConnection, createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { cleanEnv, runProcess, spawnCli, waitForLine } from "../run.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const BASE_SEPOLIA = "eip155:84532";

let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>>;
beforeAll(async () => {
  facilitator = await startSupportedFacilitator([BASE_SEPOLIA]);
});
afterAll(() => facilitator?.close());

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    PORT: "0",
    HOST: "127.0.0.1",
    X402_PAY_TO: PAY_TO,
    X402_NETWORKS: "base-sepolia",
    X402_FACILITATOR_URL: facilitator.url,
    ...extra,
  });
}

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection(port, host);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe("serve with its metrics listener", () => {
  it("serves /metrics on 127.0.0.1 only, never on the public port, and logs each request as one JSON line", async () => {
    const child = spawnCli(["serve"], env());
    const lines: string[] = [];
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      lines.push(...parts);
    });
    try {
      const metricsLine = await waitForLine(child.stdout, /^metrics on /);
      const base = /listening on (http:\/\/\S+)/.exec(lines.join("\n"))?.[1] as string;
      expect(base).toBeDefined();
      const metricsUrl = /^metrics on (http:\/\/127\.0\.0\.1:(\d+)\/metrics)$/.exec(metricsLine);
      expect(metricsUrl, metricsLine).not.toBeNull();
      const metricsPort = Number(metricsUrl![2]);

      const health = await fetch(`${base}/health`, { headers: { "x-request-id": "probe-1" } });
      expect(health.status).toBe(200);
      const text = await (await fetch(metricsUrl![1]!)).text();
      expect(text).toMatch(/^secsnap_http_requests_total\{route="\/health",status="200"\} 1$/m);
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);

      // Not on the public port, and not on another address of this machine.
      expect((await fetch(`${base}/metrics`)).status).toBe(404);
      expect(await accepts("127.0.0.1", metricsPort)).toBe(true);
      expect(await accepts("127.0.0.2", metricsPort)).toBe(false);

      for (let i = 0; i < 100 && !lines.some((l) => l.includes('"probe-1"')); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const logged = lines.filter((l) => l.includes('"probe-1"'));
      expect(logged).toHaveLength(1);
      expect(JSON.parse(logged[0]!)).toMatchObject({
        level: "info",
        msg: "request",
        req_id: "probe-1",
        method: "GET",
        route: "/health",
        status: 200,
        duration_ms: expect.any(Number),
      });
    } finally {
      child.kill("SIGKILL");
    }
  }, 60_000);

  it("METRICS_PORT=off starts no metrics listener", async () => {
    const child = spawnCli(["serve"], env({ METRICS_PORT: "off" }));
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    try {
      await waitForLine(child.stdout, /listening on/);
      await fetch(`${/listening on (http:\/\/\S+)/.exec(out)![1]}/health`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(out).not.toMatch(/metrics on/);
    } finally {
      child.kill("SIGKILL");
    }
  }, 60_000);

  it("a metrics port that is taken stops the start with one line naming METRICS_PORT", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const run = await runProcess(["serve"], env({ METRICS_PORT: String(port) }));
      expect(run.code).toBe(1);
      expect(run.stderr.trim()).toBe(
        `secsnap: METRICS_PORT ${port} is in use on 127.0.0.1 (EADDRINUSE): stop what holds it or set METRICS_PORT to a free port (0 picks one), or METRICS_PORT=off for no metrics listener`,
      );
    } finally {
      taken.close();
    }
  }, 60_000);
});
