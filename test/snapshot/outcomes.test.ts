/**
 * Every row of the outcome table of docs/contract.md §4.2, plus redirect-chain handling, against
 * real servers and a real DNS server.
 */
import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { createServer as createTcpServer } from "node:net";
import type { AddressInfo, Server as TcpServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine, SnapshotResult } from "../../src/snapshot/index.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { SnapshotError } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  BLOCKED_HOST,
  PUBLIC_HOST,
  closedPort,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
  startResetServer,
  startSilentServer,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueExpiredLeaf, issueLeaf, loadTestCa } from "../fixtures/tls.js";

let dns: DnsFixture;
let site: TargetServer;
let secure: TargetServer;
let expired: TargetServer;
let reset: Awaited<ReturnType<typeof startResetServer>>;
let silent: Awaited<ReturnType<typeof startSilentServer>>;
let closed: number;
/** Reads the ClientHello, answers with the start of a TLS record (or nothing), then closes. */
let tlsCutOff: TcpServer;
let tlsSilentClose: TcpServer;
let engine: SnapshotEngine;
let fastEngine: SnapshotEngine;
let ports: number[];

async function failure(p: Promise<unknown>): Promise<SnapshotError> {
  const err = await p.then(
    () => new Error("expected a SnapshotError"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SnapshotError);
  return err as SnapshotError;
}

function valid(r: SnapshotResult): SnapshotResult {
  expect(SnapshotResultSchema.parse(r)).toEqual(r);
  expect(r.final_status_code === null).toBe(!r.reachable);
  return r;
}

beforeAll(async () => {
  const ca = await loadTestCa();
  const names = { dnsNames: ["site.test", "secure.test"], ips: [PUBLIC_HOST] };
  dns = await startDnsServer({
    "site.test": { A: [PUBLIC_HOST] },
    "secure.test": { A: [PUBLIC_HOST] },
    "evil.test": { A: [BLOCKED_HOST] },
    "mixed.test": { A: [PUBLIC_HOST, BLOCKED_HOST] },
    "silent-dns.test": { drop: true },
  });
  site = await startHttpTarget({
    routes: {
      "/": respond.text("home"),
      "/error": respond.status(500, { "x-frame-options": "DENY" }, "boom"),
      "/never": respond.neverAnswer(),
      "/hang-up": respond.hangUp(),
      // Part of a status line and headers, then the server closes: an HTTP exchange began.
      "/cut-off": (req) => {
        req.socket.write("HTTP/1.1 200 OK\r\nX-Frame-Options: DENY\r\n", () => req.socket.end());
      },
    },
  });
  secure = await startHttpsTarget({
    cert: await issueLeaf(ca, names),
    routes: { "/": respond.text("secure"), "/hang-up": respond.hangUp() },
  });
  expired = await startHttpsTarget({ cert: await issueExpiredLeaf(ca, names) });
  reset = await startResetServer();
  silent = await startSilentServer();
  closed = await closedPort();
  const closeAfterHello = (answer: Buffer) =>
    createTcpServer((socket) => {
      socket.on("error", () => undefined);
      socket.once("data", () => socket.end(answer));
    });
  // A ServerHello record header: the server has started the handshake.
  tlsCutOff = closeAfterHello(Buffer.from([0x16, 0x03, 0x03, 0x00, 0x40, 0x02, 0x00]));
  tlsSilentClose = closeAfterHello(Buffer.alloc(0));
  for (const server of [tlsCutOff, tlsSilentClose]) {
    server.listen(0, PUBLIC_HOST);
    await once(server, "listening");
  }
  const port = (server: TcpServer) => (server.address() as AddressInfo).port;
  ports = [
    site.port,
    secure.port,
    expired.port,
    reset.port,
    silent.port,
    closed,
    port(tlsCutOff),
    port(tlsSilentClose),
  ];
  engine = createTestEngine({ dns, ports, httpsProbePort: secure.port });
  fastEngine = createTestEngine({ dns, ports, httpsProbePort: secure.port, timeoutMs: 1500 });
});

afterAll(async () => {
  await Promise.all([engine.close(), fastEngine.close()]);
  await Promise.all([site, secure, expired, reset, silent, dns].map((s) => s.close()));
  for (const server of [tlsCutOff, tlsSilentClose]) server.close();
});

describe("input (docs/contract.md §3) → 400 before any network", () => {
  it("a non-http scheme is invalid_url and keeps the input as requested_url", async () => {
    const err = await failure(engine.snapshot("gopher://127.0.0.1/"));
    expect(err.errorType).toBe("invalid_url");
    expect(err.toBody().requested_url).toBe("gopher://127.0.0.1/");
  });

  it("a blocked literal is ssrf", async () => {
    const err = await failure(engine.snapshot(`http://${BLOCKED_HOST}:${site.port}/`));
    expect(err.errorType).toBe("ssrf");
    expect(site.requests).toHaveLength(0);
  });
});

describe("ssrf: the input host or a hop resolves to a blocked address / port / scheme", () => {
  it("a name whose only answer is blocked", async () => {
    const err = await failure(engine.snapshot(`http://evil.test:${site.port}/`));
    expect(err.errorType).toBe("ssrf");
    expect(err.requestedUrl).toBe(`http://evil.test:${site.port}/`);
    // A loopback answer: the refusal says how to check a site on this machine.
    expect(err.message).toBe(
      `evil.test resolves to ${BLOCKED_HOST}, a private, reserved or otherwise non-public ` +
        "address; for a site on your machine use `secsnap scan --local` or " +
        "`secsnap serve --allow-local`.",
    );
  });

  it("a name with one blocked answer among public ones", async () => {
    expect((await failure(engine.snapshot(`http://mixed.test:${site.port}/`))).errorType).toBe(
      "ssrf",
    );
  });

  it.each([
    ["a blocked literal", () => `http://${BLOCKED_HOST}:${site.port}/`],
    ["a name resolving to a blocked address", () => `http://evil.test:${site.port}/`],
    ["a file: URL", () => "file:///etc/passwd"],
    ["a port outside the allowed set", () => `http://site.test:1/`],
    ["credentials", () => `http://user:pw@site.test:${site.port}/`],
  ])("a redirect to %s", async (_what, location) => {
    site.route("/hop", respond.redirect(location()));
    const err = await failure(engine.snapshot(`http://site.test:${site.port}/hop`));
    expect(err.errorType).toBe("ssrf");
  });
});

describe("unreachable: the first request never got to an exchange", () => {
  it("the name does not resolve", async () => {
    const err = await failure(engine.snapshot(`http://nowhere.test:${site.port}/`));
    expect(err.errorType).toBe("unreachable");
    expect(err.message).toMatch(/does not resolve/);
  });

  it("the port refuses the connection", async () => {
    const err = await failure(engine.snapshot(`http://site.test:${closed}/`));
    expect(err.errorType).toBe("unreachable");
    expect(err.message).toMatch(/refused/);
  });

  it("the connection is reset at once (http and https)", async () => {
    expect((await failure(engine.snapshot(`http://site.test:${reset.port}/`))).errorType).toBe(
      "unreachable",
    );
    expect((await failure(engine.snapshot(`https://site.test:${reset.port}/`))).errorType).toBe(
      "unreachable",
    );
  });

  it("a server that reads the ClientHello and closes without sending a byte", async () => {
    const port = (tlsSilentClose.address() as AddressInfo).port;
    const err = await failure(engine.snapshot(`https://site.test:${port}/`));
    expect(err.errorType).toBe("unreachable");
  });

  it("an HTTP server that reads the request and closes without sending a byte", async () => {
    const err = await failure(engine.snapshot(`http://site.test:${site.port}/hang-up`));
    expect(err.errorType).toBe("unreachable");
  });
});

describe("timeout: no response to the first request before the deadline", () => {
  it("an HTTP server that reads the request and never answers", async () => {
    const err = await failure(fastEngine.snapshot(`http://site.test:${site.port}/never`));
    expect(err.errorType).toBe("timeout");
  });

  it("a DNS server that never answers", async () => {
    const err = await failure(fastEngine.snapshot(`http://silent-dns.test:${site.port}/`));
    expect(err.errorType).toBe("timeout");
  });

  it("a TCP server that never speaks TLS", async () => {
    const err = await failure(fastEngine.snapshot(`https://site.test:${silent.port}/`));
    expect(err.errorType).toBe("timeout");
  });
});

describe("200 with reachable false: something learned, no final response", () => {
  it("the first hop's certificate is expired", async () => {
    const r = valid(await engine.snapshot(`https://secure.test:${expired.port}/`));
    expect(r).toMatchObject({
      reachable: false,
      final_status_code: null,
      redirect_count: 0,
      final_url: `https://secure.test:${expired.port}/`,
      https_ok: false,
      hsts_present: false,
      x_frame_options_present: false,
      security_txt_present: null,
      robots_txt_present: null,
      sitemap_xml_present: null,
    });
    expect(r.notes.join(" ")).toMatch(/certificate has expired/);
  });

  it("the first TLS handshake is cut off after the server began it (a TLS exchange happened)", async () => {
    const port = (tlsCutOff.address() as AddressInfo).port;
    const r = valid(await engine.snapshot(`https://site.test:${port}/`));
    expect(r).toMatchObject({ reachable: false, final_status_code: null, https_ok: false });
    expect(r.notes.find((n) => n.startsWith("HTTPS does not work"))).toMatch(
      /the TLS handshake failed/,
    );
  });

  it("the first https request is closed after a completed TLS handshake (a TLS exchange happened)", async () => {
    const r = valid(await engine.snapshot(`https://secure.test:${secure.port}/hang-up`));
    expect(r).toMatchObject({
      reachable: false,
      final_status_code: null,
      redirect_count: 0,
      https_ok: false,
      robots_txt_present: null,
    });
    expect(r.notes).toContain(
      `HTTPS does not work (https://secure.test:${secure.port}/hang-up): the connection was closed before a complete response.`,
    );
  });

  it("the first http answer is cut off after part of its headers (an HTTP exchange happened)", async () => {
    const r = valid(await engine.snapshot(`http://site.test:${site.port}/cut-off`));
    expect(r).toMatchObject({
      reachable: false,
      final_status_code: null,
      x_frame_options_present: false,
      security_txt_present: null,
    });
    expect(r.notes).toContain(
      `No final response: the request to http://site.test:${site.port}/cut-off failed because the connection was closed before a complete response.`,
    );
  });

  it("a later hop refuses the connection", async () => {
    site.route("/to-closed", respond.redirect(`http://site.test:${closed}/next`));
    const r = valid(await engine.snapshot(`http://site.test:${site.port}/to-closed`));
    expect(r).toMatchObject({
      reachable: false,
      final_status_code: null,
      redirect_count: 1,
      final_url: `http://site.test:${closed}/next`,
      robots_txt_present: null,
    });
    expect(r.notes).toContain(
      `No final response: the request to http://site.test:${closed}/next failed because the connection was refused.`,
    );
  });

  it("a later hop times out", async () => {
    site.route("/to-never", respond.redirect("/never"));
    const r = valid(await fastEngine.snapshot(`http://site.test:${site.port}/to-never`));
    expect(r).toMatchObject({
      reachable: false,
      redirect_count: 1,
      final_url: `http://site.test:${site.port}/never`,
    });
    expect(r.notes.join(" ")).toMatch(/deadline/);
  });

  it("the redirect cap: with cap 10, an 11th redirect stops at the 11th URL", async () => {
    site.route("*", (req, res) => {
      const m = /^\/r\/(\d+)$/.exec(req.url ?? "");
      if (!m) return respond.status(404)(req, res);
      respond.redirect(`/r/${Number(m[1]) + 1}`)(req, res);
    });
    try {
      const r = valid(await engine.snapshot(`http://site.test:${site.port}/r/0`));
      expect(r.reachable).toBe(false);
      expect(r.redirect_count).toBe(10);
      expect(r.final_url).toBe(`http://site.test:${site.port}/r/10`);
      expect(site.requests.filter((q) => q.path.startsWith("/r/")).map((q) => q.path)).toEqual(
        Array.from({ length: 11 }, (_, i) => `/r/${i}`),
      );
      expect(r.notes.join(" ")).toMatch(/redirects more than 10 times/);
    } finally {
      site.route("*", respond.status(404));
    }
  });

  it("SNAPSHOT_MAX_REDIRECTS sets the cap: with 2, the 3rd redirect stops at the 3rd URL", async () => {
    const capped = createTestEngine({
      dns,
      ports: [site.port],
      httpsProbePort: secure.port,
      maxRedirects: 2,
    });
    site.route("/c0", respond.redirect("/c1"));
    site.route("/c1", respond.redirect("/c2"));
    site.route("/c2", respond.redirect("/c3"));
    site.route("/c3", respond.text("never asked"));
    try {
      const r = valid(await capped.snapshot(`http://site.test:${site.port}/c0`));
      expect(r).toMatchObject({
        reachable: false,
        redirect_count: 2,
        final_url: `http://site.test:${site.port}/c2`,
      });
      expect(site.requests.some((q) => q.path === "/c3")).toBe(false);
      expect(r.notes.join(" ")).toMatch(/redirects more than 2 times/);
      // Two redirects are within the cap.
      const ok = valid(await capped.snapshot(`http://site.test:${site.port}/c1`));
      expect(ok).toMatchObject({ reachable: true, redirect_count: 2, final_status_code: 200 });
    } finally {
      await capped.close();
    }
  });

  it("a redirect loop ends at the cap too", async () => {
    site.route("/loop-a", respond.redirect("/loop-b"));
    site.route("/loop-b", respond.redirect("/loop-a"));
    const r = valid(await engine.snapshot(`http://site.test:${site.port}/loop-a`));
    expect(r).toMatchObject({
      reachable: false,
      redirect_count: 10,
      final_url: `http://site.test:${site.port}/loop-a`,
    });
  });
});

describe("speculative work is reused, not repeated", () => {
  it("same origin: each well-known file and the HTTPS probe are requested once", async () => {
    site.route("/spec", respond.text("x"));
    const siteBefore = site.requests.length;
    const secureBefore = secure.requests.length;
    const r = valid(await engine.snapshot(`http://secure.test:${site.port}/spec`));
    expect(r.https_ok).toBe(true);
    // The CORS probe (it carries an Origin) asks the final URL once more, on purpose.
    const paths = site.requests
      .slice(siteBefore)
      .filter((q) => q.headers.origin === undefined)
      .map((q) => q.path);
    for (const p of ["/spec", "/robots.txt", "/sitemap.xml", "/.well-known/security.txt"]) {
      expect(paths.filter((x) => x === p)).toHaveLength(1);
    }
    expect(secure.requests.slice(secureBefore).map((q) => q.path)).toEqual(["/"]);
  });
});

describe("speculation under a crowd (EngineOptions.speculationLimit)", () => {
  const WELL_KNOWN = ["/.well-known/security.txt", "/robots.txt", "/sitemap.xml"];

  async function until(condition: () => boolean): Promise<void> {
    while (!condition()) await sleep(10);
  }

  it("above the limit a snapshot asks for its files only once its chain has ended; same report", async () => {
    const limited = createTestEngine({
      dns,
      ports,
      httpsProbePort: secure.port,
      speculationLimit: 1,
    });
    const held: ServerResponse[] = [];
    // The main requests are held; the CORS probe (it carries an Origin) is answered at once.
    const hold = (req: IncomingMessage, res: ServerResponse) =>
      req.headers.origin === undefined ? held.push(res) : res.writeHead(204).end();
    secure.route("/held-1", hold);
    secure.route("/held-2", hold);
    const before = secure.requests.length;
    const filesAsked = () =>
      secure.requests.slice(before).filter((q) => WELL_KNOWN.includes(q.path)).length;
    try {
      // The first has no other snapshot in flight: its files are asked with its main request
      // (an https input: an http one's files wait for the chain anyway).
      const first = limited.snapshot(`https://secure.test:${secure.port}/held-1`);
      await until(() => held.length === 1 && filesAsked() === 3);
      // The second starts with one in flight, which is the limit: only its main request goes.
      const second = limited.snapshot(`https://secure.test:${secure.port}/held-2`);
      await until(() => held.length === 2);
      await sleep(300);
      expect(filesAsked()).toBe(3);
      for (const res of held) res.writeHead(200, { "content-type": "text/plain" }).end("x");
      const [a, b] = await Promise.all([first, second]);
      // Asked after the chain instead: the second report is the first's, file by file.
      expect(filesAsked()).toBe(6);
      const fields = (r: SnapshotResult) => ({
        https_ok: r.https_ok,
        security_txt_present: r.security_txt_present,
        robots_txt_present: r.robots_txt_present,
        sitemap_xml_present: r.sitemap_xml_present,
        notes: r.notes,
        findings: r.findings,
      });
      const asFirst = JSON.stringify(fields(valid(b))).replaceAll("/held-2", "/held-1");
      expect(JSON.parse(asFirst)).toEqual(fields(valid(a)));
    } finally {
      await limited.close();
    }
  });
});

describe("200 with reachable true: any final response", () => {
  it("a 500 is a final response; its headers count", async () => {
    const r = valid(await engine.snapshot(`http://site.test:${site.port}/error`));
    expect(r).toMatchObject({
      reachable: true,
      final_status_code: 500,
      redirect_count: 0,
      x_frame_options_present: true,
    });
  });

  it("relative, absolute and cross-origin redirects are followed and counted", async () => {
    site.route("/a", respond.redirect("b?x=1", 301));
    site.route("/b?x=1", respond.redirect(`https://secure.test:${secure.port}/`, 308));
    const r = valid(await engine.snapshot(`http://site.test:${site.port}/a#frag`));
    expect(r).toMatchObject({
      requested_url: `http://site.test:${site.port}/a#frag`,
      normalized_url: `http://site.test:${site.port}/a`,
      final_url: `https://secure.test:${secure.port}/`,
      reachable: true,
      final_status_code: 200,
      redirect_count: 2,
      https_ok: true,
    });
  });

  it("a 3xx without Location is a final response", async () => {
    site.route("/304", respond.status(304));
    const r = valid(await engine.snapshot(`http://site.test:${site.port}/304`));
    expect(r).toMatchObject({ reachable: true, final_status_code: 304, redirect_count: 0 });
  });

  it("requests carry the service's User-Agent and no cookie or credential", async () => {
    site.route("/ua", respond.text("ok", { "set-cookie": "a=b" }));
    site.route("/ua2", respond.redirect("/ua3"));
    site.route("/ua3", respond.text("ok"));
    await engine.snapshot(`http://site.test:${site.port}/ua`);
    await engine.snapshot(`http://site.test:${site.port}/ua2`);
    const seen = site.requests.filter((q) => q.path.startsWith("/ua"));
    // Three chain requests and the CORS probe of each final URL (/ua, /ua3).
    expect(seen.map((q) => q.path).sort()).toEqual(["/ua", "/ua", "/ua2", "/ua3", "/ua3"]);
    for (const q of seen) {
      expect(q.method).toBe("GET");
      expect(q.headers["user-agent"]).toBe("secsnap/1.0.0");
      expect(q.headers.cookie).toBeUndefined();
      expect(q.headers.authorization).toBeUndefined();
      expect(q.headers["accept-encoding"]).toBe("gzip, deflate, br");
    }
    // The well-known probes and the HTTPS probe are requests of the snapshot too.
    const probes = [...site.requests, ...secure.requests].filter((q) =>
      ["/robots.txt", "/sitemap.xml", "/.well-known/security.txt", "/"].includes(q.path),
    );
    expect(probes.length).toBeGreaterThanOrEqual(4);
    for (const q of probes) {
      expect(q.headers["user-agent"]).toBe("secsnap/1.0.0");
      expect(q.headers.cookie).toBeUndefined();
      expect(q.headers.authorization).toBeUndefined();
    }
  });
});
