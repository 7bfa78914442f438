/**
 * The paid call of an older commit's build beside this tree's, in one run: both checkouts built
 * by their own scripts/build.js and started as `secsnap serve` (bin/secsnap.js, production mode)
 * on one devnet and one local site, then paid calls over POST /v1/snapshot and over POST /mcp
 * sent to each in alternating rounds. Only those outer doors, the environment and the x402
 * clients are used, so any two commits that keep them can be compared.
 *
 * Each proof is signed (by the official x402 v2 client) before its timer starts and only the
 * paid request is timed; every paid call must answer 200 and move the price to payTo on chain.
 * Judged per route: the median of the per-round ratios new/old, ≤ 1.05.
 *
 *   tsx bench/reshape.ts [--old <commit>]   default ac08be4 (before the reshape of the paid path)
 *
 * The old commit is checked out with `git worktree add --detach` in a temporary directory (its
 * node_modules a link to this tree's) and removed again at the end, as are the services and the
 * devnet, on an error or a signal too.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import {
  wrapFetchWithPayment,
  x402Client,
  x402HTTPClient,
  type PaymentPayload,
  type PaymentRequired,
} from "@x402/fetch";
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startDevnet } from "../src/devnet/index.js";
import {
  fleetEnv,
  startInstance,
  type ServiceInstance,
} from "../test/fixtures/service-instance.js";
import { usdcBalance } from "../test/fixtures/usdc.js";
import { startSite } from "./lib/fleet.js";
import { serviceCpuMicros } from "./lib/service-cpu.js";
import { duel, summarise, type Duel } from "./lib/stats.js";

/** Today's code before the reshape of the paid path (issue 30). */
const DEFAULT_OLD = "ac08be4";
const TARGET_RATIO = 1.05;
const WARMUP = 2;
/**
 * Rounds per route, within ROUTE_BUDGET_MS. With the same code on both sides a round's ratio
 * swings by ±15 % on the shared host (the devnet's verify and settle are most of a paid call),
 * so the median needs dozens of rounds to hold still within the target's 5 %.
 */
const ROUNDS = 60;
const ROUTE_BUDGET_MS = 120_000;
/** Paid calls timed together in one side's turn of a round. */
const CALLS_PER_ROUND = 4;
/** The site's address, and what the services may scan: no other loopback service. */
const SITE_ADDRESS = "127.0.0.93";
const ALLOW_CIDRS = ["127.0.0.64/26"];
/** A call that takes longer is broken, not slow. */
const CALL_TIMEOUT_MS = 30_000;

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** What was started, stopped in reverse order at the end, after an error or on a signal. */
const cleanups: (() => unknown)[] = [];

let cleaning: Promise<void> | undefined;

/** Runs the clean-ups once, however many times it is asked (the run's end, a signal). */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (let undo = cleanups.pop(); undo; undo = cleanups.pop()) {
      try {
        await undo();
      } catch (err) {
        console.error(`reshape: clean-up: ${(err as Error).message}`);
      }
    }
  })();
  return cleaning;
}

// ---------------------------------------------------------------- the two builds

/** Runs a command to its end; its output is returned, or thrown with what it said. */
function run(command: string, args: string[], cwd: string): string {
  const done = spawnSync(command, args, { cwd, encoding: "utf8" });
  if (done.status !== 0) {
    const said = `${done.stderr ?? ""}${done.stdout ?? ""}`.trim() || String(done.error ?? "");
    throw new Error(`${command} ${args.join(" ")} failed (exit ${done.status}): ${said}`);
  }
  return done.stdout.trim();
}

const git = (...args: string[]) => run("git", args, ROOT);

