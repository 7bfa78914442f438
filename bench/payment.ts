/**
 * The payment benchmark, two parts, one run, loopback only:
 *
 * 1. Challenge cost: requests/s of the 402 challenge (POST /v1/snapshot without payment) beside
 *    GET /health on the SAME server, measured in alternating rounds with the same bounded load;
 *    the median of the per-round ratios must be ≥ 0.75. The server runs the bundled build in a
 *    child process (bench/lib/payment-server.mjs), so the load generator does not share its
 *    event loop and no TypeScript loader is in the figure.
 * 2. Paid-snapshot overhead over the real devnet: a paid snapshot (verify → snapshot → settle,
 *    timed inside the payment gate) beside the same snapshot run unpaid through the engine; the
 *    same paid snapshot paid with x402 v1 (x402-fetch 1.x), alternating with v2, whose median
 *    must be within 1.1× the v2 one; and a paid call carrying a payment id beside its idempotent
 *    replay (the kept answer), which must be ≥ 10× faster. Beside each paid v2 call, the proof of
 *    that call's report made again (RFC 8785 canonicalising, SHA-256, Ed25519: withProof) and
 *    its receipt signed again (OfferReceipts.withReceipt), with the gate's own key: their median
 *    must be ≤ 2 % of the paid call's (the gate takes no other signer, so the work is timed on
 *    its own); the bytes stored per report (the settled payment record) are printed.
 *
 * 3. The devnet facilitator under a crowd: CROWD_VERIFIES concurrent POST /verify answered by
 *    the facilitator as the devnet runs it (JSON-RPC calls of one tick batched to anvil) beside
 *    one sending each call alone, both on the same anvil, alternating; the ratio is printed.
 *
 * 4. The report again: one report paid over the devnet with the official client, then in
 *    alternating paired rounds REFETCHES_PER_ROUND signed GET /v1/snapshots/{id} (each with a
 *    fresh challenge fetched and signed by the payer outside the timer; only the signed GET is
 *    timed, each must be the paid 200's bytes) beside as many GET /health, one at a time, against
 *    `secsnap serve` (the compiled build, its default embedded store) in a process of its own,
 *    after a warm-up of both and of this process's client; the median of the per-round ratios
 *    must be ≤ 3, and the service's CPU per request of each is printed.
 *    The sign-in check (parseSIWxHeader, then verifySignIn as the route runs it) timed alone on
 *    the same headers gives its share.
 *
 *   tsx bench/payment.ts            exits 1 if a ratio misses its target
 *   tsx bench/payment.ts challenge  part 1 only (the 402 beside GET /health)
 *   tsx bench/payment.ts verify     part 3 only (the facilitator's crowd of verifies)
 *   tsx bench/payment.ts refetch    part 4 only (the report again beside GET /health)
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { PAYMENT_IDENTIFIER, generatePaymentId } from "@x402/extensions/payment-identifier";
import {
  SIGN_IN_WITH_X,
  createSIWxPayload,
  encodeSIWxHeader,
  parseSIWxHeader,
  type SIWxExtension,
} from "@x402/extensions/sign-in-with-x";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { Pool, type Dispatcher } from "undici";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { baseSepolia } from "viem/chains";
import { wrapFetchWithPayment as wrapV1Fetch } from "x402-fetch";
import { GAS_PAYER } from "../src/devnet/constants.js";
import { startDevnet } from "../src/devnet/devnet.js";
import { startFacilitator } from "../src/facilitator/index.js";
import { createApp } from "../src/http/app.js";
import { startServer } from "../src/http/server.js";
import { createPaymentGate } from "../src/payment/gate.js";
import type { PaidRequestTimings } from "../src/payment/gate-options.js";
import { newPrivateJwk, withProof, type ServiceSigner } from "../src/payment/signing/index.js";
import { verifySignIn } from "../src/payment/snapshots/payer-signature.js";
import { OfferReceipts } from "../src/payment/x402/offer-receipt.js";
import type { ReportProof } from "../src/snapshot/index.js";
import { createSnapshotEngine, createUrlPolicy } from "../src/snapshot/index.js";
import type { EngineOptions } from "../src/snapshot/index.js";
import { bundledServer } from "./lib/bundled.js";
import { serviceCpuMicros } from "./lib/service-cpu.js";
import { duel, summarise, type Summary } from "./lib/stats.js";
import { MemoryPaymentRecordStore, type PaymentRecord } from "../src/store/index.js";
import { fleetEnv, startInstance } from "../test/fixtures/service-instance.js";
import { compiledBuild } from "./lib/compiled.js";

const CHALLENGE_TARGET_RATIO = 0.75;
const V1_PAID_TARGET_RATIO = 1.1;
const CONNECTIONS = 16;
const ROUND_MS = 1_000;
const ROUNDS = 9;
/** Hard cap per round, so a broken server cannot make the loop spin for ever. */
const MAX_REQUESTS_PER_ROUND = 200_000;
const PAID_RUNS = 8;
const REPLAY_TARGET_SPEEDUP = 10;
/** Signing and canonicalising may add this share of the paid call at most. */
const PROOF_TARGET_SHARE = 0.02;
/** Proofs and receipts made again beside each paid call. */
const SIGNINGS_PER_PAID_CALL = 25;
const TIME_LIMIT_MS = 180_000;
/** A crowd's admitted payments: SNAPSHOT_MAX_CONCURRENCY's default on two cores is 128. */
const CROWD_VERIFIES = 128;
/** A signed re-fetch may cost this many GET /health at most. */
const REFETCH_TARGET_RATIO = 3;
const REFETCHES_PER_ROUND = 20;
const REFETCH_ROUNDS = 9;
/** Rounds of /health before the measured ones, warming this process's own client. */
const REFETCH_CLIENT_WARMUP = 50;
/** Unmeasured rounds of re-fetches before the measured ones. */
const REFETCH_WARMUP_ROUNDS = 3;
/** Requests over which the service's CPU per request is read. */
const REFETCH_CPU_HEALTHS = 3_000;
const REFETCH_CPU_REFETCHES = 400;

