import nodeDns from "node:dns";
import { createServer as createHttpServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { TLSSocket } from "node:tls";
import { fetch, request } from "undici";
import type { Dispatcher } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startCanary, startWithCanaryOnSamePort } from "../../fixtures/canary.js";
import type { Canary } from "../../fixtures/canary.js";
import { startDnsServer } from "../../fixtures/dns-server.js";
import type { DnsFixture } from "../../fixtures/dns-server.js";
import { startDroppedSynHost } from "../../fixtures/hostile-network.js";
import type { DroppedSynHost } from "../../fixtures/hostile-network.js";
import { createCa, issueLeaf, loadTestCa } from "../../fixtures/tls.js";
import type { TestLeaf } from "../../fixtures/tls.js";
import { closedPort } from "../../fixtures/targets.js";
import { createAddressPolicy } from "../../../src/snapshot/net/address-policy.js";
import {
  BlockedAddressError,
  BlockedPortError,
  findConnectPhase,
} from "../../../src/snapshot/net/dial-errors.js";
import { createTargetDispatcher } from "../../../src/snapshot/net/dialer.js";
import { OriginConnections } from "../../../src/snapshot/net/pool-queue.js";
import type { TargetDispatcherOptions } from "../../../src/snapshot/net/dialer.js";
import { errorChain, errorCodes } from "../../../src/snapshot/net/error-chain.js";
import { HostNotFoundError, createResolver } from "../../../src/snapshot/net/resolver.js";
import type { ResolveHost } from "../../../src/snapshot/net/resolver.js";

/**
 * The pinned dialler against real parts: a real DNS server, real HTTP(S) servers on 127.0.0.2
 * (made "public" by an allow list, as SNAPSHOT_ALLOW_CIDRS would) and a canary on 127.0.0.1 —
 * which stays blocked — listening on the SAME port as the target. Any connection that escaped
 * the check (wrong address dialled, re-resolution, rebinding) would land on the canary.
 */

interface SeenRequest {
  localAddress: string | undefined;
  host: string | undefined;
  servername: string | false | null | undefined;
}

interface Target {
  port: number;
  requests: SeenRequest[];
  close(): Promise<void>;
}

