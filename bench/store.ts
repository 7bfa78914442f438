/**
 * The payment record store benchmark: paid calls per second with the durable stores beside the
 * same calls with the in-memory implementation of the same interface, in one run, loopback
 * only. Three services in this process share one devnet and one site and differ only in their
 * store: memory (the yardstick, a test double), the embedded database (lmdb, fsync'ed commits:
 * the default) and Redis (redis-server with `appendonly yes`, `appendfsync everysec`,
 * `noeviction`: what docs/operations.md asks of a fleet's Redis). Rounds alternate the three, a
 * different one first each round; each round sends the same number of paid calls at the same
 * concurrency to each, every proof signed before the clock starts. Judged: the medians of the
 * per-round ratios, embedded / memory ≥ 0.9 and Redis / memory ≥ 0.85; every call a 200 and
 * exactly one transfer each on chain.
 *
 *   tsx bench/store.ts [rounds] [calls per round]     (defaults 5 and 40)
 *
 * Without redis-server the Redis line is skipped with one line naming the Debian package (under
 * CI=true, exit 1).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { createPublicClient, http } from "viem";
import { startDevnet, type Devnet } from "../src/devnet/index.js";
import { createApp, startServer } from "../src/http/index.js";
import { createPaymentGate } from "../src/payment/index.js";
import {
  createSnapshotEngine,
  createUrlPolicy,
  type EngineOptions,
} from "../src/snapshot/index.js";
import {
  EmbeddedPaymentRecordStore,
  MemoryPaymentRecordStore,
  createPaymentRecordStore,
  type PaymentRecordStore,
} from "../src/store/index.js";
import { startRedis, type RedisProcess } from "../test/fixtures/redis.js";
import { systemBinary } from "../test/fixtures/system-binary.js";
import { usdcBalance } from "../test/fixtures/usdc.js";
import { request, signProofs, startSite } from "./lib/fleet.js";
import { summarise } from "./lib/stats.js";

const EMBEDDED_TARGET = 0.9;
const REDIS_TARGET = 0.85;
const CONCURRENCY = 8;
const PRICE_UNITS = 50_000n;
const SITE_ADDRESS = "127.0.0.94";
const TIME_LIMIT_MS = 600_000;

interface Side {
  name: "memory" | "embedded" | "redis";
  store: PaymentRecordStore;
  pool: Pool;
  close(): Promise<void>;
}

async function startSide(
  name: Side["name"],
  store: PaymentRecordStore,
  devnet: Devnet,
  sitePort: number,
): Promise<Side> {
  const engineOptions: EngineOptions = {
    timeoutMs: 10_000,
    maxRedirects: 10,
    allowedPorts: new Set([sitePort, 443]),
    allowCidrs: [`${SITE_ADDRESS}/32`],
    dnsServers: [],
  };
  const gate = createPaymentGate({
    store,
    payTo: devnet.payTo,
    networks: [devnet.network],
    priceUsdc: "0.05",
    facilitatorUrl: devnet.facilitatorUrl,
    rpcUrls: { [devnet.network]: devnet.rpcUrl },
    log: () => {},
  });
  const app = createApp({
    engine: createSnapshotEngine(engineOptions),
    urlPolicy: createUrlPolicy(engineOptions),
    payment: gate.route,
    log: () => {},
  });
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
  const pool = new Pool(server.url, { connections: CONCURRENCY });
  return {
    name,
    store,
    pool,
    close: async () => {
      await pool.close();
      await server.close(1_000);
      gate.close();
      await store.close();
    },
  };
}

/** One round of `count` paid calls at CONCURRENCY; calls per second, or why it failed. */
async function round(side: Side, siteUrl: string, keys: Devnet["payerPrivateKeys"], count: number) {
  const body = JSON.stringify({ url: siteUrl });
  const post = { path: "/v1/snapshot", method: "POST" as const, body };
  const proofs = await signProofs(side.pool, post, keys, count);
  let next = 0;
  const failures: string[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < proofs.length; i = next++) {
        const answer = await request(side.pool, {
          ...post,
          headers: { "content-type": "application/json", ...proofs[i] },
        });
        if (answer.status !== 200) failures.push(`${answer.status} ${answer.body.slice(0, 400)}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: count / seconds, failures };
}

async function main(): Promise<number> {
  const args = process.argv.slice(2).filter((a) => a !== "--");
  const rounds = Number(args[0] ?? 5);
  const calls = Number(args[1] ?? 40);
  if (!Number.isInteger(rounds) || rounds < 1 || !Number.isInteger(calls) || calls < 1) {
    console.error("usage: tsx bench/store.ts [rounds] [calls per round]");
    return 2;
  }
  let redisBin: string | null;
  try {
    redisBin = systemBinary("redis-server", "redis-server");
  } catch (err) {
    console.error((err as Error).message);
    return 1;
  }
  const limit = setTimeout(() => {
    console.error(`store benchmark exceeded ${TIME_LIMIT_MS} ms; stopping`);
    process.exit(1);
  }, TIME_LIMIT_MS);
  limit.unref();

  const dataDir = await mkdtemp(join(tmpdir(), "secsnap-bench-store-"));
  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  const chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  const site = await startSite(SITE_ADDRESS);
  const siteUrl = `http://${SITE_ADDRESS}:${site.port}/`;
  let redis: RedisProcess | undefined;
  const sides: Side[] = [];
  try {
    sides.push(await startSide("memory", new MemoryPaymentRecordStore(), devnet, site.port));
    sides.push(
      await startSide(
        "embedded",
        await EmbeddedPaymentRecordStore.open({ dataDir }),
        devnet,
        site.port,
      ),
    );
    if (redisBin) {
      redis = await startRedis({
        appendonly: true,
        appendfsync: "everysec",
        dir: dataDir,
        maxmemoryPolicy: "noeviction",
      });
      sides.push(
        await startSide(
          "redis",
          await createPaymentRecordStore({ redisUrl: redis.url, dataDir, recordTtlMs: 3_600_000 }),
          devnet,
          site.port,
        ),
      );
    }
    console.log(
      `secsnap store benchmark: ${rounds} rounds × ${calls} paid snapshots of ${siteUrl} per store at concurrency ${CONCURRENCY}, devnet ${devnet.rpcUrl}`,
    );
    console.log(
      `machine: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? "?"}), node ${process.version}`,
    );
    // One warm-up call each (connections, first writes), not counted.
    for (const side of sides) await round(side, siteUrl, devnet.payerPrivateKeys, 2);

    const before = await usdcBalance(chain, devnet.usdcAddress, devnet.payTo);
    const perSecond = new Map<Side["name"], number[]>(sides.map((s) => [s.name, []]));
    const failures: string[] = [];
    for (let r = 0; r < rounds; r++) {
      // A different store goes first each round, so drift favours none of them.
      const order = sides.map((_, i) => sides[(i + r) % sides.length] as Side);
      for (const side of order) {
        const result = await round(side, siteUrl, devnet.payerPrivateKeys, calls);
        perSecond.get(side.name)?.push(result.perSecond);
        failures.push(...result.failures.map((f) => `${side.name}: ${f}`));
      }
    }
    const transfers =
      ((await usdcBalance(chain, devnet.usdcAddress, devnet.payTo)) - before) / PRICE_UNITS;
    const expected = BigInt(rounds * calls * sides.length);

    const memory = perSecond.get("memory") ?? [];
    console.log("");
    console.log(
      "| store | paid calls/s (min / median / max) | ratio to memory, per round (median) | target | verdict |",
    );
    console.log("|---|--:|--:|--:|---|");
    let pass = failures.length === 0 && transfers === expected;
    for (const side of sides) {
      const figures = perSecond.get(side.name) ?? [];
      const s = summarise(figures);
      const ratios = figures.map((x, i) => x / (memory[i] ?? Number.NaN));
      const ratio = summarise(ratios).median;
      const target =
        side.name === "embedded"
          ? EMBEDDED_TARGET
          : side.name === "redis"
            ? REDIS_TARGET
            : undefined;
      const ok = target === undefined || ratio >= target;
      pass &&= ok;
      console.log(
        `| ${side.name} | ${s.min.toFixed(1)} / **${s.median.toFixed(1)}** / ${s.max.toFixed(1)} | ${side.name === "memory" ? "—" : `**${ratio.toFixed(2)}**`} | ${target === undefined ? "—" : `≥ ${target}`} | ${target === undefined ? "yardstick" : ok ? "PASS" : "FAIL"} |`,
      );
    }
    console.log(
      `\n${rounds * calls * sides.length} paid calls: ${failures.length} not answered 200, ${transfers} transfers on chain (expected ${expected})`,
    );
    for (const f of failures.slice(0, 5)) console.log(`  ${f.slice(0, 400)}`);
    console.log(pass ? "\nstore benchmark: PASS" : "\nstore benchmark: FAIL");
    return pass ? 0 : 1;
  } finally {
    for (const side of sides) await side.close().catch(() => {});
    await site.close();
    await devnet.close();
    await redis?.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