const body = JSON.stringify({ url: "https://example.com/" });

// ---------------------------------------------------------------- parent

interface LoadResult {
  rps: number;
  /** Requests sent in the round. */
  done: number;
  statuses: Map<number, number>;
  /** The load generator's own CPU over the round, in % of one core. */
  clientCpu: number;
}

/**
 * One request, its body discarded unread; resolves with the status. The load generator shares
 * the two cores with the server, so its own cost per request must stay small or the figure
 * measures the client: undici's request() parses every header into strings and streams the body
 * through a Readable, which costs far more for the 402's 2.7 KB header than for /health's answer.
 * dispatch() with the raw (legacy-style) handler does neither.
 */
function send(pool: Pool, options: Dispatcher.DispatchOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    let status = 0;
    pool.dispatch(options, {
      onConnect() {},
      onHeaders(statusCode) {
        status = statusCode;
        return true;
      },
      onData: () => true,
      onComplete: () => resolve(status),
      onError: reject,
    });
  });
}

/** CONNECTIONS workers, each sending back-to-back for ROUND_MS on a keep-alive pool. */
async function load(pool: Pool, request: Dispatcher.DispatchOptions): Promise<LoadResult> {
  const statuses = new Map<number, number>();
  let done = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const deadline = started + ROUND_MS;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline && done < MAX_REQUESTS_PER_ROUND) {
        const status = await send(pool, request);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        done++;
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    rps: done / (elapsedMs / 1000),
    done,
    statuses,
    clientCpu: (used.user + used.system) / 10 / elapsedMs,
  };
}

