/**
 * docs/deploy.md's unit passes `systemd-analyze verify` with nothing to say and its HAProxy
 * config `haproxy -c` (each skipped with one line naming its Debian package when missing, failed
 * under CI). And the samples run together: `secsnap serve` with deploy/secsnap.env (its ports,
 * addresses and payment network those of the test: the real devnet's chain and facilitator
 * for Base's) behind a real HAProxy running deploy/haproxy.cfg, TLS from the test CA. Through
 * the proxy the 402 names the public https:// URL (PUBLIC_URL), each client has its own rate
 * budget (TRUSTED_PROXIES: the address HAProxy saw, not the proxy's, nor one the client claims),
 * plain http is redirected, and the backup script copies the running instance's DATA_DIR.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { request as httpsRequest } from "node:https";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddedPaymentRecordStore } from "../../src/store/index.js";
import { ROOT } from "../cli/run.js";
import { startPaidDevnet, type PaidDevnet } from "../fixtures/paid-devnet.js";
import { freePort, startInstance, type ServiceInstance } from "../fixtures/service-instance.js";
import { systemBinary } from "../fixtures/system-binary.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";
import { deployFile, filledEnv } from "./deploy-samples.js";

const run = promisify(execFile);
const haproxy = systemBinary("haproxy", "haproxy");

const systemdAnalyze = systemBinary("systemd-analyze", "systemd");
describe.skipIf(!systemdAnalyze)("deploy/secsnap.service", () => {
  it("passes systemd-analyze verify with nothing to say", async () => {
    const { stdout, stderr } = await run(systemdAnalyze!, [
      "verify",
      join(ROOT, "deploy/secsnap.service"),
    ]);
    expect(stdout + stderr).toBe("");
  });

  it("a wrong setting in it is reported (the check can fail)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "secsnap-unit-"));
    try {
      const bad = deployFile("deploy/secsnap.service").replace(
        "ProtectSystem=strict",
        "ProtectSystem=bogus",
      );
      writeFileSync(join(dir, "secsnap.service"), bad);
      const { stderr } = await run(systemdAnalyze!, ["verify", join(dir, "secsnap.service")]);
      expect(stderr).toMatch(/ProtectSystem|protect system/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!haproxy)("deploy/haproxy.cfg", () => {
  it("passes haproxy -c, its certificate a test one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "secsnap-haproxy-c-"));
    try {
      const leaf = await issueLeaf(await loadTestCa(), { dnsNames: ["secsnap.example.com"] });
      writeFileSync(join(dir, "secsnap.pem"), `${leaf.certPem.trim()}\n${leaf.keyPem.trim()}\n`);
      const config = deployFile("deploy/haproxy.cfg").replace(
        "/etc/haproxy/certs/secsnap.pem",
        join(dir, "secsnap.pem"),
      );
      expect(config).toContain(dir);
      writeFileSync(join(dir, "haproxy.cfg"), config);
      const { stdout } = await run(haproxy!, ["-c", "-f", join(dir, "haproxy.cfg")]);
      expect(stdout).toMatch(/Configuration file is valid/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The proxy's public address, and two clients' own addresses on loopback. */
const PUBLIC = "127.0.0.2";
const CLIENT_A = "127.0.0.3";
const CLIENT_B = "127.0.0.4";
const CLIENT_C = "127.0.0.5";

