/**
 * Devnet and local mode are for this machine (docs/security.md, "Devnet and local mode"), shown
 * on `secsnap serve` as a real process in a network namespace of its own that has a non-loopback
 * address, as a machine on a LAN has: by default the service answers on loopback and not on that
 * address; every route refuses a name rebound to it; the unpaid challenge offers no other origin
 * CORS; local mode refuses a non-loopback HOST in one line; an explicit HOST=0.0.0.0 in devnet
 * mode is honoured, and the first line says the service is then on every address. Every request
 * goes to the namespace's own addresses, from a probe process inside it.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemBinary } from "../../fixtures/system-binary.js";
import { closedPort } from "../../fixtures/targets.js";
import { ROOT, cleanEnv, cliNodeArgs, spawnCli, waitForLine } from "../run.js";

const run = promisify(execFile);
const ip = systemBinary("ip", "iproute2");

/** The namespace's non-loopback address: what a LAN client would connect to. */
const LAN_ADDRESS = "10.203.0.1";
const NAMESPACE = `secsnap-test-${process.pid}`;

interface Probed {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** The connection's error code, e.g. ECONNREFUSED. */
  error?: string;
}

/** One HTTP request from inside the namespace, printed as JSON (node:http lets Host be set). */
const PROBE = `
const [method, url, headers, body] = process.argv.slice(1);
const req = require("node:http").request(url, { method, headers: JSON.parse(headers), agent: false }, (res) => {
  let text = "";
  res.setEncoding("utf8");
  res.on("data", (chunk) => (text += chunk));
  res.on("end", () => console.log(JSON.stringify({ status: res.statusCode, headers: res.headers, body: text })));
});
req.setTimeout(10000, () => req.destroy(Object.assign(new Error("timeout"), { code: "ETIMEDOUT" })));
req.on("error", (error) => console.log(JSON.stringify({ error: error.code ?? error.message })));
req.end(body);
`;