/** The service under load, bundled as the CLI is, in a plain node process (production's way). */
async function startServiceChild(facilitatorUrl: string, payTo: string) {
  const server = await bundledServer(
    fileURLToPath(new URL("./lib/payment-server.mjs", import.meta.url)),
  );
  const child: ChildProcess = fork(server, [], {
    execArgv: [],
    env: { ...process.env, FACILITATOR_URL: facilitatorUrl, PAY_TO: payTo },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const { url, bareUrl } = await new Promise<{ url: string; bareUrl: string }>(
    (resolve, reject) => {
      child.once("message", (m) => resolve(m as { url: string; bareUrl: string }));
      child.once("exit", (code) => reject(new Error(`service child exited (${code})`)));
    },
  );
  // The service's own CPU time (µs) so far, as it reports it.
  const cpu = () =>
    new Promise<number>((resolve) => {
      child.once("message", (m) => resolve((m as { cpu: number }).cpu));
      child.send("cpu");
    });
  return { url, bareUrl, cpu, stop: () => child.kill("SIGTERM") };
}

function fmt(n: number, digits = 1): string {
  return n.toFixed(digits).padStart(9);
}

function row(name: string, s: Summary, unit: string): string {
  return `  ${name.padEnd(34)} ${fmt(s.median)} ${unit}  (min ${s.min.toFixed(1)}, max ${s.max.toFixed(1)})`;
}

async function challengeBench(facilitatorUrl: string, payTo: string): Promise<number> {
  const service = await startServiceChild(facilitatorUrl, payTo);
  const pool = new Pool(service.url, { connections: CONNECTIONS });
  const barePool = new Pool(service.bareUrl, { connections: CONNECTIONS });
  try {
    const health: Dispatcher.DispatchOptions = { path: "/health", method: "GET" };
    const challenge: Dispatcher.DispatchOptions = {
      path: "/v1/snapshot",
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    };
    // Reference: the same route stopped by the input check (400, before payment), i.e. the
    // cost of a POST with a JSON body through the route without any x402 work.
    const invalid: Dispatcher.DispatchOptions = {
      path: "/v1/snapshot",
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: "gopher://example.com/" }),
    };
    // Warm-up (JIT, connections), not counted.
    await load(pool, health);
    await load(pool, challenge);
    const healthRps: number[] = [];
    const challengeRps: number[] = [];
    const invalidRps: number[] = [];
    const bareRps: number[] = [];
    const clientCpu: number[] = [];
    // The service's CPU per request of each side: what the machine's load moves least.
    const healthCpu: number[] = [];
    const challengeCpu: number[] = [];
    const measured = async (request: Dispatcher.DispatchOptions, into: number[]) => {
      const before = await service.cpu();
      const result = await load(pool, request);
      into.push(((await service.cpu()) - before) / result.done);
      return result;
    };
    await load(barePool, challenge);
    for (let round = 0; round < ROUNDS; round++) {
      const h = await measured(health, healthCpu);
      const c = await measured(challenge, challengeCpu);
      const i = await load(pool, invalid);
      const b = await load(barePool, challenge);
      if (b.statuses.size !== 1 || !b.statuses.has(402)) throw new Error("bare replay not all 402");
      bareRps.push(b.rps);
      if (i.statuses.size !== 1 || !i.statuses.has(400)) throw new Error("invalid not all 400");
      invalidRps.push(i.rps);
      if (h.statuses.size !== 1 || !h.statuses.has(200)) throw new Error("health not all 200");
      if (c.statuses.size !== 1 || !c.statuses.has(402)) {
        throw new Error(`challenge not all 402: ${JSON.stringify([...c.statuses])}`);
      }
      healthRps.push(h.rps);
      challengeRps.push(c.rps);
      clientCpu.push(h.clientCpu, c.clientCpu);
    }
    const h = summarise(healthRps);
    const c = summarise(challengeRps);
    // Paired: each challenge round against the health round just before it, so a machine that
    // slows down or speeds up mid-run (shared cores) moves both sides of each ratio together.
    const paired = summarise(challengeRps.map((rps, i) => rps / healthRps[i]!));
    const ratio = paired.median;
    console.log(
      `\n402 challenge vs GET /health (same server, ${CONNECTIONS} keep-alive connections, ${ROUNDS} alternating rounds of ${ROUND_MS} ms)`,
    );
    console.log(row("GET /health", h, "req/s"));
    console.log(row("POST /v1/snapshot unpaid (402)", c, "req/s"));
    const floor = summarise(invalidRps);
    console.log(row("POST /v1/snapshot bad input (400)", floor, "req/s"));
    console.log(
      `  ratio challenge/health (paired)    ${fmt(ratio, 2)}        target ≥ ${CHALLENGE_TARGET_RATIO}  ${ratio >= CHALLENGE_TARGET_RATIO ? "OK" : "MISSED"}  (median of per-round ratios; min ${paired.min.toFixed(2)}, max ${paired.max.toFixed(2)}; ratio of medians ${(c.median / h.median).toFixed(2)})`,
    );
    console.log(
      `  ratio challenge/bad input (median) ${fmt(c.median / floor.median, 2)}        (x402's own cost on top of the route's POST + input check)`,
    );
    const bare = summarise(bareRps);
    console.log(row("same 402 bytes, bare node:http", bare, "req/s"));
    console.log(
      `  ratio challenge/bare replay        ${fmt(c.median / bare.median, 2)}        (everything the service does, against just sending the bytes)`,
    );
    console.log(
      `  ratio bare replay/health           ${fmt(bare.median / h.median, 2)}        (the floor the challenge's size sets on this machine)`,
    );
    const hCpu = summarise(healthCpu).median;
    const cCpu = summarise(challengeCpu).median;
    const cpuRatio = summarise(healthCpu.map((us, i) => us / challengeCpu[i]!)).median;
    console.log(
      `  service CPU per request            ${fmt(hCpu)} µs /health, ${cCpu.toFixed(1)} µs 402; health/402 ${cpuRatio.toFixed(2)} (paired; the same ratio in CPU, which the machine's load moves least)`,
    );
    console.log(
      `  load generator's own CPU            ${fmt(summarise(clientCpu).median, 0)} %      (of one core, median of the health and challenge rounds; near 100 % the figure would be the client's)`,
    );
    return ratio;
  } finally {
    await barePool.close();
    await pool.close();
    service.stop();
  }
}

/** The engine allowed to reach the tiny site (its port and its HTTPS probe's, on loopback). */
function tinySiteEngine(site: { url: string; probePort: number }) {
  const engineOptions: EngineOptions = {
    timeoutMs: 10_000,
    maxRedirects: 10,
    allowedPorts: new Set([Number(new URL(site.url).port), site.probePort]),
    allowCidrs: ["127.0.0.0/8"],
    dnsServers: [],
    httpsProbePort: site.probePort,
  };
  return { engine: createSnapshotEngine(engineOptions), engineOptions };
}

