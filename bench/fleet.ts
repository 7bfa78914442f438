/**
 * The fleet benchmark: sustained paid load through a real HAProxy on the devnet, with one
 * instance behind it and then with two (the same run, side by side), both sharing one
 * redis-server (REDIS_URL). Each side: 1,000 paid snapshots at concurrency 50, every proof
 * signed before the clock starts. Judged, per side: 0 errors, 0 double serves (every 200 names
 * its own settlement transaction) and exactly 1,000 transfers (payTo's USDC balance grows by
 * 1,000 × the price). Printed: paid calls per second with one and with two instances, and the
 * ratio. The devnet's facilitator sends its settlements one at a time (src/facilitator/tx-queue.ts),
 * so a second instance is not expected to double the figure.
 *
 *   tsx bench/fleet.ts [paid calls per side]       (default 1000)
 *
 * Without redis-server or haproxy it says which Debian package to install and stops (exit 0;
 * under CI=true, exit 1).
 */
import { decodePaymentResponseHeader } from "@x402/core/http";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { createPublicClient, http, type PublicClient } from "viem";
import { startDevnet, type Devnet } from "../src/devnet/index.js";
import { compiledBuild } from "./lib/compiled.js";
import { startLoadBalancer, type LoadBalancer } from "../test/fixtures/load-balancer.js";
import {
  fleetEnv,
  freePort,
  startInstance,
  type ServiceInstance,
} from "../test/fixtures/service-instance.js";
import { startRedis } from "../test/fixtures/redis.js";
import { systemBinary } from "../test/fixtures/system-binary.js";
import { usdcBalance } from "../test/fixtures/usdc.js";
import { request, signProofs, startSite } from "./lib/fleet.js";

const PAID = 1_000;
const CONCURRENCY = 50;
const PRICE_UNITS = 50_000n;
const SITE_ADDRESS = "127.0.0.93";
const ALLOW_CIDRS = ["127.0.0.64/26"];
const TIME_LIMIT_MS = 600_000;

interface Side {
  instances: number;
  seconds: number;
  perSecond: number;
  ok: number;
  errors: Map<string, number>;
  doubleServes: number;
  transfers: bigint;
}

async function oneSide(
  devnet: Devnet,
  chain: PublicClient,
  instances: ServiceInstance[],
  haproxy: string,
  lbPort: number,
  siteUrl: string,
  paid: number,
): Promise<Side> {
  const lb: LoadBalancer = await startLoadBalancer(haproxy, instances, {
    port: lbPort,
    // Under sustained load one slow check must not take the only instance out.
    fall: 3,
  });
  const pool = new Pool(lb.url, { connections: CONCURRENCY });
  try {
    await Promise.all(instances.map((i) => lb.waitFor(i.name, "UP")));
    const body = JSON.stringify({ url: siteUrl });
    const post = { path: "/v1/snapshot", method: "POST" as const, body };
    // Signed before the clock starts.
    const proofs = await signProofs(pool, post, devnet.payerPrivateKeys, paid);

    const before = await usdcBalance(chain, devnet.usdcAddress, devnet.payTo);
    const errors = new Map<string, number>();
    const transactions = new Set<string>();
    let ok = 0;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < proofs.length; i = next++) {
          let why: string | undefined;
          try {
            const answer = await request(pool, {
              ...post,
              headers: { "content-type": "application/json", ...proofs[i] },
            });
            if (answer.status === 200) {
              ok++;
              const receipt = decodePaymentResponseHeader(answer.headers["payment-response"] ?? "");
              transactions.add(receipt.transaction);
            } else {
              why = `HTTP ${answer.status} ${answer.body.slice(0, 80)}`;
            }
          } catch (err) {
            why = (err as Error).message;
          }
          if (why !== undefined) errors.set(why, (errors.get(why) ?? 0) + 1);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const transfers =
      ((await usdcBalance(chain, devnet.usdcAddress, devnet.payTo)) - before) / PRICE_UNITS;
    return {
      instances: instances.length,
      seconds,
      perSecond: paid / seconds,
      ok,
      errors,
      doubleServes: ok - transactions.size,
      transfers,
    };
  } finally {
    await pool.close();
    await lb.close();
  }
}