async function probe(
  url: string,
  {
    method = "GET",
    headers = {},
    body = "",
  }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Probed> {
  const { stdout } = await run(ip!, [
    "netns",
    "exec",
    NAMESPACE,
    process.execPath,
    "-e",
    PROBE,
    method,
    url,
    JSON.stringify(headers),
    body,
  ]);
  return JSON.parse(stdout) as Probed;
}

interface Served {
  child: ChildProcessWithoutNullStreams;
  first: string;
  port: number;
  exited: Promise<number | null>;
}

let scratch: string;
let started = 0;
const running: Served[] = [];

/** `secsnap serve` inside the namespace with cleanEnv (no HOST unless given), once listening. */
async function serveInNamespace(args: string[], env: Record<string, string> = {}): Promise<Served> {
  const n = ++started;
  const child = spawn(
    ip!,
    ["netns", "exec", NAMESPACE, process.execPath, ...cliNodeArgs(), "serve", ...args],
    {
      cwd: ROOT,
      env: cleanEnv({
        PORT: "0",
        SHUTDOWN_GRACE_MS: "0",
        DATA_DIR: join(scratch, `data-${n}`),
        DEVNET_RPC_PORT: String(18545 + n),
        DEVNET_FACILITATOR_PORT: String(14022 + n),
        ...env,
      }),
    },
  );
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const first = await Promise.race([
    waitForLine(child.stdout, /listening on/),
    exited.then((code) => {
      throw new Error(`serve exited ${code} before listening: ${stderr}`);
    }),
  ]);
  const port = Number(/listening on http:\/\/[^\s]*:(\d+)/.exec(first)?.[1]);
  const served = { child, first, port, exited };
  running.push(served);
  return served;
}

/** SIGTERM, as an operator stops it: the devnet it brought up goes with it. */
async function stop(served: Served): Promise<number | null> {
  served.child.kill("SIGTERM");
  return served.exited;
}

describe.skipIf(!ip)("serve in a network namespace with a non-loopback address", () => {
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), "secsnap-exposure-"));
    await run(ip!, ["netns", "add", NAMESPACE]);
    for (const command of [
      ["link", "set", "lo", "up"],
      // A network card's pair of ends; the address is on the end the machine owns.
      ["link", "add", "lan0", "type", "veth", "peer", "name", "lan1"],
      ["addr", "add", `${LAN_ADDRESS}/24`, "dev", "lan0"],
      ["link", "set", "lan0", "up"],
      ["link", "set", "lan1", "up"],
    ]) {
      await run(ip!, ["-n", NAMESPACE, ...command]);
    }
  });

  afterAll(async () => {
    for (const served of running) if (served.child.exitCode === null) await stop(served);
    // Whatever this test started in the namespace and left (a devnet after a failure) goes too.
    const { stdout } = await run(ip!, ["netns", "pids", NAMESPACE]).catch(() => ({ stdout: "" }));
    for (const pid of stdout.split("\n").filter(Boolean)) process.kill(Number(pid), "SIGKILL");
    await run(ip!, ["netns", "del", NAMESPACE]).catch(() => undefined);
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("devnet mode answers on loopback only, refuses a rebound name and a foreign origin", async () => {
    const served = await serveInNamespace([]);
    expect(served.first).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ \(mode: DEVNET/);
    const { port } = served;

    // A LAN client gets no connection at all; this machine does.
    expect(await probe(`http://${LAN_ADDRESS}:${port}/health`)).toEqual({ error: "ECONNREFUSED" });
    expect((await probe(`http://127.0.0.1:${port}/health`)).status).toBe(200);

    // A page on a name its attacker rebinds to 127.0.0.1: refused on every route, the form too.
    const rebound = { host: `evil.example:${port}`, origin: `http://evil.example:${port}` };
    for (const [method, path] of [
      ["GET", "/"],
      ["GET", "/health"],
      ["POST", "/demo/pay-and-scan"],
    ] as const) {
      const res = await probe(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { ...rebound, "content-type": "application/x-www-form-urlencoded" },
        body: method === "POST" ? "url=http%3A%2F%2F127.0.0.1%3A9%2Fadmin" : "",
      });
      expect(res.status, path).toBe(403);
      expect(JSON.parse(res.body ?? "{}")).toMatchObject({ error_type: "host_not_allowed" });
    }

    // The unpaid challenge, twice (the second would take serve's fast path): no wildcard CORS.
    for (let i = 0; i < 2; i++) {
      const unpaid = await probe(`http://127.0.0.1:${port}/v1/snapshot`, {
        method: "POST",
        headers: { origin: "https://any-page.example", "content-type": "application/json" },
        body: JSON.stringify({ url: "https://example.com" }),
      });
      expect(unpaid.status).toBe(402);
      expect(unpaid.headers?.["access-control-allow-origin"]).toBeUndefined();
    }
    expect(await stop(served)).toBe(0);
  }, 180_000);

  it("local mode answers on loopback only", async () => {
    const served = await serveInNamespace(["--allow-local"]);
    expect(served.first).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ \(mode: DEVNET/);
    expect(await probe(`http://${LAN_ADDRESS}:${served.port}/health`)).toEqual({
      error: "ECONNREFUSED",
    });
    expect((await probe(`http://127.0.0.1:${served.port}/health`)).status).toBe(200);
    expect(await stop(served)).toBe(0);
  }, 180_000);

  it("devnet mode honours HOST=0.0.0.0, and its first line says every address hears it", async () => {
    const served = await serveInNamespace([], { HOST: "0.0.0.0" });
    expect(served.first).toMatch(
      /listening on http:\/\/127\.0\.0\.1:\d+ and every other address of this machine \(HOST 0\.0\.0\.0\) \(mode: DEVNET/,
    );
    // Asked by its address, an IP literal (no name to rebind), it answers.
    expect((await probe(`http://${LAN_ADDRESS}:${served.port}/health`)).status).toBe(200);
    expect(await stop(served)).toBe(0);
  }, 180_000);
});

describe("local mode and HOST", () => {
  it("refuses a non-loopback HOST with one line naming it, before anything starts", async () => {
    const child = spawnCli(
      ["serve", "--allow-local"],
      cleanEnv({
        PORT: "0",
        HOST: "0.0.0.0",
        DEVNET_RPC_PORT: String(await closedPort("127.0.0.1")),
        DEVNET_FACILITATOR_PORT: String(await closedPort("127.0.0.1")),
      }),
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    // Output ending without the line is no outcome: the exit code is.
    const listening = waitForLine(child.stdout, /listening on/).catch(
      () => new Promise<never>(() => {}),
    );
    const outcome = await Promise.race([exited, listening]);
    if (typeof outcome === "string") {
      child.kill("SIGTERM");
      await exited;
      expect.fail(`it started: ${outcome}`);
    }
    expect(outcome).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^secsnap: HOST must be a loopback address \(127\.0\.0\.1, ::1 or localhost\) in local mode .*\(got "0\.0\.0\.0"\)$/,
      ),
    ]);
  }, 60_000);
});