async function startTinySite(): Promise<{ server: Server; url: string; probePort: number }> {
  const server = createServer((req, res) => {
    res
      .writeHead(req.url === "/" ? 200 : 404, {
        "content-type": "text/plain",
        "x-frame-options": "DENY",
      })
      .end("ok\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const probePort = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, probePort };
}

/**
 * A paid call with a payment id, then the same request again (the kept answer), as the client
 * sees them; returns the median speed-up of the replay.
 */
async function replayBench(
  serviceUrl: string,
  siteUrl: string,
  client: x402Client,
): Promise<number> {
  const post = (headers: Record<string, string>) =>
    fetch(`${serviceUrl}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ url: siteUrl }),
    });
  const paidMs: number[] = [];
  const replayMs: number[] = [];
  for (let i = 0; i < PAID_RUNS + 1; i++) {
    const unpaid = await post({});
    await unpaid.arrayBuffer();
    const required = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") ?? "");
    const payload = await client.createPaymentPayload(required);
    payload.extensions = {
      ...payload.extensions,
      [PAYMENT_IDENTIFIER]: { info: { required: false, id: generatePaymentId() } },
    };
    const headers = new x402HTTPClient(client).encodePaymentSignatureHeader(payload);
    const t0 = performance.now();
    const paid = await post(headers);
    const paidBody = await paid.text();
    const t1 = performance.now();
    const replay = await post(headers);
    const replayBody = await replay.text();
    const t2 = performance.now();
    if (paid.status !== 200 || replay.status !== 200 || replayBody !== paidBody) {
      throw new Error(`idempotent replay answered ${paid.status}/${replay.status}, not the same`);
    }
    if (i === 0) continue; // warm-up
    paidMs.push(t1 - t0);
    replayMs.push(t2 - t1);
  }
  const paid = summarise(paidMs);
  const replay = summarise(replayMs);
  const speedup = summarise(paidMs.map((ms, i) => ms / replayMs[i]!)).median;
  console.log(
    `\nIdempotent replay (same payment id, proof and body: the kept answer) vs the paid call it repeats (${paidMs.length} runs, as the client sees them)`,
  );
  console.log(row("paid call with a payment id", paid, "ms"));
  console.log(row("its replay (kept answer)", replay, "ms"));
  console.log(
    `  speed-up of the replay (paired)    ${fmt(speedup, 1)}×       target ≥ ${REPLAY_TARGET_SPEEDUP}×  ${speedup >= REPLAY_TARGET_SPEEDUP ? "OK" : "MISSED"}`,
  );
  return speedup;
}

/** The memory store, recording the size of each settled record it keeps (a report's bytes). */
class MeasuredStore extends MemoryPaymentRecordStore {
  readonly settledBytes: number[] = [];

  override write(key: string, owner: string, record: PaymentRecord, ttlMs: number) {
    if (record.state === "settled" && record.report) {
      this.settledBytes.push(Buffer.byteLength(JSON.stringify(record)));
    }
    return super.write(key, owner, record, ttlMs);
  }
}

/**
 * Milliseconds of each of SIGNINGS_PER_PAID_CALL proofs and receipts made again for a paid
 * report: its proof taken off, withProof as the gate runs it, and the receipt of its settlement.
 */
async function timeSignings(
  paidBody: string,
  signer: ServiceSigner,
  receipts: OfferReceipts,
  resourceUrl: string,
): Promise<number[]> {
  const { proof, ...bare } = JSON.parse(paidBody) as { proof: ReportProof };
  const report = {
    status: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(bare),
  };
  const settled = {
    network: proof.network,
    payer: proof.payer,
    transaction: proof.transaction,
    recordKey: proof.snapshot_id,
  };
  const { recordKey: _key, ...paid } = settled;
  const settlement = { success: true, ...paid, network: proof.network as `${string}:${string}` };
  const ms: number[] = [];
  for (let i = 0; i < SIGNINGS_PER_PAID_CALL; i++) {
    const t0 = performance.now();
    await withProof(report, settled, signer);
    await receipts.withReceipt(resourceUrl, settlement);
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function paidBench(
  devnet: Awaited<ReturnType<typeof startDevnet>>,
): Promise<{ v1Ratio: number; replaySpeedup: number; proofShare: number }> {
  const site = await startTinySite();
  const { engine, engineOptions } = tinySiteEngine(site);
  const timings: PaidRequestTimings[] = [];
  const v1Timings: PaidRequestTimings[] = [];
  let paying: "v1" | "v2" = "v2";
  const store = new MeasuredStore();
  const signingKey = { privateJwk: await newPrivateJwk() };
  const gate = createPaymentGate({
    signingKey,
    store,
    payTo: devnet.payTo,
    networks: [devnet.network],
    priceUsdc: "0.05",
    facilitatorUrl: devnet.facilitatorUrl,
    onPaidRequest: (t) => (paying === "v1" ? v1Timings : timings).push(t),
    log: () => {},
  });
  const app = createApp({
    engine,
    urlPolicy: createUrlPolicy(engineOptions),
    payment: gate.route,
    log: () => {},
  });
  const service = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
  const key = devnet.payerPrivateKeys[7];
  if (!key) throw new Error("no devnet payer");
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(key) });
  const paidFetch = wrapFetchWithPayment(fetch, client);
  const v1Key = devnet.payerPrivateKeys[6];
  if (!v1Key) throw new Error("no devnet payer");
  // x402-fetch takes x402's signer type (its own viem); this is what its createSigner builds.
  const v1Signer = createWalletClient({
    account: privateKeyToAccount(v1Key),
    chain: baseSepolia,
    transport: http(devnet.rpcUrl),
  }).extend(publicActions) as unknown as Parameters<typeof wrapV1Fetch>[1];
  const v1PaidFetch = wrapV1Fetch(fetch, v1Signer);

  const unpaidMs: number[] = [];
  const paidClientMs: number[] = [];
  const signingMs: number[] = [];
  const bodyBytes: number[] = [];
  const signer = await gate.signer;
  const receipts = new OfferReceipts(Promise.resolve(signingKey), undefined);
  let replaySpeedup = 0;
  // The paid runs' own timings, before the replay runs add theirs.
  let paidTimings: PaidRequestTimings[] = [];
  let storedBytes: number[] = [];
  try {
    for (let i = 0; i < PAID_RUNS + 1; i++) {
      const t0 = performance.now();
      await engine.snapshot(site.url);
      const t1 = performance.now();
      const res = await paidFetch(`${service.url}/v1/snapshot`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: site.url }),
      });
      const paidBody = await res.text();
      const t2 = performance.now();
      if (res.status !== 200) throw new Error(`paid snapshot answered ${res.status}`);
      const signings = await timeSignings(paidBody, signer, receipts, `${service.url}/v1/snapshot`);
      paying = "v1";
      const v1 = await v1PaidFetch(`${service.url}/v1/snapshot`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: site.url }),
      });
      await v1.arrayBuffer();
      paying = "v2";
      if (v1.status !== 200) throw new Error(`v1 paid snapshot answered ${v1.status}`);
      if (i === 0) continue; // warm-up
      unpaidMs.push(t1 - t0);
      paidClientMs.push(t2 - t1);
      signingMs.push(...signings);
      bodyBytes.push(Buffer.byteLength(paidBody));
    }
    paidTimings = [...timings];
    storedBytes = [...store.settledBytes];
    const replayKey = devnet.payerPrivateKeys[6];
    if (!replayKey) throw new Error("no devnet payer");
    const replayClient = new x402Client();
    registerExactEvmScheme(replayClient, { signer: privateKeyToAccount(replayKey) });
    replaySpeedup = await replayBench(service.url, site.url, replayClient);
  } finally {
    await service.close(1_000);
    await engine.close();
    await new Promise<void>((resolve) => site.server.close(() => resolve()));
  }
  const counted = paidTimings.filter((t) => t.status === 200).slice(1);
  const total = summarise(counted.map((t) => t.totalMs));
  const verify = summarise(counted.map((t) => t.verifyMs));
  const handler = summarise(counted.map((t) => t.handlerMs));
  const settle = summarise(counted.map((t) => t.settleMs));
  const unpaid = summarise(unpaidMs);
  const asClient = summarise(paidClientMs);
  const share = (s: Summary) => `${((100 * s.median) / total.median).toFixed(0).padStart(3)}%`;
  console.log(
    `\nPaid snapshot over the devnet vs the same snapshot unpaid through the engine (${counted.length} runs, medians, ms)`,
  );
  console.log(row("engine.snapshot() unpaid", unpaid, "ms"));
  console.log(row("paid, inside the service", total, "ms"));
  console.log(`${row("  verify (facilitator /verify)", verify, "ms")}  ${share(verify)}`);
  console.log(`${row("  snapshot (handler)", handler, "ms")}  ${share(handler)}`);
  console.log(`${row("  settle (facilitator /settle)", settle, "ms")}  ${share(settle)}`);
  console.log(row("paid, as the client sees it", asClient, "ms"));
  console.log(
    `  payment overhead (paid in service − unpaid)  ${fmt(total.median - unpaid.median)} ms; the client's extra 402 round trip and signing: ${(asClient.median - total.median).toFixed(1)} ms`,
  );
  const v1Total = summarise(
    v1Timings
      .filter((t) => t.status === 200)
      .map((t) => t.totalMs)
      .slice(1),
  );
  const v1Ratio = v1Total.median / total.median;
  console.log(row("paid with x402 v1 (x402-fetch), inside", v1Total, "ms"));
  console.log(
    `  ratio v1/v2 paid (medians)              ${fmt(v1Ratio, 2)}        target ≤ ${V1_PAID_TARGET_RATIO}  ${v1Ratio <= V1_PAID_TARGET_RATIO ? "OK" : "MISSED"}`,
  );
  const proofShare = proofCost(summarise(signingMs), total, {
    body: summarise(bodyBytes),
    record: summarise(storedBytes),
  });
  return { v1Ratio, replaySpeedup, proofShare };
}

/** Prints what signing costs beside the paid call and what a report keeps; returns the share. */
function proofCost(
  signing: Summary,
  paid: Summary,
  bytes: { body: Summary; record: Summary },
): number {
  // The paid call already holds one signing: the share is of the call without it.
  const share = signing.median / (paid.median - signing.median);
  console.log(
    `\nSigning beside the paid call: withProof (RFC 8785, SHA-256, Ed25519 JWS) + the x402 receipt, ${SIGNINGS_PER_PAID_CALL} after each paid v2 call, the same key`,
  );
  console.log(row("proof + receipt of one report", signing, "ms"));
  console.log(
    `  share of the paid call (medians)        ${fmt(100 * share, 2)} %      target ≤ ${100 * PROOF_TARGET_SHARE} %  ${share <= PROOF_TARGET_SHARE ? "OK" : "MISSED"}  (of the paid call inside the service, its own signing left out)`,
  );
  console.log(
    `  signed report body                      ${fmt(bytes.body.median, 0)} B      (the paid 200's body, proof included; min ${bytes.body.min}, max ${bytes.body.max})`,
  );
  console.log(
    `  bytes stored per report                 ${fmt(bytes.record.median, 0)} B      (the settled payment record as the store keeps it, x402 v1 and v2: the signed report, the settlement with its receipt, the payment proof; min ${bytes.record.min}, max ${bytes.record.max})`,
  );
  return share;
}

/**
 * CROWD_VERIFIES concurrent verifies of distinct authorizations (verify spends nothing, so each
 * round sends the same ones) to a facilitator batching its JSON-RPC calls and to one that does
 * not, on the devnet's anvil.
 */
async function verifyCrowdBench(devnet: Awaited<ReturnType<typeof startDevnet>>): Promise<void> {
  const options = {
    rpcUrl: devnet.rpcUrl,
    privateKey: GAS_PAYER.privateKey,
    networks: [devnet.network],
    host: "127.0.0.1",
    port: 0,
    pollingIntervalMs: 50,
  };
  const batched = await startFacilitator({ ...options, batchRpc: true });
  const single = await startFacilitator(options);
  try {
    const requirements = {
      scheme: "exact",
      network: devnet.network,
      asset: devnet.usdcAddress,
      amount: "50000",
      payTo: devnet.payTo,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2" },
    };
    const required = {
      x402Version: 2,
      resource: { url: "http://127.0.0.1/v1/snapshot", description: "", mimeType: "" },
      accepts: [requirements],
    } as Parameters<x402Client["createPaymentPayload"]>[0];
    const clients = devnet.payerPrivateKeys.map((key) => {
      const client = new x402Client();
      registerExactEvmScheme(client, { signer: privateKeyToAccount(key) });
      return client;
    });
    const bodies: string[] = [];
    for (let i = 0; i < CROWD_VERIFIES; i++) {
      const payload = await (clients[i % clients.length] as x402Client).createPaymentPayload(
        required,
      );
      bodies.push(
        JSON.stringify({
          x402Version: 2,
          paymentPayload: payload,
          paymentRequirements: requirements,
        }),
      );
    }
    const crowd = (url: string) => async (): Promise<number> => {
      const pool = new Pool(url, { connections: CROWD_VERIFIES });
      try {
        const t0 = performance.now();
        const answers = await Promise.all(
          bodies.map(async (b) => {
            const res = await pool.request({
              path: "/verify",
              method: "POST",
              headers: { "content-type": "application/json" },
              body: b,
            });
            return (await res.body.json()) as { isValid?: boolean };
          }),
        );
        const ms = performance.now() - t0;
        if (!answers.every((a) => a.isValid === true)) throw new Error("a verify was refused");
        return ms;
      } finally {
        await pool.close();
      }
    };
    const result = await duel(
      { name: "batched", run: crowd(batched.url) },
      { name: "one call per request", run: crowd(single.url) },
      { warmup: 1, rounds: 7 },
    );
    console.log(
      `\nThe devnet facilitator: ${CROWD_VERIFIES} concurrent POST /verify (7 alternating rounds, medians)`,
    );
    console.log(row("JSON-RPC calls of a tick batched", result.a.time, "ms"));
    console.log(row("each call its own request", result.b.time, "ms"));
    console.log(
      `  ratio batched/unbatched (wall)          ${fmt(result.ratio, 2)}        (paired ${result.pairedRatio.toFixed(2)}; CPU of this process ${(result.a.cpuMs / result.b.cpuMs).toFixed(2)}; printed)`,
    );
  } finally {
    await batched.close();
    await single.close();
  }
}

/** A SIGN-IN-WITH-X header for a fresh challenge of `url` (its unsigned GET), signed by `account`. */
async function freshSignIn(url: string, account: PrivateKeyAccount): Promise<string> {
  const unsigned = await fetch(url);
  await unsigned.arrayBuffer();
  if (unsigned.status !== 402) throw new Error(`unsigned re-fetch answered ${unsigned.status}`);
  const required = decodePaymentRequiredHeader(unsigned.headers.get("payment-required") ?? "");
  const extension = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension | undefined;
  const chain = extension?.supportedChains[0];
  if (!extension || !chain) throw new Error("the re-fetch's 402 offers no sign-in");
  const info = { ...extension.info, chainId: chain.chainId, type: chain.type };
  return encodeSIWxHeader(await createSIWxPayload(info, account, url));
}

/** Milliseconds of the sign-in check alone, as the route runs it, for each header. */
async function timeSignInChecks(headers: readonly string[]): Promise<number[]> {
  const ms: number[] = [];
  for (const header of headers) {
    const t0 = performance.now();
    const signed = await verifySignIn(parseSIWxHeader(header));
    ms.push(performance.now() - t0);
    if (!signed.isValid) throw new Error(`sign-in not valid: ${signed.invalidMessage}`);
  }
  return ms;
}

/**
 * The service's CPU per request over `count` sequential requests, made by `prepare` outside the
 * measure (a function per request, or one repeated).
 */
async function cpuPerRequest(
  metricsUrl: string,
  count: number,
  prepare: (count: number) => Promise<(() => Promise<Response>)[]>,
): Promise<number> {
  const requests = await prepare(count);
  const cpu0 = await serviceCpuMicros(metricsUrl);
  for (let i = 0; i < count; i++) {
    const res = await requests[i % requests.length]!();
    await res.text();
  }
  return ((await serviceCpuMicros(metricsUrl)) - cpu0) / count;
}

/**
 * One report paid over the devnet, then its signed re-fetch beside GET /health on the same
 * service — `secsnap serve` of the compiled build in a process of its own, its default embedded
 * store — REFETCHES_PER_ROUND sequential requests a side per round, after a warm-up of both
 * sides and of this process's own client; returns the paired ratio.
 */
async function refetchBench(devnet: Awaited<ReturnType<typeof startDevnet>>): Promise<number> {
  compiledBuild();
  const site = await startTinySite();
  const dataDir = mkdtempSync(join(tmpdir(), "secsnap-refetch-"));
  const env = fleetEnv({
    payTo: devnet.payTo,
    facilitatorUrl: devnet.facilitatorUrl,
    rpcUrl: devnet.rpcUrl,
    targetPorts: [Number(new URL(site.url).port), site.probePort],
    allowCidrs: ["127.0.0.0/8"],
    // Every challenge and re-fetch is a free answer this one client asks for: a budget that
    // never runs out, still counted as in production.
    extra: { LOG_LEVEL: "warn", DATA_DIR: dataDir, RATE_LIMIT_PER_MINUTE: "1000000" },
  });
  const service = await startInstance({
    name: "refetch",
    env,
    runner: "build",
    stdout: "discarded",
  });
  const key = devnet.payerPrivateKeys[5];
  if (!key) throw new Error("no devnet payer");
  const account = privateKeyToAccount(key);
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  try {
    await service.start();
    const paid = await wrapFetchWithPayment(fetch, client)(`${service.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: site.url }),
    });
    const report = await paid.text();
    if (paid.status !== 200) throw new Error(`paid snapshot answered ${paid.status}`);
    const id = (JSON.parse(report) as { proof: ReportProof }).proof.snapshot_id;
    const url = `${service.url}/v1/snapshots/${id}`;
    const checkMs: number[] = [];
    const refetches = async (): Promise<number> => {
      // Outside the timer: a fresh challenge per request, signed by the payer.
      const headers: string[] = [];
      for (let i = 0; i < REFETCHES_PER_ROUND; i++) headers.push(await freshSignIn(url, account));
      checkMs.push(...(await timeSignInChecks(headers)));
      let ms = 0;
      for (const header of headers) {
        const t0 = performance.now();
        const res = await fetch(url, { headers: { [SIGN_IN_WITH_X]: header } });
        const text = await res.text();
        ms += performance.now() - t0;
        if (res.status !== 200 || text !== report) {
          throw new Error(`signed re-fetch answered ${res.status}, not the paid report's bytes`);
        }
      }
      return ms;
    };
    const health = async (): Promise<number> => {
      const t0 = performance.now();
      for (let i = 0; i < REFETCHES_PER_ROUND; i++) {
        const res = await fetch(`${service.url}/health`);
        await res.text();
        if (res.status !== 200) throw new Error(`GET /health answered ${res.status}`);
      }
      return performance.now() - t0;
    };
    // A cold client (this process's fetch) costs more per request than either route does: warm
    // it, so the ratio is the service's.
    for (let i = 0; i < REFETCH_CLIENT_WARMUP; i++) await health();
    for (let i = 0; i < REFETCH_WARMUP_ROUNDS; i++) await refetches();
    checkMs.length = 0;
    const result = await duel(
      { name: "signed re-fetch", run: refetches },
      { name: "GET /health", run: health },
      { warmup: 1, rounds: REFETCH_ROUNDS },
    );
    const perRequest = (s: Summary): Summary => ({
      min: s.min / REFETCHES_PER_ROUND,
      median: s.median / REFETCHES_PER_ROUND,
      max: s.max / REFETCHES_PER_ROUND,
    });
    const refetch = perRequest(result.a.time);
    const ratio = result.pairedRatio;
    const check = summarise(checkMs);
    console.log(
      `\nThe report again: signed GET /v1/snapshots/{id} vs GET /health (secsnap serve, compiled, embedded store, in its own process; ${REFETCHES_PER_ROUND} sequential requests a side in ${result.rounds} alternating rounds after a warm-up, per request)`,
    );
    console.log(row("GET /health", perRequest(result.b.time), "ms"));
    console.log(row("signed re-fetch (200, paid bytes)", refetch, "ms"));
    console.log(
      `  ratio re-fetch/health (paired)          ${fmt(ratio, 2)}        target ≤ ${REFETCH_TARGET_RATIO}  ${ratio <= REFETCH_TARGET_RATIO ? "OK" : "MISSED"}  (median of per-round ratios; ratio of medians ${result.ratio.toFixed(2)})`,
    );
    const cpuHealth = await cpuPerRequest(service.metricsUrl, REFETCH_CPU_HEALTHS, () =>
      Promise.resolve([() => fetch(`${service.url}/health`)]),
    );
    const cpuRefetch = await cpuPerRequest(service.metricsUrl, REFETCH_CPU_REFETCHES, async (n) => {
      const headers: string[] = [];
      for (let i = 0; i < n; i++) headers.push(await freshSignIn(url, account));
      return headers.map((header) => () => fetch(url, { headers: { [SIGN_IN_WITH_X]: header } }));
    });
    console.log(
      `  service CPU per request                 ${fmt(cpuHealth, 0)} µs /health, ${cpuRefetch.toFixed(0)} µs re-fetch; ratio ${(cpuRefetch / cpuHealth).toFixed(1)} (printed; ${REFETCH_CPU_HEALTHS} and ${REFETCH_CPU_REFETCHES} requests, its /metrics)`,
    );
    console.log(
      `${row("  sign-in check alone", check, "ms")}  ${((100 * check.median) / refetch.median).toFixed(0).padStart(3)}%  (parseSIWxHeader + verifySignIn on the same headers, in this process, of the re-fetch's median)`,
    );
    return ratio;
  } finally {
    await service.close();
    rmSync(dataDir, { recursive: true, force: true });
    await new Promise<void>((resolve) => site.server.close(() => resolve()));
  }
}

async function main(): Promise<number> {
  const limit = setTimeout(() => {
    console.error(`payment benchmark exceeded ${TIME_LIMIT_MS} ms; stopping`);
    process.exit(1);
  }, TIME_LIMIT_MS);
  limit.unref();
  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  try {
    console.log(
      `payment benchmark — devnet ${devnet.rpcUrl}, facilitator ${devnet.facilitatorUrl}`,
    );
    if (process.argv.slice(2).includes("verify")) {
      await verifyCrowdBench(devnet);
      return 0;
    }
    if (process.argv.slice(2).includes("refetch")) {
      return (await refetchBench(devnet)) <= REFETCH_TARGET_RATIO ? 0 : 1;
    }
    const ratio = await challengeBench(devnet.facilitatorUrl, devnet.payTo);
    if (process.argv.slice(2).includes("challenge")) return ratio >= CHALLENGE_TARGET_RATIO ? 0 : 1;
    const { v1Ratio, replaySpeedup, proofShare } = await paidBench(devnet);
    await verifyCrowdBench(devnet);
    const refetchRatio = await refetchBench(devnet);
    return ratio >= CHALLENGE_TARGET_RATIO &&
      v1Ratio <= V1_PAID_TARGET_RATIO &&
      refetchRatio <= REFETCH_TARGET_RATIO &&
      replaySpeedup >= REPLAY_TARGET_SPEEDUP &&
      proofShare <= PROOF_TARGET_SHARE
      ? 0
      : 1;
  } finally {
    await devnet.close();
  }
}

process.exitCode = await main();
