/**
 * A real HAProxy in front of two servers (test/fixtures/load-balancer.ts), checking them with
 * its plain `option httpchk GET /ready` — HTTP/1.0 without Host, the check most configurations
 * use: both instances stay up and share the traffic, and one whose /ready fails is taken out
 * (docs/operations.md, "The load balancer checks GET /ready").
 */
import { afterAll, expect, it } from "vitest";
import {
  SnapshotAdmission,
  createApp,
  startServer,
  type RunningServer,
} from "../../src/http/index.js";
import { createUrlPolicy } from "../../src/snapshot/index.js";
import { startLoadBalancer, type LoadBalancer } from "../fixtures/load-balancer.js";
import { systemBinary } from "../fixtures/system-binary.js";
import { DEFAULT_PORTS, ScriptedEngine, sampleResult } from "./helpers.js";

const haproxy = systemBinary("haproxy", "haproxy");
const opened: Array<RunningServer | LoadBalancer> = [];
afterAll(async () => {
  await Promise.all(opened.map((x) => ("config" in x ? x.close() : x.close(100))));
});

async function instance(admission: SnapshotAdmission): Promise<RunningServer> {
  const app = createApp({
    engine: new ScriptedEngine(async (raw) => sampleResult(raw)),
    urlPolicy: createUrlPolicy({ allowedPorts: DEFAULT_PORTS, allowCidrs: [] }),
    log: () => {},
    admission,
  });
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
  opened.push(server);
  return server;
}

it.skipIf(!haproxy)(
  "HAProxy's plain `option httpchk GET /ready` keeps both instances up; traffic reaches both",
  { timeout: 60_000 },
  async () => {
    const drainingB = new SnapshotAdmission();
    const [a, b] = [await instance(new SnapshotAdmission()), await instance(drainingB)];
    const lb = await startLoadBalancer(haproxy!, [
      { name: "a", port: a.port },
      { name: "b", port: b.port },
    ]);
    opened.push(lb);
    expect(lb.config).toMatch(/^ {2}option httpchk GET \/ready$/m);
    await lb.waitFor("a", "UP");
    await lb.waitFor("b", "UP");

    const servedBy = new Set<string>();
    for (let i = 0; i < 6; i++) {
      const answer = await fetch(`${lb.url}/demo/snapshot`);
      expect(answer.status).toBe(200);
      servedBy.add(answer.headers.get("x-served-by") ?? "");
      await answer.arrayBuffer();
    }
    expect([...servedBy].sort()).toEqual(["a", "b"]);

    // b's /ready turns 503: the same check takes it out, and a stays up.
    drainingB.drain();
    await lb.waitFor("b", "DOWN");
    expect((await lb.status()).a).toBe("UP");
    const answer = await fetch(`${lb.url}/health`);
    expect(answer.headers.get("x-served-by")).toBe("a");
  },
);
