/**
 * Whether `secsnap pay` or `secsnap mcp` charged anything once a signed proof left without a
 * report: the EIP-3009 authorization of the proof, read on the offer's chain (docs/payment.md,
 * "Paying from the command line"). An API's refusal is no proof: it may have settled the proof
 * anyway. The token moves money for an authorization at most once, so its state is the truth.
 */
import type { PaymentRequirements } from "@x402/core/types";
import ipaddr from "ipaddr.js";
import { createPublicClient, formatUnits, http, parseAbi, parseAbiItem } from "viem";
import type { Address, Hex } from "viem";
import { NETWORK_IDS, NETWORKS } from "../../networks.js";
import { DEVNET_NETWORK, USDC_DECIMALS } from "../../devnet/index.js";

/** What the chain is asked about: the authorization inside the proof, and where it lives. */
export interface SignedAuthorization {
  /** CAIP-2 id of the offer paid. */
  network: string;
  /** The USDC contract of that network. */
  asset: Address;
  from: Address;
  to: Address;
  value: bigint;
  nonce: Hex;
  /** Unix seconds: after this the token refuses the authorization. */
  validBefore: bigint;
}

export type ChainReading =
  | { state: "used"; transaction: Hex | undefined }
  | { state: "canceled" }
  /** Unused at the chain's latest block; `expired`: that block is past `validBefore`. */
  | { state: "unused"; expired: boolean }
  | { state: "unreadable"; why: string };

/** Base's documented public RPC endpoints: used only when `--rpc` is not given. */
const PUBLIC_RPC: Readonly<Record<string, string>> = Object.fromEntries(
  Object.values(NETWORKS).map((n) => [n.id, n.publicRpcUrl]),
);
/** The devnet's anvil (DEVNET_RPC_PORT's default); it listens on the loopback address only. */
const DEVNET_RPC_PORT = "8545";
/** Blocks searched back for the transaction that used the authorization (hours on Base). */
const LOG_LOOKBACK_BLOCKS = 10_000n;
/** Bound on one RPC call; the caller bounds the whole reading. */
const RPC_CALL_TIMEOUT_MS = 10_000;

const EIP3009_ABI = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
]);
const AUTHORIZATION_USED = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const AUTHORIZATION_CANCELED = parseAbiItem(
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
);

/**
 * The RPC to read for the offer's chain: `--rpc`; for a devnet offer of an API on this machine,
 * its anvil (DEVNET_RPC_PORT, as `secsnap serve` reads it); else the network's public endpoint.
 * A devnet API elsewhere has its anvil on its own loopback: what answers on ours is another
 * chain with the same id, so none is guessed. Every reading checks the RPC's chain id.
 */
export function chainRpc(
  option: string | undefined,
  offer: Pick<PaymentRequirements, "network" | "extra">,
  api: URL,
  env: NodeJS.ProcessEnv,
): string | undefined {
  if (option !== undefined) return option;
  if (offer.extra?.devnet === true && offer.network === DEVNET_NETWORK) {
    if (!onThisMachine(api)) return undefined;
    const port = env.DEVNET_RPC_PORT?.trim();
    return `http://127.0.0.1:${port && /^\d{1,5}$/.test(port) ? port : DEVNET_RPC_PORT}`;
  }
  return PUBLIC_RPC[offer.network];
}

/** Whether `api` names this machine: `localhost` or a loopback address. */
function onThisMachine(api: URL): boolean {
  const host = api.hostname.replace(/^\[(.*)\]$/, "$1");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === "loopback";
}

/** Why no RPC is read for `offer` (chainRpc gave none). */
function noRpc(offer: Pick<PaymentRequirements, "network" | "extra">): string {
  return offer.extra?.devnet === true
    ? "the API is a devnet on another machine, whose chain only it reads (--rpc URL)"
    : "no RPC known for this network (--rpc URL)";
}

/** The authorization of a signed payload (v1 and v2 carry it the same way), for `offer`. */
export function authorizationOf(
  payload: unknown,
  offer: PaymentRequirements,
): SignedAuthorization | undefined {
  const auth = (payload as { payload?: { authorization?: Record<string, unknown> } }).payload
    ?.authorization;
  const text = (key: string) => (typeof auth?.[key] === "string" ? auth[key] : undefined);
  const [from, to, value, nonce, validBefore] = ["from", "to", "value", "nonce", "validBefore"].map(
    text,
  );
  if (!from || !to || !value || !nonce || !validBefore) return undefined;
  return {
    network: offer.network,
    asset: offer.asset as Address,
    from: from as Address,
    to: to as Address,
    value: BigInt(value),
    nonce: nonce as Hex,
    validBefore: BigInt(validBefore),
  };
}

/** Rejects when `signal` aborts: a reading that is cut short (time bound, Ctrl-C) says why. */
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error(reasonOf(signal)));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name !== "AbortError" && reason.name !== "TimeoutError") {
    return reason.message;
  }
  return reason instanceof Error && reason.name === "TimeoutError"
    ? "the chain did not answer in time"
    : "interrupted";
}

/**
 * The authorization's state on chain: `authorizationState(from, nonce)` of the USDC contract at
 * the latest block, and when used, the transaction that used it (its AuthorizationUsed log).
 * Unused at a block past `validBefore` is unused for good: the token refuses it from then on.
 * The RPC must be the offer's chain: another chain would say "unused" for everything.
 */
