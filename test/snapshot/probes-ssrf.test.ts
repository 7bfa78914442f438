/**
 * The new probes under the SSRF rules: the http-side and CORS probes go through the snapshot's
 * pinned dialer, so a name whose DNS answer turns to a blocked address after the main request
 * (rebinding) never gets them a connection there. Canaries on the blocked address, on the same
 * ports as the real targets, record any connection that lands where it must not.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { startWithCanaryOnSamePort } from "../fixtures/canary.js";
import type { Canary } from "../fixtures/canary.js";
import { startDnsServer } from "../fixtures/dns-server.js";
import type { DnsFixture } from "../fixtures/dns-server.js";
import {
  BLOCKED_HOST,
  PUBLIC_HOST,
  createTestEngine,
  respond,
  startHttpTarget,
  startHttpsTarget,
} from "../fixtures/targets.js";
import type { TargetServer } from "../fixtures/targets.js";
import { issueLeaf, loadTestCa } from "../fixtures/tls.js";

let dns: DnsFixture;
let plain: { target: TargetServer; canary: Canary };
let secure: { target: TargetServer; canary: Canary };

beforeAll(async () => {
  const ca = await loadTestCa();
  const cert = await issueLeaf(ca, { dnsNames: ["rebind.test"] });
  // First answer public, every later one the blocked address (TTL 0).
  dns = await startDnsServer({ "rebind.test": [{ A: [PUBLIC_HOST] }, { A: [BLOCKED_HOST] }] });
  // Both answers come late, after the first DNS answer's shared window (2 s) has passed.
  const late = (headers = {}) =>
    respond.delay(
      2500,
      respond.html("<p>hi</p>", { "access-control-allow-credentials": "true", ...headers }),
    );
  plain = await startWithCanaryOnSamePort(
    () => startHttpTarget({ routes: { "/": late() } }),
    BLOCKED_HOST,
  );
  secure = await startWithCanaryOnSamePort(
    () => startHttpsTarget({ cert, routes: { "/": late() } }),
    BLOCKED_HOST,
  );
});

afterAll(async () => {
  for (const s of [plain, secure]) await Promise.all([s.target.close(), s.canary.close()]);
  await dns.close();
});

it("a rebinding name: the http-side and CORS probes never connect to the blocked address", async () => {
  const engine = createTestEngine({
    dns,
    ports: [plain.target.port, secure.target.port],
    httpsProbePort: secure.target.port,
    httpProbePort: plain.target.port,
    timeoutMs: 10_000,
  });
  try {
    const r = await engine.snapshot(`https://rebind.test:${secure.target.port}/`);
    expect(SnapshotResultSchema.parse(r)).toEqual(r);
    expect(r.reachable).toBe(true);
    // The probes now start with the page's request and share its one lookup; any later lookup
    // is answered with the blocked address, and nothing may ever connect there (the canaries).
    expect(dns.queriesFor("rebind.test", "A").length).toBeGreaterThanOrEqual(1);
  } finally {
    await engine.close();
  }
  expect(plain.canary.connections).toEqual([]);
  expect(secure.canary.connections).toEqual([]);
});

it("the http-side probe is not sent to a port the service may not use (80 by default here)", async () => {
  const engine = createTestEngine({
    dns,
    ports: [secure.target.port],
    httpsProbePort: secure.target.port,
    timeoutMs: 10_000,
  });
  dns.set("rebind.test", { A: [PUBLIC_HOST] });
  const before = plain.target.requests.length;
  try {
    const r = await engine.snapshot(`https://rebind.test:${secure.target.port}/`);
    expect(r.findings.filter((f) => f.check === "http_side")).toEqual([]);
  } finally {
    await engine.close();
  }
  expect(plain.target.requests.length).toBe(before);
  expect(plain.canary.connections).toEqual([]);
});
