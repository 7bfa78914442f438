import { createPublicClient, createWalletClient, defineChain, http } from "viem";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startAnvil } from "./anvil.js";
import type { AnvilProcess } from "./anvil.js";
import { ConfigError, StartupError, isListenError, listenError } from "../config-error.js";
import { compileDevnetContracts } from "./compile.js";
import {
  DEV_USDC_ABI,
  DEVNET_CHAIN_ID,
  DEVNET_NETWORK,
  DEVNET_USDC_ADDRESS,
  GAS_PAYER,
  MULTICALL3_ADDRESS,
  PAY_TO,
  PAYER_START_BALANCE,
  PAYERS,
} from "./constants.js";

/**
 * The embedded local payment network (docs/contract.md §7.7): anvil posing as Base Sepolia,
 * DevUSDC at the Base Sepolia USDC address, 1000 USDC for each of accounts 2–9, and an x402
 * facilitator that settles with account 0's gas. A devnet already answering on the same ports
 * is reused rather than started twice, unless `reuse` is false: then this one starts on free
 * ports beside it (`secsnap serve`: another instance's devnet goes when that instance stops).
 */

export interface DevnetOptions {
  /** anvil's port on 127.0.0.1; 0 starts on a free port (never reuses). */
  rpcPort: number;
  /** The facilitator's port on 127.0.0.1; 0 starts on a free port (never reuses). */
  facilitatorPort: number;
  /** Progress lines ("devnet: ..."); silent when omitted. */
  log?: (line: string) => void;
  /**
   * A devnet found on these ports: reused (true, the default), or left alone with this one
   * started on free ports instead (false). Anything else on them stops the start either way.
   */
  reuse?: boolean;
}

export interface Devnet {
  rpcUrl: string;
  facilitatorUrl: string;
  chainId: typeof DEVNET_CHAIN_ID;
  network: typeof DEVNET_NETWORK;
  usdcAddress: Address;
  /** Account 1: receives payments. */
  payTo: Address;
  /** Account 0: pays settlement gas. */
  gasPayer: Address;
  /** Accounts 2–9, each funded with 1000 USDC when the devnet was created. */
  payerPrivateKeys: Hex[];
  payerAddresses: Address[];
  /** True when a running anvil devnet was found on rpcPort and reused (none was spawned). */
  reused: boolean;
  /** True when a running devnet facilitator was found on facilitatorPort and reused. */
  facilitatorReused: boolean;
  /**
   * The ports that were asked for but held by another devnet, this one having started on free
   * ports instead (`reuse: false`); empty otherwise.
   */
  movedFrom: string[];
  /** pid of the anvil this call spawned; undefined when reused. */
  anvilPid: number | undefined;
  /** Stops what this call started (anvil, facilitator); leaves reused parts running. */
  close(): Promise<void>;
}

const HOST = "127.0.0.1";
const PROBE_TIMEOUT_MS = 2_000;

type Probe = { state: "free" } | { state: "devnet" } | { state: "foreign"; detail: string };

function isConnectionRefused(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; depth++) {
    if ((e as { code?: unknown }).code === "ECONNREFUSED") return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

async function fetchJson(
  url: string,
  init: RequestInit,
): Promise<
  { ok: true; status: number; body: unknown } | { ok: false; refused: boolean; detail: string }
> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    const text = await res.text();
    try {
      return { ok: true, status: res.status, body: JSON.parse(text) as unknown };
    } catch {
      return { ok: false, refused: false, detail: `HTTP ${res.status}, not JSON` };
    }
  } catch (error) {
    if (isConnectionRefused(error)) return { ok: false, refused: true, detail: "refused" };
    const name = (error as Error).name;
    return {
      ok: false,
      refused: false,
      detail: name === "TimeoutError" ? "no answer in time" : (error as Error).message,
    };
  }
}