export async function readAuthorization(
  rpcUrl: string,
  auth: SignedAuthorization,
  signal: AbortSignal,
): Promise<ChainReading> {
  const chain = createPublicClient({
    transport: http(rpcUrl, { timeout: RPC_CALL_TIMEOUT_MS, retryCount: 1 }),
  });
  try {
    const chainId = await abortable(chain.getChainId(), signal);
    if (`eip155:${chainId}` !== auth.network) {
      return {
        state: "unreadable",
        why: `the RPC at ${rpcUrl} is chain eip155:${chainId}, not ${auth.network}`,
      };
    }
    const block = await abortable(chain.getBlock(), signal);
    const used = await abortable(
      chain.readContract({
        address: auth.asset,
        abi: EIP3009_ABI,
        functionName: "authorizationState",
        args: [auth.from, auth.nonce],
        blockNumber: block.number,
      }),
      signal,
    );
    if (!used) return { state: "unused", expired: block.timestamp >= auth.validBefore };
    const latest = block.number;
    const fromBlock = latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n;
    const filter = { address: auth.asset, args: { authorizer: auth.from, nonce: auth.nonce } };
    const [usedLogs, canceledLogs] = await abortable(
      Promise.all([
        chain.getLogs({ ...filter, event: AUTHORIZATION_USED, fromBlock }),
        chain.getLogs({ ...filter, event: AUTHORIZATION_CANCELED, fromBlock }),
      ]),
      signal,
    );
    // "Used" also covers a canceled authorization (the payer's own cancelAuthorization).
    if (canceledLogs.length > 0) return { state: "canceled" };
    return { state: "used", transaction: usedLogs[0]?.transactionHash ?? undefined };
  } catch (error) {
    const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return { state: "unreadable", why: `cannot read ${rpcUrl}: ${message}` };
  }
}

/**
 * The charge line read on chain for a proof that left without a report, and the reading itself
 * (`secsnap mcp` keeps its session's account by it).
 */
export async function chargeOnChain(
  auth: SignedAuthorization | undefined,
  offer: PaymentRequirements,
  rpcOption: string | undefined,
  api: URL,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
): Promise<{ line: string; reading?: ChainReading }> {
  if (!auth) {
    return { line: "unknown whether charged: the signed proof carries no EIP-3009 authorization" };
  }
  const reading = await readOfferChain(auth, offer, rpcOption, api, env, signal);
  return { line: chargeLine(reading, auth), reading };
}

/** readAuthorization on the RPC chainRpc names for the offer, or why there is none. */
export function readOfferChain(
  auth: SignedAuthorization,
  offer: PaymentRequirements,
  rpcOption: string | undefined,
  api: URL,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
): Promise<ChainReading> {
  const rpc = chainRpc(rpcOption, offer, api, env);
  return rpc
    ? readAuthorization(rpc, auth, signal)
    : Promise.resolve({ state: "unreadable", why: noRpc(offer) });
}

/** The USDC balance of `owner` on `network`, in units; the RPC must be that chain. */
export async function readUsdcBalance(
  rpcUrl: string,
  network: string,
  asset: Address,
  owner: Address,
  signal: AbortSignal,
): Promise<bigint> {
  const chain = createPublicClient({
    transport: http(rpcUrl, { timeout: RPC_CALL_TIMEOUT_MS, retryCount: 1 }),
  });
  const chainId = await abortable(chain.getChainId(), signal);
  if (`eip155:${chainId}` !== network) {
    throw new Error(`the RPC at ${rpcUrl} is chain eip155:${chainId}, not ${network}`);
  }
  return abortable(
    chain.readContract({
      address: asset,
      abi: EIP3009_ABI,
      functionName: "balanceOf",
      args: [owner],
    }),
    signal,
  );
}

/** "base-sepolia (eip155:84532)", or the bare id of a network without a name. */
export function networkLabel(network: string): string {
  const name = Object.entries(NETWORK_IDS).find(([, id]) => id === network)?.[0];
  return name ? `${name} (${network})` : network;
}

export function usdc(units: string | bigint): string {
  return `${formatUnits(BigInt(units), USDC_DECIMALS)} USDC`;
}

const expiry = (auth: SignedAuthorization) =>
  new Date(Number(auth.validBefore) * 1000).toISOString();

/** The one line that ends a failed call whose charge only the chain can tell. */
export function chargeLine(reading: ChainReading, auth: SignedAuthorization): string {
  const which = `authorization ${auth.nonce} from ${auth.from}`;
  switch (reading.state) {
    case "used":
      return (
        `charged ${usdc(auth.value)} on ${networkLabel(auth.network)} to ${auth.to}, without a report ` +
        (reading.transaction
          ? `(tx ${reading.transaction})`
          : `(${which} is used; its transaction is not in the last ${LOG_LOOKBACK_BLOCKS} blocks)`)
      );
    case "canceled":
      return `not charged: ${which} was canceled`;
    case "unused":
      return reading.expired
        ? `not charged: the chain says ${which} is unused on ${networkLabel(auth.network)} and expired at ${expiry(auth)}; it can no longer be used`
        : `not charged: the chain says ${which} is unused on ${networkLabel(auth.network)}; it can still be used until ${expiry(auth)}, then it expires`;
    case "unreadable":
      return (
        `unknown whether charged: ${reading.why}; check ${which} ` +
        `(authorizationState of USDC ${auth.asset} on ${networkLabel(auth.network)}), ` +
        `usable until ${expiry(auth)}; --rpc URL reads another node`
      );
  }
}