/** The commit checked out in a temporary worktree, sharing this tree's node_modules. */
function checkOut(commit: string): string {
  const dir = mkdtempSync(join(tmpdir(), "secsnap-old-"));
  git("worktree", "add", "--detach", dir, commit);
  const modules = join(dir, "node_modules");
  cleanups.push(() => {
    // The link goes first, so removing the worktree can never reach the shared install.
    rmSync(modules, { force: true });
    try {
      git("worktree", "remove", "--force", dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  symlinkSync(realpathSync(join(ROOT, "node_modules")), modules, "dir");
  return dir;
}

/** dist/ by the checkout's own build script, what bin/secsnap.js runs. */
function build(root: string): void {
  run(process.execPath, ["scripts/build.js"], root);
}

// ---------------------------------------------------------------- the services

interface Side {
  name: string;
  instance: ServiceInstance;
  /** The service's CPU µs per paid call in its latest turn (its /metrics), NaN if unread. */
  cpuPerCall: number;
  /** The payer this side's proofs come from (each side its own). */
  signer: x402Client;
  mcp: Client;
}

interface World {
  chain: PublicClient;
  usdc: Address;
  /** The JSON body of every call: the local site. */
  body: string;
  target: string;
}

async function startSide(
  name: string,
  root: string,
  env: Record<string, string>,
  payerKey: Hex,
): Promise<Side> {
  const dataDir = mkdtempSync(join(tmpdir(), `secsnap-${name}-data-`));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const instance = await startInstance({
    name,
    root,
    runner: "build",
    stdout: "discarded",
    env: { ...env, DATA_DIR: dataDir, SHUTDOWN_GRACE_MS: "0" },
  });
  cleanups.push(async () => {
    // A drained stop closes the payment records; past 10 s it is killed.
    await Promise.race([instance.kill("SIGTERM"), sleep(10_000)]);
    await instance.close();
  });
  await instance.start();
  const signer = new x402Client();
  registerExactEvmScheme(signer, { signer: privateKeyToAccount(payerKey) });
  const mcp = new Client({ name: "secsnap-bench", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${instance.url}/mcp`)));
  cleanups.push(() => mcp.close());
  return { name, instance, signer, mcp, cpuPerCall: NaN };
}

// ---------------------------------------------------------------- one paid call

/** What a proof pays: to whom, and how many token units. */
type Offer = Pick<PaymentPayload["accepted"], "payTo" | "amount">;

const balanceOf = (world: World, offer: Offer) =>
  usdcBalance(world.chain, world.usdc, offer.payTo as Address);

/** payTo's balance grew by the price, or the call is a failure whatever it answered. */
async function checkTransfer(world: World, offer: Offer, before: bigint, what: string) {
  const moved = (await balanceOf(world, offer)) - before;
  if (moved !== BigInt(offer.amount)) {
    throw new Error(`${what}: payTo received ${moved} units, not the price ${offer.amount}`);
  }
}

const postSnapshot = (side: Side, world: World, headers: Record<string, string> = {}) =>
  fetch(`${side.instance.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: world.body,
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  });

/** The 402's offer for POST /v1/snapshot, as the official client decodes it. */
async function challenge(side: Side, world: World): Promise<PaymentRequired> {
  const unpaid = await postSnapshot(side, world);
  await unpaid.arrayBuffer();
  if (unpaid.status !== 402) throw new Error(`${side.name}: the challenge was ${unpaid.status}`);
  return decodePaymentRequiredHeader(unpaid.headers.get("payment-required") ?? "");
}

/** A paid call over one door: its proof signed for the door's offer, then the paid request. */
interface Route {
  name: string;
  sign(side: Side, world: World): Promise<PaymentPayload>;
  /** Sends the paid request; throws unless it was served. */
  pay(side: Side, world: World, payload: PaymentPayload): Promise<void>;
}

const HTTP: Route = {
  name: "HTTP (POST /v1/snapshot)",
  sign: async (side, world) => side.signer.createPaymentPayload(await challenge(side, world)),
  async pay(side, world, payload) {
    const headers = new x402HTTPClient(side.signer).encodePaymentSignatureHeader(payload);
    const paid = await postSnapshot(side, world, headers);
    await paid.arrayBuffer();
    if (paid.status !== 200) throw new Error(`${side.name}: paid POST /v1/snapshot ${paid.status}`);
  },
};

const callSnapshot = async (side: Side, world: World, meta?: Record<string, unknown>) =>
  (await side.mcp.callTool(
    { name: "snapshot", arguments: { url: world.target }, ...(meta && { _meta: meta }) },
    undefined,
    { timeout: CALL_TIMEOUT_MS },
  )) as CallToolResult;

const MCP: Route = {
  name: "MCP (tools/call snapshot)",
  async sign(side, world) {
    const unpaid = await callSnapshot(side, world);
    if (!unpaid.isError || !unpaid.structuredContent) {
      throw new Error(`${side.name}: the unpaid tools/call was not a PaymentRequired result`);
    }
    return side.signer.createPaymentPayload(unpaid.structuredContent as unknown as PaymentRequired);
  },
  async pay(side, world, payload) {
    const result = await callSnapshot(side, world, { "x402/payment": payload });
    if (result.isError) {
      throw new Error(`${side.name}: paid tools/call failed: ${JSON.stringify(result.content)}`);
    }
  },
};

/**
 * CALLS_PER_ROUND paid calls one after the other, every proof signed before the timer starts;
 * ms per call. One call's time swings with the devnet's verify and settle; a few in a row
 * even that out, so the rounds' ratios need fewer rounds to settle.
 */
async function paidCalls(route: Route, side: Side, world: World): Promise<number> {
  const payloads: PaymentPayload[] = [];
  for (let i = 0; i < CALLS_PER_ROUND; i++) payloads.push(await route.sign(side, world));
  const offer = payloads[0]?.accepted as Offer;
  const before = await balanceOf(world, offer);
  const cpuBefore = await serviceCpuMicros(side.instance.metricsUrl);
  const started = performance.now();
  for (const payload of payloads) await route.pay(side, world, payload);
  const ms = (performance.now() - started) / CALLS_PER_ROUND;
  side.cpuPerCall =
    ((await serviceCpuMicros(side.instance.metricsUrl)) - cpuBefore) / CALLS_PER_ROUND;
  // Each authorization can move its price once at most: the sum says each call moved it.
  const all = { ...offer, amount: String(BigInt(offer.amount) * BigInt(CALLS_PER_ROUND)) };
  await checkTransfer(
    world,
    all,
    before,
    `${side.name}: ${CALLS_PER_ROUND} paid calls over ${route.name}`,
  );
  return ms;
}

/** One whole call by the official fetch wrapper (402, sign, pay): both builds must take it. */
async function payWithFetchWrapper(side: Side, world: World): Promise<void> {
  const [offer] = (await challenge(side, world)).accepts;
  if (!offer) throw new Error(`${side.name}: the 402 offers nothing`);
  const before = await balanceOf(world, offer);
  const pay = wrapFetchWithPayment(fetch, side.signer);
  const paid = await pay(`${side.instance.url}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: world.body,
  });
  await paid.arrayBuffer();
  if (paid.status !== 200) throw new Error(`${side.name}: wrapFetchWithPayment got ${paid.status}`);
  await checkTransfer(world, offer, before, `${side.name}: wrapFetchWithPayment`);
}

// ---------------------------------------------------------------- the run

/** The commit asked for, as a full hash and a line to print. */
function resolveOld(argv: string[]): { commit: string; line: string } {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== "--"),
    options: { old: { type: "string", default: DEFAULT_OLD } },
  });
  let commit: string;
  try {
    commit = git("rev-parse", "--verify", "--quiet", `${values.old}^{commit}`);
  } catch {
    throw new Error(`--old ${values.old} is not a commit of this repository`);
  }
  return { commit, line: git("log", "-1", "--format=%h %s", commit) };
}

/** The new side: this tree's HEAD, and whether it has changes not committed. */
function describeNew(): string {
  const head = git("log", "-1", "--format=%h", "HEAD");
  return git("status", "--porcelain").length > 0 ? `${head} + uncommitted changes` : head;
}

/** Each round's service CPU µs per paid call: [new, old]. */
type CpuRounds = [number, number][];

function judge(route: string, d: Duel, cpu: CpuRounds, oldName: string): boolean {
  const ok = d.pairedRatio <= TARGET_RATIO;
  const side = (name: string, s: Duel["a"]) =>
    `${name} median ${s.time.median.toFixed(1)} ms (min ${s.time.min.toFixed(1)}, max ${s.time.max.toFixed(1)})`;
  console.log(
    `paid call over ${route}: ${side("new", d.a)} · ${side(`old ${oldName}`, d.b)} · ` +
      `paired ratio new/old ${d.pairedRatio.toFixed(3)} (ratio of medians ${d.ratio.toFixed(3)}; ` +
      `${d.rounds} rounds of ${CALLS_PER_ROUND} calls a side) target ≤ ${TARGET_RATIO} ${ok ? "ok" : "MISSED"}`,
  );
  const read = cpu.filter(([n, o]) => Number.isFinite(n) && Number.isFinite(o) && o > 0);
  if (read.length > 0) {
    const median = (values: number[]) => summarise(values).median.toFixed(0);
    const paired = summarise(read.map(([n, o]) => n / o)).median;
    console.log(
      `  service CPU per paid call: new ${median(read.map(([n]) => n))} µs · old ` +
        `${median(read.map(([, o]) => o))} µs · paired ratio new/old ${paired.toFixed(3)} (printed)`,
    );
  }
  return ok;
}

async function main(): Promise<number> {
  const old = resolveOld(process.argv.slice(2));
  const oldName = old.line.split(" ")[0] ?? old.commit;
  console.log(`old: ${old.line}
new: this tree, ${describeNew()}`);
  const oldRoot = checkOut(old.commit);
  build(oldRoot);
  build(ROOT);

  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  cleanups.push(() => devnet.close());
  const site = await startSite(SITE_ADDRESS);
  cleanups.push(() => site.close());
  const env = fleetEnv({
    payTo: devnet.payTo,
    facilitatorUrl: devnet.facilitatorUrl,
    rpcUrl: devnet.rpcUrl,
    targetPorts: [site.port],
    allowCidrs: ALLOW_CIDRS,
  });
  const [newKey, oldKey] = devnet.payerPrivateKeys;
  if (!newKey || !oldKey) throw new Error("the devnet has no payers");
  const sides = {
    new: await startSide("new", ROOT, env, newKey),
    old: await startSide(`old-${oldName}`, oldRoot, env, oldKey),
  };
  const target = `http://${SITE_ADDRESS}:${site.port}/`;
  const world: World = {
    chain: createPublicClient({ transport: http(devnet.rpcUrl) }),
    usdc: devnet.usdcAddress,
    body: JSON.stringify({ url: target }),
    target,
  };
  for (const side of [sides.new, sides.old]) await payWithFetchWrapper(side, world);

  const routes = [HTTP, MCP];
  let failed = false;
  let paidCallsMade = 2; // the fetch wrapper's
  for (const route of routes) {
    const cpu: CpuRounds = [];
    const d = await duel(
      { name: "new", run: () => paidCalls(route, sides.new, world) },
      { name: "old", run: () => paidCalls(route, sides.old, world) },
      {
        warmup: WARMUP,
        rounds: ROUNDS,
        budgetMs: ROUTE_BUDGET_MS,
        onRound: () => cpu.push([sides.new.cpuPerCall, sides.old.cpuPerCall]),
      },
    );
    if (!judge(route.name, d, cpu, oldName)) failed = true;
    paidCallsMade += 2 * (WARMUP + d.rounds) * CALLS_PER_ROUND;
  }
  console.log(`on chain: each of the ${paidCallsMade} paid calls moved the price to payTo`);
  return failed ? 1 : 0;
}

// Ctrl-C reaches this process twice (from the terminal, and passed on by tsx): every signal is
// handled, or the second would end the process before its clean-up.
let signalled = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    signalled = true;
    void cleanUp().finally(() => process.exit(1));
  });
}

main()
  .catch((err: unknown) => {
    // After a signal the calls cut off are no news.
    if (!signalled) console.error(err);
    return 1;
  })
  .then(async (code) => {
    await cleanUp();
    process.exit(code);
  });
