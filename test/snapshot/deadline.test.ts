/**
 * One deadline bounds everything (docs/security.md, "Hostile targets and payers"): DNS, every
 * dial attempt, redirects and shutdown. The hostile parts are real: a host whose SYNs the kernel
 * drops (a full accept queue, test/fixtures/hostile-network.ts) and a DNS server that drops
 * queries. Times are measured against the configured deadline with a generous margin.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import { SnapshotError } from "../../src/snapshot/index.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import { startDroppedSynHost } from "../fixtures/hostile-network.js";
import type { DroppedSynHost } from "../fixtures/hostile-network.js";
import { PUBLIC_HOST, createTestEngine, respond, startHttpTarget } from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { serveApp } from "../http/helpers.js";

/** Black-holed addresses of this file (allow-listed for its engines, nothing else listens). */
const HOLES = ["127.0.0.61", "127.0.0.62", "127.0.0.63"];
const ALLOW = ["127.0.0.2/31", ...HOLES.map((a) => `${a}/32`)];
const TIMEOUT_MS = 2000;
/** What the answer may take beyond the deadline on a busy machine. */
const MARGIN_MS = 1500;

let dns: DnsFixture;
let hole: DroppedSynHost;
let site: TargetServer;
const engines: SnapshotEngine[] = [];

function engine(timeoutMs = TIMEOUT_MS): SnapshotEngine {
  const e = createTestEngine({
    dns,
    ports: [hole.port, site.port],
    timeoutMs,
    allowCidrs: ALLOW,
  });
  engines.push(e);
  return e;
}

async function timed<T>(work: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const t0 = performance.now();
  try {
    const value = await work;
    return { ms: performance.now() - t0, value };
  } catch (error) {
    return { ms: performance.now() - t0, error };
  }
}

beforeAll(async () => {
  hole = await startDroppedSynHost(HOLES);
  dns = await startDnsServer({
    "hole.test": { A: HOLES },
    "site.test": { A: [PUBLIC_HOST] },
    "silent.test": { drop: true },
  });
  site = await startHttpTarget({
    routes: { "/": respond.text("home") },
  });
});

afterAll(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await Promise.all([hole?.close(), dns?.close(), site?.close()]);
});

describe("the deadline holds while connecting", () => {
  it("a name with three black-holed addresses is a timeout by the deadline", async () => {
    const { ms, error } = await timed(engine().snapshot(`http://hole.test:${hole.port}/`));
    expect(error).toBeInstanceOf(SnapshotError);
    expect((error as SnapshotError).errorType).toBe("timeout");
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
  });

  it("a late redirect to a black-holed host ends by the deadline (200, chain broken)", async () => {
    site.route(
      "/late",
      respond.delay(TIMEOUT_MS * 0.7, respond.redirect(`http://hole.test:${hole.port}/`)),
    );
    const { ms, value, error } = await timed(
      engine().snapshot(`http://site.test:${site.port}/late`),
    );
    expect(error).toBeUndefined();
    expect(value).toMatchObject({
      reachable: false,
      redirect_count: 1,
      final_url: `http://hole.test:${hole.port}/`,
    });
    expect(value?.notes).toContain(
      `No final response: the request to http://hole.test:${hole.port}/ failed because no response arrived before the deadline.`,
    );
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
  });

  it("a late redirect to a name whose DNS never answers ends by the deadline", async () => {
    const timeoutMs = 4000;
    site.route(
      "/late-dns",
      respond.delay(timeoutMs - 500, respond.redirect(`http://silent.test:${site.port}/`)),
    );
    const { ms, value, error } = await timed(
      engine(timeoutMs).snapshot(`http://site.test:${site.port}/late-dns`),
    );
    expect(error).toBeUndefined();
    expect(value).toMatchObject({ reachable: false, redirect_count: 1 });
    expect(ms).toBeLessThan(timeoutMs + MARGIN_MS);
  });
});

describe("shutdown does not stretch a running snapshot", () => {
  it("engine.close() during a black-holed connect: both end by the deadline, a timeout", async () => {
    const e = engine();
    const t0 = performance.now();
    const running = timed(e.snapshot(`http://hole.test:${hole.port}/`));
    await new Promise((r) => setTimeout(r, 200));
    const closing = timed(e.close());
    const [snap, close] = await Promise.all([running, closing]);
    expect(snap.error).toBeInstanceOf(SnapshotError);
    expect((snap.error as SnapshotError).errorType).toBe("timeout");
    expect(close.error).toBeUndefined();
    expect(performance.now() - t0).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    // And a snapshot asked for after close is refused, not run.
    const late = await timed(e.snapshot(`http://site.test:${site.port}/`));
    expect((late.error as SnapshotError).errorType).toBe("unreachable");
  });

  it("a service draining on shutdown answers the running snapshot by its deadline, not a 500", async () => {
    const e = engine();
    const served = await serveApp({
      engine: e,
      allowCidrs: ALLOW,
      allowedPorts: new Set([hole.port, site.port]),
    });
    const t0 = performance.now();
    const answer = fetch(`${served.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `http://hole.test:${hole.port}/` }),
    });
    await new Promise((r) => setTimeout(r, 200));
    // What `secsnap serve` does on SIGTERM: stop accepting, wait (up to deadline + 5 s) for
    // running requests, close the engine. Here the engine is closed at once, the worst case.
    const draining = Promise.all([served.close(TIMEOUT_MS + 5000), e.close()]);
    const res = await answer;
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error_type: "timeout" });
    await draining;
    expect(performance.now() - t0).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
  });
});