function listenTarget(server: Server, host: string): Promise<Target> {
  const requests: SeenRequest[] = [];
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    requests.push({
      localAddress: req.socket.localAddress,
      host: req.headers.host,
      servername: (req.socket as Partial<TLSSocket>).servername,
    });
    // A new connection (and so a new check) for every request.
    res.writeHead(200, { "content-type": "text/plain", connection: "close" });
    res.end("target");
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      if (address === null || typeof address === "string") return reject(new Error("no port"));
      resolve({
        port: address.port,
        requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

const TARGET_IP = "127.0.0.2"; // allow-listed: plays a public address
const BLOCKED_IP = "127.0.0.1"; // stays blocked: the canary lives here
const policy = createAddressPolicy([`${TARGET_IP}/32`, "127.0.0.4/32"]);

let dns: DnsFixture;
let target: Target;
let canary: Canary;
const dispatchers: Dispatcher[] = [];

interface Harness {
  dispatcher: Dispatcher;
  dialled: string[];
  resolved: string[];
}

function harness(extra: Partial<TargetDispatcherOptions> = {}, ports = [target.port]): Harness {
  const dialled: string[] = [];
  const resolved: string[] = [];
  const dnsResolve = createResolver([dns.address], { timeoutMs: 2_000 });
  const resolve: ResolveHost = (host, signal) => {
    resolved.push(host);
    return dnsResolve(host, signal);
  };
  const dispatcher = createTargetDispatcher({
    resolve,
    isBlockedAddress: (ip) => policy.isBlocked(ip),
    allowedPorts: new Set(ports),
    connectTimeoutMs: 5_000,
    onDial: ({ address }) => dialled.push(address),
    ...extra,
  });
  dispatchers.push(dispatcher);
  return { dispatcher, dialled, resolved };
}

/** The nearest code in an error's chain (what the fetch layer classifies by). */
function findErrorCode(err: unknown): string | undefined {
  return errorCodes(err)[0];
}

/** The nearest error of `type` in an error's chain. */
function findError<T extends Error>(
  err: unknown,
  type: abstract new (...args: never[]) => T,
): T | undefined {
  return errorChain(err).find((e): e is T => e instanceof type);
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error("expected the request to fail");
}

async function get(url: string, dispatcher: Dispatcher): Promise<string> {
  const res = await request(url, { dispatcher });
  expect(res.statusCode).toBe(200);
  return res.body.text();
}

beforeAll(async () => {
  dns = await startDnsServer();
  ({ target, canary } = await startWithCanaryOnSamePort(
    () => listenTarget(createHttpServer(), TARGET_IP),
    BLOCKED_IP,
  ));
});

afterAll(async () => {
  await Promise.all([dns?.close(), target?.close(), canary?.close()]);
});

afterEach(async () => {
  await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  // The invariant of the whole file: nothing ever reaches the blocked address. Cleared after
  // reading so one failure does not spill into the next test.
  const landed = canary.connections.splice(0);
  expect(landed).toEqual([]);
});

describe("pinned dialler: what is dialled is what was checked", () => {
  it("dials the checked address of an allowed name, resolving once per connection", async () => {
    dns.set("public.test", { A: [TARGET_IP] });
    const h = harness();
    const before = target.requests.length;
    expect(await get(`http://public.test:${target.port}/`, h.dispatcher)).toBe("target");
    const seen = target.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.localAddress).toBe(TARGET_IP);
    expect(seen[0]?.host).toBe(`public.test:${target.port}`);
    expect(h.dialled).toEqual([TARGET_IP]);
    expect(h.resolved).toEqual(["public.test"]);
    expect(dns.queriesFor("public.test", "A")).toHaveLength(1);
  });

  it("refuses a name that resolves to a blocked address", async () => {
    dns.set("internal.test", { A: [BLOCKED_IP] });
    const h = harness();
    const before = target.requests.length;
    const err = await rejection(get(`http://internal.test:${target.port}/`, h.dispatcher));
    expect(err).toBeInstanceOf(BlockedAddressError);
    expect(err).toMatchObject({
      code: "SECSNAP_BLOCKED",
      host: "internal.test",
      address: BLOCKED_IP,
    });
    expect(h.dialled).toEqual([]);
    expect(target.requests.length).toBe(before);
  });

  it.each([
    ["blocked last", { A: [TARGET_IP, BLOCKED_IP] }, BLOCKED_IP],
    ["blocked first", { A: [BLOCKED_IP, TARGET_IP] }, BLOCKED_IP],
    ["blocked IPv6 beside an allowed IPv4", { A: [TARGET_IP], AAAA: ["::1"] }, "::1"],
    [
      "IPv4-mapped IPv6 of the allowed address",
      { A: [TARGET_IP], AAAA: ["::ffff:127.0.0.2"] },
      "::ffff:127.0.0.2",
    ],
  ])("refuses mixed answers (%s)", async (_label, answer, blocked) => {
    dns.set("mixed.test", answer);
    const h = harness();
    const before = target.requests.length;
    const err = await rejection(get(`http://mixed.test:${target.port}/`, h.dispatcher));
    expect(findError(err, BlockedAddressError)?.address).toBe(blocked);
    expect(h.dialled).toEqual([]);
    expect(target.requests.length).toBe(before);
  });

  it("defeats DNS rebinding: a later answer pointing at a blocked address is never dialled", async () => {
    dns.set("rebind.test", [{ A: [TARGET_IP] }, { A: [BLOCKED_IP] }]);
    const h = harness();
    const url = `http://rebind.test:${target.port}/`;
    const before = target.requests.length;

    expect(await get(url, h.dispatcher)).toBe("target");
    // The server closed the connection, so this request needs a new connection and a new check.
    const err = await rejection(get(url, h.dispatcher));
    expect(err).toBeInstanceOf(BlockedAddressError);
    expect((err as BlockedAddressError).address).toBe(BLOCKED_IP);
    const third = await rejection(get(url, h.dispatcher));
    expect(third).toBeInstanceOf(BlockedAddressError);

    expect(target.requests.length - before).toBe(1);
    expect(h.dialled).toEqual([TARGET_IP]);
    expect(dns.queriesFor("rebind.test", "A")).toHaveLength(3);
    // canary stays empty: checked in afterEach
  });

  it("defeats rebinding that flips on every query (check and dial share one answer)", async () => {
    // If anything resolved twice per connection (check, then dial), the second answer would be
    // the canary's address.
    dns.set("flip.test", [
      { A: [TARGET_IP] },
      { A: [BLOCKED_IP] },
      { A: [TARGET_IP] },
      { A: [BLOCKED_IP] },
    ]);
    const h = harness();
    const url = `http://flip.test:${target.port}/`;
    const outcomes: string[] = [];
    for (let i = 0; i < 4; i++) {
      try {
        await get(url, h.dispatcher);
        outcomes.push("ok");
      } catch (err) {
        outcomes.push(findErrorCode(err) ?? "unknown");
      }
    }
    expect(outcomes).toEqual(["ok", "SECSNAP_BLOCKED", "ok", "SECSNAP_BLOCKED"]);
    expect(h.dialled).toEqual([TARGET_IP, TARGET_IP]);
  });

  it("puts IP literals through the same check", async () => {
    const h = harness();
    const before = target.requests.length;
    expect(await get(`http://${TARGET_IP}:${target.port}/`, h.dispatcher)).toBe("target");
    expect(target.requests.at(-1)?.localAddress).toBe(TARGET_IP);

    const err = await rejection(get(`http://${BLOCKED_IP}:${target.port}/`, h.dispatcher));
    expect(err).toMatchObject({ code: "SECSNAP_BLOCKED", address: BLOCKED_IP });
    const v6 = await rejection(get(`http://[::1]:${target.port}/`, h.dispatcher));
    expect(v6).toMatchObject({ code: "SECSNAP_BLOCKED", address: "::1" });
    const mapped = await rejection(get(`http://[::ffff:127.0.0.1]:${target.port}/`, h.dispatcher));
    expect(mapped).toMatchObject({ code: "SECSNAP_BLOCKED", address: "::ffff:7f00:1" });

    expect(h.resolved).toEqual([TARGET_IP, BLOCKED_IP, "::1", "::ffff:7f00:1"]);
    expect(h.dialled).toEqual([TARGET_IP]);
    expect(target.requests.length - before).toBe(1);
  });

  it("refuses a port outside the allowed set before resolving anything", async () => {
    dns.set("public.test", { A: [TARGET_IP] });
    const h = harness({}, [443]);
    const before = target.requests.length;
    const err = await rejection(get(`http://public.test:${target.port}/`, h.dispatcher));
    expect(err).toBeInstanceOf(BlockedPortError);
    expect(err).toMatchObject({ code: "SECSNAP_BLOCKED_PORT", port: target.port });
    expect(h.resolved).toEqual([]);
    expect(h.dialled).toEqual([]);
    expect(target.requests.length).toBe(before);
  });

  it("ignores HTTP_PROXY / HTTPS_PROXY / ALL_PROXY", async () => {
    const proxy = await startCanary("127.0.0.3");
    const names = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"];
    const saved = names.map((n) => [n, process.env[n]] as const);
    const noProxy = process.env.NO_PROXY;
    try {
      for (const n of names) process.env[n] = `http://127.0.0.3:${proxy.port}`;
      delete process.env.NO_PROXY;
      dns.set("public.test", { A: [TARGET_IP] });
      const h = harness();
      const before = target.requests.length;
      expect(await get(`http://public.test:${target.port}/`, h.dispatcher)).toBe("target");
      expect(target.requests.length - before).toBe(1);
      expect(proxy.connections).toEqual([]);
    } finally {
      for (const [n, v] of saved) {
        if (v === undefined) delete process.env[n];
        else process.env[n] = v;
      }
      if (noProxy !== undefined) process.env.NO_PROXY = noProxy;
      await proxy.close();
    }
  });

  it("tries the next checked address when one refuses, and only checked ones", async () => {
    // 127.0.0.4 is allowed but nothing listens there on this port.
    dns.set("two.test", { A: ["127.0.0.4", TARGET_IP] });
    const h = harness();
    expect(await get(`http://two.test:${target.port}/`, h.dispatcher)).toBe("target");
    expect(h.dialled).toEqual(["127.0.0.4", TARGET_IP]);
  });
});

describe("pinned dialler: errors the fetch layer must tell apart", () => {
  it("an unknown name is HostNotFoundError / ENOTFOUND, also through fetch()", async () => {
    const h = harness();
    const err = await rejection(get(`http://nowhere.test:${target.port}/`, h.dispatcher));
    expect(err).toBeInstanceOf(HostNotFoundError);
    expect(err).toMatchObject({ code: "ENOTFOUND", reason: "ENOTFOUND" });

    const viaFetch = await rejection(
      fetch(`http://nowhere.test:${target.port}/`, { dispatcher: h.dispatcher }),
    );
    expect(viaFetch).toBeInstanceOf(TypeError); // undici.fetch wraps: "fetch failed"
    expect(findErrorCode(viaFetch)).toBe("ENOTFOUND");
    expect(findError(viaFetch, HostNotFoundError)?.hostname).toBe("nowhere.test");
  });

  it("a blocked address through fetch() is recognisable by its code", async () => {
    dns.set("internal.test", { A: [BLOCKED_IP] });
    const h = harness();
    const err = await rejection(
      fetch(`http://internal.test:${target.port}/`, { dispatcher: h.dispatcher }),
    );
    expect(findErrorCode(err)).toBe("SECSNAP_BLOCKED");
    expect(findError(err, BlockedAddressError)?.address).toBe(BLOCKED_IP);
  });

  it.each([
    ["NODATA on both families", { A: [], AAAA: [] }, "ENODATA"],
    ["SERVFAIL", { rcode: "SERVFAIL" as const }, "ESERVFAIL"],
    ["a server that never answers", { drop: true }, "ETIMEOUT"],
  ])("a name that does not resolve (%s) is HostNotFoundError", async (_label, answer, reason) => {
    dns.set("broken.test", answer);
    const resolve = createResolver([dns.address], { timeoutMs: 300 });
    const err = await rejection(resolve("broken.test"));
    expect(err).toBeInstanceOf(HostNotFoundError);
    expect(err).toMatchObject({ code: "ENOTFOUND", reason });
  });

  it("one family answering is enough; AAAA-only names resolve", async () => {
    dns.set("v6only.test", { AAAA: ["2606:4700::1111"] });
    dns.set("both.test", { A: ["8.8.8.8"], AAAA: ["2001:4860:4860::8888"] });
    const resolve = createResolver([dns.address]);
    expect(await resolve("v6only.test")).toEqual(["2606:4700::1111"]);
    expect((await resolve("both.test")).sort()).toEqual(["2001:4860:4860::8888", "8.8.8.8"]);
    expect(await resolve("[2606:4700::1111]")).toEqual(["2606:4700::1111"]);
  });

  it("a name whose DNS does not answer within the connect timeout is ENOTFOUND (ETIMEOUT)", async () => {
    dns.set("silent.test", { drop: true });
    const slowResolver = createResolver([dns.address], { timeoutMs: 60_000 });
    const h = harness({ resolve: slowResolver, connectTimeoutMs: 200 });
    const err = await rejection(get(`http://silent.test:${target.port}/`, h.dispatcher));
    expect(err).toBeInstanceOf(HostNotFoundError);
    expect(err).toMatchObject({ code: "ENOTFOUND", reason: "ETIMEOUT" });
  });

  it("without DNS servers the system's servers are used; RFC 6761 names need no network", async () => {
    const system = createResolver([], { timeoutMs: 3_000 });
    const local = await system("localhost");
    expect(local.length).toBeGreaterThan(0);
    expect(local.every((a) => policy.isBlocked(a))).toBe(true);
    expect(await system("8.8.8.8")).toEqual(["8.8.8.8"]);
    const err = await rejection(system("no-such-host.invalid"));
    expect(err).toBeInstanceOf(HostNotFoundError);
  });

  it("a resolution the caller aborts rejects with the caller's reason", async () => {
    dns.set("slow.test", { drop: true });
    const resolve = createResolver([dns.address], { timeoutMs: 60_000 });
    const controller = new AbortController();
    const pending = rejection(resolve("slow.test", controller.signal));
    controller.abort(new Error("deadline"));
    expect(await pending).toMatchObject({ message: "deadline" });
  });

  it("a refused TCP connection is ECONNREFUSED in the tcp phase", async () => {
    const port = await closedPort(TARGET_IP);
    dns.set("public.test", { A: [TARGET_IP] });
    const h = harness({}, [port]);
    const err = await rejection(get(`http://public.test:${port}/`, h.dispatcher));
    expect(findErrorCode(err)).toBe("ECONNREFUSED");
    expect(findConnectPhase(err)).toBe("tcp");
  });
});

describe("pinned dialler over TLS", () => {
  let tlsTarget: Target;
  let tlsCanary: Canary;
  let untrustedCaPem: string;

  const serve = (leaf: TestLeaf) => async () =>
    listenTarget(createHttpsServer({ cert: leaf.certPem, key: leaf.keyPem }), TARGET_IP);

  beforeAll(async () => {
    const leaf = await issueLeaf(await loadTestCa(), { dnsNames: ["secure.test"] });
    ({ target: tlsTarget, canary: tlsCanary } = await startWithCanaryOnSamePort(
      serve(leaf),
      BLOCKED_IP,
    ));
    const untrustedCa = await createCa("dialler test private CA");
    untrustedCaPem = untrustedCa.certPem;
    const privateLeaf = await issueLeaf(untrustedCa, { dnsNames: ["private.test"] });
    privateTarget = await serve(privateLeaf)();
  });
  let privateTarget: Target;

  afterAll(async () => {
    await Promise.all([tlsTarget?.close(), tlsCanary?.close(), privateTarget?.close()]);
  });

  afterEach(() => {
    const landed = tlsCanary.connections.splice(0);
    expect(landed).toEqual([]);
  });

  it("verifies the certificate against the host name while dialling the pinned IP", async () => {
    dns.set("secure.test", { A: [TARGET_IP] });
    const h = harness({}, [tlsTarget.port]);
    expect(await get(`https://secure.test:${tlsTarget.port}/`, h.dispatcher)).toBe("target");
    const seen = tlsTarget.requests.at(-1);
    expect(seen?.localAddress).toBe(TARGET_IP);
    expect(seen?.servername).toBe("secure.test");
    expect(h.dialled).toEqual([TARGET_IP]);
  });

  it("a trailing-dot name is verified without the dot", async () => {
    dns.set("secure.test", { A: [TARGET_IP] });
    const h = harness({}, [tlsTarget.port]);
    expect(await get(`https://secure.test.:${tlsTarget.port}/`, h.dispatcher)).toBe("target");
    expect(tlsTarget.requests.at(-1)?.servername).toBe("secure.test");
  });

  it("a name the certificate does not cover fails in the tls phase", async () => {
    dns.set("other.test", { A: [TARGET_IP] });
    const h = harness({}, [tlsTarget.port]);
    const err = await rejection(get(`https://other.test:${tlsTarget.port}/`, h.dispatcher));
    expect(findErrorCode(err)).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
    expect(findConnectPhase(err)).toBe("tls");
  });

  it("an IP literal is checked against the certificate as an IP (no SNI)", async () => {
    const h = harness({}, [tlsTarget.port]);
    const err = await rejection(get(`https://${TARGET_IP}:${tlsTarget.port}/`, h.dispatcher));
    expect(findErrorCode(err)).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
    expect(findConnectPhase(err)).toBe("tls");
  });

  it("TLS to a plain HTTP server fails in the tls phase", async () => {
    dns.set("public.test", { A: [TARGET_IP] });
    const h = harness();
    const err = await rejection(get(`https://public.test:${target.port}/`, h.dispatcher));
    expect(findErrorCode(err)).toMatch(/^ERR_SSL_|^EPROTO$/);
    expect(findConnectPhase(err)).toBe("tls");
  });

  it("an untrusted CA is refused unless passed as tls.ca", async () => {
    dns.set("private.test", { A: [TARGET_IP] });
    const url = `https://private.test:${privateTarget.port}/`;
    const plain = harness({}, [privateTarget.port]);
    const err = await rejection(get(url, plain.dispatcher));
    // The server sends its (untrusted, self-signed) CA along with the leaf.
    expect(findErrorCode(err)).toBe("SELF_SIGNED_CERT_IN_CHAIN");
    expect(findConnectPhase(err)).toBe("tls");

    const trusting = harness({ tls: { ca: [untrustedCaPem] } }, [privateTarget.port]);
    expect(await get(url, trusting.dispatcher)).toBe("target");
  });
});

describe("pinned dialler: one deadline, cancellable", () => {
  // Allowed for these tests only; a child process holds them with full accept queues.
  const HOLES = ["127.0.0.64", "127.0.0.65", "127.0.0.66"];
  const holesOpen = (ip: string) => !HOLES.includes(ip) && policy.isBlocked(ip);
  let hole: DroppedSynHost;

  beforeAll(async () => {
    hole = await startDroppedSynHost(HOLES);
  });
  afterAll(async () => {
    await hole?.close();
  });

  async function elapsed(p: Promise<unknown>): Promise<{ ms: number; err: unknown }> {
    const t0 = performance.now();
    const err = await rejection(p);
    return { ms: performance.now() - t0, err };
  }

  it("splits the time left between the checked addresses: all are tried, all by the deadline", async () => {
    dns.set("holes.test", { A: HOLES });
    const deadlineMs = 1500;
    const h = harness({ isBlockedAddress: holesOpen, deadline: Date.now() + deadlineMs }, [
      hole.port,
    ]);
    const { ms, err } = await elapsed(get(`http://holes.test:${hole.port}/`, h.dispatcher));
    expect(findErrorCode(err)).toBe("UND_ERR_CONNECT_TIMEOUT");
    expect(h.dialled).toEqual(HOLES);
    expect(ms).toBeLessThan(deadlineMs + 1500);
  });

  it("a deadline that passes while resolving is a timeout, not 'does not resolve'", async () => {
    dns.set("mute.test", { drop: true });
    const h = harness({ deadline: Date.now() + 300 });
    const err = await rejection(get(`http://mute.test:${target.port}/`, h.dispatcher));
    expect(err).toMatchObject({ name: "TimeoutError" });
    expect(err).not.toBeInstanceOf(HostNotFoundError);
  });

  it("aborting the signal destroys a dial in progress at once", async () => {
    dns.set("holes.test", { A: HOLES });
    const controller = new AbortController();
    let dialling = () => undefined as void;
    const dialled = new Promise<void>((r) => (dialling = r));
    const h = harness(
      { isBlockedAddress: holesOpen, signal: controller.signal, onDial: () => dialling() },
      [hole.port],
    );
    const pending = elapsed(get(`http://holes.test:${hole.port}/`, h.dispatcher));
    await dialled;
    controller.abort(new Error("snapshot over"));
    const { ms, err } = await pending;
    expect(err).toMatchObject({ message: "snapshot over" });
    // The connect timeout is 5000 ms per connection: an abort acted on only when the dial
    // returns would take that long.
    expect(ms).toBeLessThan(2500);
  });

  it("without DNS servers, c-ares asks the default resolver's servers and an abort cancels the queries", async () => {
    const saved = nodeDns.getServers();
    nodeDns.setServers([dns.address]);
    try {
      dns.set("gone.test", { drop: true });
      dns.set("here.test", { A: [TARGET_IP] });
      // A per-try timeout of 500 ms: without cancel(), c-ares would ask again after it.
      const system = createResolver([], { timeoutMs: 1000 });
      expect(await system("here.test")).toEqual([TARGET_IP]);
      const controller = new AbortController();
      const pending = rejection(system("gone.test", controller.signal));
      for (let i = 0; i < 100 && dns.queriesFor("gone.test").length < 2; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      controller.abort(new Error("deadline"));
      expect(await pending).toMatchObject({ message: "deadline" });
      await new Promise((r) => setTimeout(r, 1500));
      expect(dns.queriesFor("gone.test", "A")).toHaveLength(1);
      expect(dns.queriesFor("gone.test", "AAAA")).toHaveLength(1);
    } finally {
      nodeDns.setServers(saved);
    }
  });
});

describe("pinned dialler: requests waiting for one origin's connections", () => {
  it("an origin's connections: at most the limit, reused, all requests answered, then closed", async () => {
    const server = createHttpServer((_req, res) => res.end("held target"));
    let connections = 0;
    server.on("connection", () => connections++);
    await new Promise<void>((r) => server.listen(0, TARGET_IP, r));
    const { port } = server.address() as { port: number };
    const origin = new OriginConnections(`http://${TARGET_IP}:${port}`, {}, 2);
    try {
      const ask = async () => (await origin.request({ path: "/", method: "GET" })).body.text();
      // Six at once over two connections: four wait, then take the freed connections.
      expect(await Promise.all(Array.from({ length: 6 }, ask))).toEqual(
        Array.from({ length: 6 }, () => "held target"),
      );
      expect(connections).toBe(2);
      await origin.close();
      expect(origin.closed).toBe(true);
      await expect(ask()).rejects.toThrow(/closed/i);
    } finally {
      await origin.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("more requests than connections all complete, the waiting ones once a connection frees", async () => {
    const h = harness();
    const before = target.requests.length;
    // 16 connections per origin: 24 at once leaves 8 waiting in the queue.
    const bodies = await Promise.all(
      Array.from({ length: 24 }, () => get(`http://${TARGET_IP}:${target.port}/`, h.dispatcher)),
    );
    expect(bodies).toEqual(Array.from({ length: 24 }, () => "target"));
    expect(target.requests.length - before).toBe(24);
  });

  it("destroying the dispatcher fails the waiting requests too, none is left hanging", async () => {
    // A server that holds every request: 16 take the connections, 4 wait in the queue.
    const held: ServerResponse[] = [];
    const server = createHttpServer((_req, res) => void held.push(res));
    await new Promise<void>((r) => server.listen(0, TARGET_IP, r));
    const { port } = server.address() as { port: number };
    try {
      const h = harness({}, [port]);
      const pending = Array.from({ length: 20 }, () =>
        rejection(get(`http://${TARGET_IP}:${port}/`, h.dispatcher)),
      );
      for (let i = 0; i < 300 && held.length < 16; i++) await new Promise((r) => setTimeout(r, 10));
      expect(held.length).toBe(16);
      dispatchers.splice(dispatchers.indexOf(h.dispatcher), 1);
      await h.dispatcher.destroy();
      const errors = await Promise.all(pending);
      expect(errors.every((e) => e instanceof Error)).toBe(true);
      expect(held.length).toBe(16);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
