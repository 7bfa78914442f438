/**
 * Contract §7.3–7.4 on chain, a fleet: two `secsnap serve` processes (each with its own DATA_DIR) behind a
 * real HAProxy with the plain `option httpchk GET /ready` (HTTP/1.0, no Host; contract §2.7), sharing
 * a real redis-server with AOF on its own directory, paid through the devnet's facilitator behind
 * a proxy whose faults strike one authorization. Each case's first call goes to instance a; the
 * fault strikes (a crashed or drained, Redis crashed and restarted on the same AOF, or hung and
 * resumed); the same proof is retried at instance b; the chain must show nothing moved and the
 * proof still paying, or one transfer and the report (docs/faults.md). Never two.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type PublicClient } from "viem";
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/index.js";
import { startDurableRedis, type DurableRedis } from "../../fixtures/durable-redis.js";
import {
  FLEET_CASES,
  caseName,
  runCase,
  type Topology,
  type World,
} from "../../fixtures/fault-matrix.js";
import { startFaultProxy, type FaultProxy } from "../../fixtures/fault-proxy.js";
import { startHeldSite, type HeldSite } from "../../fixtures/held-site.js";
import { startLoadBalancer, type LoadBalancer } from "../../fixtures/load-balancer.js";
import { redisServerBinary } from "../../fixtures/redis.js";
import {
  fleetEnv,
  freePort,
  startInstance,
  type ServiceInstance,
} from "../../fixtures/service-instance.js";
import { systemBinary } from "../../fixtures/system-binary.js";
import { PUBLIC_CIDRS } from "../../fixtures/targets.js";

const haproxy = systemBinary("haproxy", "haproxy");

let devnet: Devnet;
let chain: PublicClient;
let proxy: FaultProxy;
let site: HeldSite;
let redis: DurableRedis;
let a: ServiceInstance;
let b: ServiceInstance;
let lb: LoadBalancer;
const dataDirs: string[] = [];
let world: World;
let topology: Topology;

/** The status line a raw request to `port` gets (what HAProxy's plain check sends). */
function rawStatusLine(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = "";
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (answer += d));
    socket.on("end", () => resolve(answer.split("\r\n")[0] ?? ""));
    socket.on("error", reject);
  });
}

const bothUp = () => Promise.all([lb.waitFor("a", "UP", 30_000), lb.waitFor("b", "UP", 30_000)]);

describe.skipIf(!redisServerBinary || !haproxy)(
  "money under faults, two instances behind HAProxy sharing Redis (contract §7.3–7.4)",
  () => {
    beforeAll(async () => {
      redis = await startDurableRedis();
      devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
      chain = createPublicClient({ transport: http(devnet.rpcUrl) });
      proxy = await startFaultProxy(devnet.facilitatorUrl);
      site = await startHeldSite();
      const lbPort = await freePort();
      const env = fleetEnv({
        payTo: devnet.payTo,
        facilitatorUrl: proxy.url,
        rpcUrl: devnet.rpcUrl,
        redisUrl: redis.url,
        publicUrl: `http://127.0.0.1:${lbPort}`,
        targetPorts: [site.port],
        allowCidrs: PUBLIC_CIDRS,
        extra: { SNAPSHOT_TIMEOUT_MS: "5000", LOG_LEVEL: "warn" },
      });
      const withDataDir = () => {
        const dir = mkdtempSync(join(tmpdir(), "secsnap-faults-data-"));
        dataDirs.push(dir);
        return { ...env, DATA_DIR: dir };
      };
      a = await startInstance({ name: "a", env: withDataDir() });
      b = await startInstance({ name: "b", env: withDataDir() });
      // HAProxy takes its port first (the instances are DOWN until they start).
      lb = await startLoadBalancer(haproxy!, [a, b], { port: lbPort });
      await Promise.all([a.start(), b.start()]);
      // What the plain check sends; said plainly here rather than as a timeout waiting for UP.
      const check = await rawStatusLine(a.port, "GET /ready HTTP/1.0\r\n\r\n");
      if (!/^HTTP\/1\.[01] 200 /.test(check)) {
        throw new Error(
          `GET /ready over HTTP/1.0 without Host answered "${check}": HAProxy's plain check keeps the instances down (contract §2.7)`,
        );
      }
      await bothUp();

      world = {
        devnet,
        chain,
        proxy,
        siteUrl: site.url,
        holdSite: () => site.hold(),
        releaseSite: () => site.release(),
      };
      topology = {
        first: {
          instance: a,
          send: (headers, signal) => site.post(lb.url, headers, signal, "a"),
          direct: (headers, signal) => site.post(a.url, headers, signal),
        },
        retry: (headers) => site.post(lb.url, headers, undefined, "b"),
        // b serves the retry; a comes back after the case.
        afterCrash: async () => {},
        afterStore: async () => {
          await bothUp();
        },
        redis,
      };
    }, 180_000);

    afterAll(async () => {
      site?.release();
      redis?.resume();
      await lb?.close();
      await Promise.all([a?.close(), b?.close()]);
      await proxy?.close();
      await site?.close();
      await devnet?.close();
      await redis?.close();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    // Each case starts from the whole fleet, whatever the one before it left down or held.
    afterEach(async () => {
      proxy.reset();
      site.release();
      redis.resume();
      await redis.start();
      for (const instance of [a, b]) if (instance.pid === undefined) await instance.start();
      await bothUp();
    }, 90_000);

    for (const c of FLEET_CASES) {
      it(caseName(c), { timeout: 150_000 }, () => runCase(world, topology, c));
    }
  },
);