/** The sample config with the test's ports and certificate; each line replaced must be there. */
function testHaproxyConfig(pem: string, tls: number, plain: number, backend: number): string {
  const swaps: [string, string][] = [
    ["bind :443 ssl crt /etc/haproxy/certs/secsnap.pem", `bind ${PUBLIC}:${tls} ssl crt ${pem}`],
    ["bind :80\n", `bind ${PUBLIC}:${plain}\n`],
    ["server secsnap 127.0.0.1:8080", `server secsnap 127.0.0.1:${backend}`],
  ];
  return swaps.reduce((config, [sample, test]) => {
    if (!config.includes(sample)) throw new Error(`deploy/haproxy.cfg no longer has "${sample}"`);
    return config.replace(sample, test);
  }, deployFile("deploy/haproxy.cfg"));
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTPS request from the client address `from` (node:https; fetch cannot choose it). */
function requestFrom(
  from: string,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      { method: init.method ?? "GET", headers: init.headers, localAddress: from },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

describe.skipIf(!haproxy)("the deploy samples behind each other", () => {
  let devnet: PaidDevnet;
  let instance: ServiceInstance;
  let proxy: ChildProcess;
  let dir: string;
  let publicUrl: string;
  let plainUrl: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "secsnap-deploy-e2e-"));
    devnet = await startPaidDevnet();
    const [tls, plain] = [await freePort(), await freePort()];
    publicUrl = `https://${PUBLIC}:${tls}`;
    plainUrl = `http://${PUBLIC}:${plain}`;

    const { PORT: _samplePort, X402_RPC_URL_BASE: _baseRpc, ...sample } = filledEnv();
    instance = await startInstance({
      name: "deployed",
      env: {
        ...sample,
        PUBLIC_URL: publicUrl,
        X402_PAY_TO: devnet.payTo,
        X402_NETWORKS: "base-sepolia",
        X402_FACILITATOR_URL: devnet.facilitatorUrl,
        X402_RPC_URL_BASE_SEPOLIA: devnet.rpcUrl,
        DATA_DIR: join(dir, "data"),
        RATE_LIMIT_PER_MINUTE: "2",
      },
    });
    await instance.start();

    const leaf = await issueLeaf(await loadTestCa(), { ips: [PUBLIC] });
    const pem = join(dir, "secsnap.pem");
    writeFileSync(pem, `${leaf.certPem.trim()}\n${leaf.keyPem.trim()}\n`);
    writeFileSync(join(dir, "haproxy.cfg"), testHaproxyConfig(pem, tls, plain, instance.port));
    proxy = spawn(haproxy!, ["-f", join(dir, "haproxy.cfg"), "-db"], { stdio: "ignore" });
    // Up once the proxy answers /ready through TLS from the instance (its check passed).
    for (;;) {
      if (proxy.exitCode !== null) throw new Error("haproxy exited at start");
      const ready = await fetch(`${publicUrl}/ready`).catch(() => undefined);
      if (ready?.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 120_000);

  afterAll(async () => {
    if (proxy && proxy.exitCode === null) {
      const exited = new Promise((resolve) => proxy.once("exit", resolve));
      proxy.kill("SIGTERM");
      await exited;
    }
    await instance?.close();
    await devnet?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the 402 through the proxy names the public https:// URL, in the v2 header and the v1 body", async () => {
    const answer = await requestFrom(CLIENT_C, `${publicUrl}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: "https://example.com" }),
    });
    expect(answer.status).toBe(402);
    const header = answer.headers["payment-required"] as string;
    const v2 = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as {
      resource: { url: string };
    };
    const v1 = JSON.parse(answer.body) as { accepts: Array<{ resource: string }> };
    expect(v2.resource.url).toBe(`${publicUrl}/v1/snapshot`);
    expect(v1.accepts[0]?.resource).toBe(`${publicUrl}/v1/snapshot`);
  });

  it("each client has its own budget: the address HAProxy saw, not the proxy's nor a claimed one", async () => {
    const demo = async (client: string, headers: Record<string, string> = {}) =>
      (await requestFrom(client, `${publicUrl}/demo/snapshot`, { headers })).status;
    // RATE_LIMIT_PER_MINUTE=2: A's third free answer is refused.
    expect([await demo(CLIENT_A), await demo(CLIENT_A), await demo(CLIENT_A)]).toEqual([
      200, 200, 429,
    ]);
    // B, through the same proxy, is another client, also when it claims to be someone else.
    expect(await demo(CLIENT_B, { "x-forwarded-for": "198.51.100.7" })).toBe(200);
    expect(await demo(CLIENT_B, { "x-forwarded-for": CLIENT_C })).toBe(200);
    expect(await demo(CLIENT_B)).toBe(429);
  });

  it("plain http:// is redirected to https://", async () => {
    const answer = await fetch(`${plainUrl}/ready`, { redirect: "manual" });
    expect(answer.status).toBe(301);
    expect(answer.headers.get("location")).toMatch(/^https:\/\//);
  });

  it("the backup script copies the running instance's DATA_DIR: its signing key and a database that opens", async () => {
    const dataDir = join(dir, "data");
    const backup = join(dir, "backup");
    await run(process.execPath, [join(ROOT, "deploy/backup-data-dir.mjs"), dataDir, backup]);
    expect(instance.pid).toBeDefined();
    expect(readFileSync(join(backup, "signing-key.json"), "utf8")).toBe(
      readFileSync(join(dataDir, "signing-key.json"), "utf8"),
    );
    const copy = await EmbeddedPaymentRecordStore.open({ dataDir: backup });
    try {
      expect(await copy.writable()).toBe(true);
    } finally {
      await copy.close();
    }
  });
});