async function main(): Promise<number> {
  const arg = process.argv.slice(2).find((a) => a !== "--");
  const paid = arg === undefined ? PAID : Number(arg);
  if (!Number.isInteger(paid) || paid < 1) {
    console.error(`usage: tsx bench/fleet.ts [paid calls per side]  (got ${JSON.stringify(arg)})`);
    return 2;
  }
  let redisBin: string | null;
  let haproxy: string | null;
  try {
    redisBin = systemBinary("redis-server", "redis-server");
    haproxy = systemBinary("haproxy", "haproxy");
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  }
  if (!redisBin || !haproxy) return 0;
  const limit = setTimeout(() => {
    console.error(`fleet benchmark exceeded ${TIME_LIMIT_MS} ms; stopping`);
    process.exit(1);
  }, TIME_LIMIT_MS);
  limit.unref();

  compiledBuild();
  const redis = await startRedis();
  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  const chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  const site = await startSite(SITE_ADDRESS);
  const siteUrl = `http://${SITE_ADDRESS}:${site.port}/`;
  const lbPort = await freePort();
  const env = fleetEnv({
    payTo: devnet.payTo,
    facilitatorUrl: devnet.facilitatorUrl,
    rpcUrl: devnet.rpcUrl,
    redisUrl: redis.url,
    publicUrl: `http://127.0.0.1:${lbPort}`,
    targetPorts: [site.port, 443],
    allowCidrs: ALLOW_CIDRS,
    extra: { SNAPSHOT_MAX_CONCURRENCY: String(CONCURRENCY * 2), LOG_LEVEL: "warn" },
  });
  const a = await startInstance({ name: "a", env, runner: "build" });
  const b = await startInstance({ name: "b", env, runner: "build" });
  const sides: Side[] = [];
  try {
    await Promise.all([a.start(), b.start()]);
    console.log(
      `secsnap fleet benchmark: ${paid} paid snapshots of ${siteUrl} at concurrency ${CONCURRENCY} through HAProxy, devnet ${devnet.rpcUrl}, Redis ${redis.url}`,
    );
    console.log(
      `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
    );
    sides.push(await oneSide(devnet, chain, [a], haproxy, lbPort, siteUrl, paid));
    sides.push(await oneSide(devnet, chain, [a, b], haproxy, lbPort, siteUrl, paid));
  } finally {
    await Promise.all([a.close(), b.close()]);
    await site.close();
    await devnet.close();
    await redis.close();
  }

  let pass = true;
  console.log("");
  console.log(
    "| instances | paid calls | seconds | paid calls/s | errors | double serves | transfers | verdict |",
  );
  console.log("|--:|--:|--:|--:|--:|--:|--:|---|");
  for (const s of sides) {
    const errors = [...s.errors.values()].reduce((x, y) => x + y, 0);
    const ok = errors === 0 && s.doubleServes === 0 && s.transfers === BigInt(paid);
    pass &&= ok;
    console.log(
      `| ${s.instances} | ${s.ok} | ${s.seconds.toFixed(1)} | **${s.perSecond.toFixed(1)}** | ${errors} | ${s.doubleServes} | ${s.transfers} | ${ok ? "PASS" : "FAIL"} |`,
    );
    for (const [why, count] of s.errors) console.log(`  ${count} × ${why}`);
  }
  const [one, two] = sides as [Side, Side];
  console.log(
    `\nratio two instances / one: ${(two.perSecond / one.perSecond).toFixed(2)}× (same run; settlements go through the devnet facilitator's one queue)`,
  );
  console.log(pass ? "\nfleet benchmark: PASS" : "\nfleet benchmark: FAIL");
  return pass ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
