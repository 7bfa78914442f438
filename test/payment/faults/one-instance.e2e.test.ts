/**
 * Contract §7.3–7.4 on chain, one instance: `secsnap serve` as a real process with its embedded store on
 * its own DATA_DIR, paid through a real facilitator (the project's, on the devnet's chain through
 * a node proxy, behind a proxy: the faults of both strike one authorization) by the official x402
 * clients, v1 and v2, with and without a payment id. Each case strikes one fault (docs/faults.md), restarts the instance with the same
 * environment and the same DATA_DIR when the fault killed it, retries the same proof and checks
 * the payer's USDC, Transfer logs and `authorizationState(from, nonce)`: nothing moved and the
 * proof still pays, or one transfer and the report. Never two.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, http, type PublicClient } from "viem";
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/index.js";
import type { RunningFacilitator } from "../../../src/facilitator/index.js";
import { startFaultProxy, type FaultProxy } from "../../fixtures/fault-proxy.js";
import {
  ONE_INSTANCE_CASES,
  caseName,
  runCase,
  type Topology,
  type World,
} from "../../fixtures/fault-matrix.js";
import { startHeldSite, type HeldSite } from "../../fixtures/held-site.js";
import { startFacilitatorOverNode, type NodeProxy } from "../../fixtures/node-proxy.js";
import { fleetEnv, startInstance, type ServiceInstance } from "../../fixtures/service-instance.js";
import { PUBLIC_CIDRS } from "../../fixtures/targets.js";

let devnet: Devnet;
let chain: PublicClient;
let node: NodeProxy;
let facilitator: RunningFacilitator;
let proxy: FaultProxy;
let site: HeldSite;
let instance: ServiceInstance;
let dataDir: string;
let world: World;
let topology: Topology;

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  // The devnet's chain under a facilitator of its own, so that faults can strike below it too.
  const started = await startFacilitatorOverNode(devnet, { confirmationTimeoutMs: 30_000 });
  ({ node, facilitator } = started);
  const said = started.said;
  proxy = await startFaultProxy(facilitator.url);
  site = await startHeldSite();
  dataDir = mkdtempSync(join(tmpdir(), "secsnap-faults-data-"));
  instance = await startInstance({
    name: "solo",
    env: {
      ...fleetEnv({
        payTo: devnet.payTo,
        facilitatorUrl: proxy.url,
        rpcUrl: devnet.rpcUrl,
        targetPorts: [site.port],
        allowCidrs: PUBLIC_CIDRS,
        extra: { SNAPSHOT_TIMEOUT_MS: "5000", LOG_LEVEL: "warn" },
      }),
      DATA_DIR: dataDir,
    },
  });
  await instance.start();
  world = {
    devnet,
    chain,
    proxy,
    siteUrl: site.url,
    holdSite: () => site.hold(),
    releaseSite: () => site.release(),
    below: { node, facilitatorSays: said.next },
  };
  const send = (headers: Record<string, string>, signal?: AbortSignal) =>
    site.post(instance.url, headers, signal);
  topology = {
    first: { instance, send, direct: send },
    retry: send,
    // The same environment, the same DATA_DIR: what a supervisor restarting it does.
    afterCrash: async () => {
      if (instance.pid === undefined) await instance.start();
    },
    afterStore: async () => {},
  };
}, 120_000);

afterAll(async () => {
  site?.release();
  await instance?.close();
  await proxy?.close();
  await facilitator?.close();
  await node?.close();
  await site?.close();
  await devnet?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

// Each case starts from a running instance, nothing held, whatever the one before it left.
afterEach(async () => {
  proxy.reset();
  site.release();
  if (instance.pid === undefined) await instance.start();
}, 60_000);

describe("money under faults, one instance (contract §7.3–7.4)", () => {
  for (const c of ONE_INSTANCE_CASES) {
    it(caseName(c), { timeout: 150_000 }, () => runCase(world, topology, c));
  }
});