async function rpcCall(url: string, method: string, params: unknown[]) {
  return fetchJson(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
}

/** Is a devnet (chain 84532 with the token in place) answering at this RPC URL? */
async function probeRpc(url: string): Promise<Probe> {
  const chain = await rpcCall(url, "eth_chainId", []);
  if (!chain.ok)
    return chain.refused ? { state: "free" } : { state: "foreign", detail: chain.detail };
  const chainId = (chain.body as { result?: unknown }).result;
  if (typeof chainId !== "string" || Number(chainId) !== DEVNET_CHAIN_ID) {
    return {
      state: "foreign",
      detail: `it is not chain ${DEVNET_CHAIN_ID} (eth_chainId ${JSON.stringify(chainId ?? null)})`,
    };
  }
  const code = await rpcCall(url, "eth_getCode", [DEVNET_USDC_ADDRESS, "latest"]);
  const result = code.ok ? (code.body as { result?: unknown }).result : undefined;
  if (typeof result !== "string" || result === "0x") {
    return { state: "foreign", detail: `chain ${DEVNET_CHAIN_ID} without the devnet USDC token` };
  }
  return { state: "devnet" };
}

/** Is an x402 facilitator for exact/eip155:84532 answering at this URL? */
async function probeFacilitator(url: string): Promise<Probe> {
  const res = await fetchJson(`${url}/supported`, { method: "GET" });
  if (!res.ok) return res.refused ? { state: "free" } : { state: "foreign", detail: res.detail };
  const kinds = (res.body as { kinds?: unknown }).kinds;
  const serves =
    res.status === 200 &&
    Array.isArray(kinds) &&
    kinds.some(
      (k: { x402Version?: unknown; scheme?: unknown; network?: unknown }) =>
        k.x402Version === 2 && k.scheme === "exact" && k.network === DEVNET_NETWORK,
    );
  return serves
    ? { state: "devnet" }
    : { state: "foreign", detail: `GET /supported does not list exact on ${DEVNET_NETWORK}` };
}

function portInUse(what: string, port: number, variable: string, detail: string): Error {
  return new ConfigError(
    variable,
    `is ${port}, but the devnet's ${HOST}:${port} (${what}) is in use by something that is not a secsnap devnet (${detail}); stop it or set ${variable} to a free port (0 picks one)`,
  );
}

/** Places the contracts and funds the payers on a fresh anvil. */
async function seedChain(rpcUrl: string, log: (line: string) => void): Promise<void> {
  const compiled = await compileDevnetContracts();
  log(
    compiled.fromCache
      ? "devnet: contracts loaded from cache"
      : `devnet: contracts compiled (cached at ${compiled.cacheFile})`,
  );
  const chain = defineChain({
    id: DEVNET_CHAIN_ID,
    name: "secsnap devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl, { timeout: 10_000 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });
  const wallet = createWalletClient({
    account: privateKeyToAccount(GAS_PAYER.privateKey),
    chain,
    transport,
  });

  // The token's runtime code goes straight to the USDC address (its constructor never runs,
  // which DevUSDC is written for); Multicall3 serves the x402 SDK's diagnostic reads.
  await publicClient.request({
    method: "anvil_setCode" as never,
    params: [DEVNET_USDC_ADDRESS, compiled.artifacts.DevUSDC.deployedBytecode] as never,
  });
  await publicClient.request({
    method: "anvil_setCode" as never,
    params: [MULTICALL3_ADDRESS, compiled.artifacts.Multicall3.deployedBytecode] as never,
  });

  // Sent back to back with explicit nonces (automine includes each at once), then confirmed.
  let nonce = await publicClient.getTransactionCount({
    address: GAS_PAYER.address,
    blockTag: "pending",
  });
  const hashes: Hex[] = [];
  for (const payer of PAYERS) {
    hashes.push(
      await wallet.writeContract({
        address: DEVNET_USDC_ADDRESS,
        abi: DEV_USDC_ABI,
        functionName: "mint",
        args: [payer.address, PAYER_START_BALANCE],
        nonce: nonce++,
      }),
    );
  }
  for (const hash of hashes) {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
    if (receipt.status !== "success") throw new Error(`devnet: mint transaction ${hash} failed`);
  }
}

/**
 * Kills a spawned anvil when the process ends, whichever way it ends. On a signal that the
 * owner handles itself (e.g. `serve` draining running requests, which may still settle
 * payments on this chain), anvil is left alone: the owner's close() or exit stops it.
 */
function killOnProcessEnd(anvil: AnvilProcess): () => void {
  const killNow = () => {
    if (anvil.child.exitCode === null && anvil.child.signalCode === null) {
      anvil.child.kill("SIGTERM");
    }
  };
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  const detach = () => {
    process.off("exit", killNow);
    for (const s of signals) process.off(s, onSignal);
  };
  function onSignal(signal: NodeJS.Signals) {
    if (process.listenerCount(signal) > 1) return; // someone else owns shutdown
    // Nobody else handles it: keep the signal's default meaning (end the process), minus anvil.
    killNow();
    detach();
    process.kill(process.pid, signal);
  }
  process.once("exit", killNow);
  for (const s of signals) process.on(s, onSignal);
  return detach;
}

/**
 * Brings up (or finds) the devnet. Throws a one-line error when a port is held by something
 * else, when anvil cannot start, or when seeding fails; nothing is left running in that case.
 */
export async function startDevnet(opts: DevnetOptions): Promise<Devnet> {
  const log = opts.log ?? (() => {});
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    cleanups.length = 0;
  };

  try {
    // --- chain
    const reuse = opts.reuse ?? true;
    const movedFrom: string[] = [];
    let rpcUrl = `http://${HOST}:${opts.rpcPort}`;
    let reused = false;
    let anvilPid: number | undefined;
    const rpcProbe: Probe = opts.rpcPort === 0 ? { state: "free" } : await probeRpc(rpcUrl);
    if (rpcProbe.state === "foreign") {
      throw portInUse("RPC", opts.rpcPort, "DEVNET_RPC_PORT", rpcProbe.detail);
    }
    if (rpcProbe.state === "devnet" && reuse) {
      reused = true;
      log(`devnet: reusing the devnet chain already running at ${rpcUrl}`);
    } else {
      // Another devnet on the port and no reuse: this one's chain goes on a free port.
      const anvilPort = rpcProbe.state === "devnet" ? 0 : opts.rpcPort;
      if (anvilPort !== opts.rpcPort) movedFrom.push(`DEVNET_RPC_PORT ${opts.rpcPort}`);
      const anvil = await startAnvil({ port: anvilPort }).catch((error: unknown) => {
        throw new StartupError(
          `devnet: ${(error as Error).message}${anvilPort === 0 ? "" : ` (DEVNET_RPC_PORT ${anvilPort}: a free port, or 0 for any, may help)`}`,
        );
      });
      const detach = killOnProcessEnd(anvil);
      cleanups.push(async () => {
        detach();
        await anvil.stop();
      });
      rpcUrl = anvil.url;
      anvilPid = anvil.pid;
      log(`devnet: anvil (chain ${DEVNET_CHAIN_ID}) listening on ${rpcUrl}`);
      await seedChain(rpcUrl, log);
      log(`devnet: USDC at ${DEVNET_USDC_ADDRESS}; accounts 2-9 hold 1000 USDC each`);
    }

    // --- facilitator. Reused only next to a reused chain: a facilitator found beside a chain
    // this call just started is settling on some other chain (a stale devnet's, or a
    // stand-alone facilitator for the real Base Sepolia, which has the same network id).
    let facilitatorUrl = `http://${HOST}:${opts.facilitatorPort}`;
    let facilitatorReused = false;
    const facProbe: Probe =
      opts.facilitatorPort === 0 ? { state: "free" } : await probeFacilitator(facilitatorUrl);
    // Without reuse a devnet facilitator found there is another instance's: ours goes elsewhere.
    const facilitatorPort = facProbe.state === "devnet" && !reuse ? 0 : opts.facilitatorPort;
    if (facilitatorPort !== opts.facilitatorPort) {
      movedFrom.push(`DEVNET_FACILITATOR_PORT ${opts.facilitatorPort}`);
    }
    if (facProbe.state === "foreign" || (facProbe.state === "devnet" && reuse && !reused)) {
      throw portInUse(
        "facilitator",
        opts.facilitatorPort,
        "DEVNET_FACILITATOR_PORT",
        facProbe.state === "foreign"
          ? facProbe.detail
          : `an x402 facilitator for another chain: the devnet chain at ${rpcUrl} was not running`,
      );
    }
    if (facProbe.state === "devnet" && reuse) {
      facilitatorReused = true;
      log(`devnet: reusing the facilitator already running at ${facilitatorUrl}`);
    } else {
      // Loaded here, not at the top: the devnet's constants (secsnap pay) need no HTTP server.
      const { startFacilitator } = await import("../facilitator/index.js");
      const facilitator = await startFacilitator({
        rpcUrl,
        privateKey: GAS_PAYER.privateKey,
        networks: [DEVNET_NETWORK],
        host: HOST,
        port: facilitatorPort,
        pollingIntervalMs: 50,
        // Concurrent verifies' reads share one request to anvil: a crowd of payments costs the
        // devnet's process about a quarter less (docs/benchmarks.md, "Payment").
        batchRpc: true,
        confirmationTimeoutMs: 30_000,
        log,
      }).catch((error: unknown) => {
        // Taken between the probe and the listen, most likely: one line naming the variable.
        throw isListenError(error)
          ? listenError(error, {
              host: HOST,
              port: facilitatorPort,
              portVariable: "DEVNET_FACILITATOR_PORT",
            })
          : error;
      });
      cleanups.push(() => facilitator.close());
      facilitatorUrl = facilitator.url;
      log(
        `devnet: x402 facilitator listening on ${facilitatorUrl} (gas paid by ${GAS_PAYER.address})`,
      );
    }

    let closing: Promise<void> | undefined;
    return {
      rpcUrl,
      facilitatorUrl,
      chainId: DEVNET_CHAIN_ID,
      network: DEVNET_NETWORK,
      usdcAddress: DEVNET_USDC_ADDRESS,
      payTo: PAY_TO.address,
      gasPayer: GAS_PAYER.address,
      payerPrivateKeys: PAYERS.map((p) => p.privateKey),
      payerAddresses: PAYERS.map((p) => p.address),
      reused,
      facilitatorReused,
      movedFrom,
      anvilPid,
      close: () => (closing ??= cleanup()),
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}
