import {
  createPublicClient,
  http,
  parseAbi,
  parseAbiItem,
  TransactionReceiptNotFoundError,
  type PublicClient,
} from "viem";
import type { Authorization } from "./authorization.js";
import { describeError } from "./describe-error.js";

/**
 * What the chain says about one authorization (docs/payment.md, "Who decides unknown"): the
 * facilitator's answers can be lost or inconclusive, the token's own state cannot. A signed
 * EIP-3009 authorization can only move exactly our price to our payTo, so "used" means paid —
 * unless the payer canceled it, which its AuthorizationCanceled event tells apart.
 */
export type ChainAnswer =
  /** Used by a transfer: one payment moved (the transaction, when found). */
  | { kind: "used"; transaction: string }
  | { kind: "canceled" }
  /** Not used, and the known transaction (if any) is not mined: it may still land. */
  | { kind: "pending"; transaction: string }
  /** Not used and no transaction known: nothing moved (yet). */
  | { kind: "unused" }
  /** No RPC configured for the network: the chain cannot be asked. */
  | { kind: "no_rpc" }
  /** The RPC failed: still unknown. */
  | { kind: "unreadable"; why: string };

/** The chain as the ledger asks it; a test double stands in for it in unit tests. */
export interface ChainReader {
  read(auth: Authorization, transaction: string | undefined): Promise<ChainAnswer>;
}

const EIP3009_ABI = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);
const USED_EVENT = parseAbiItem(
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
);
const CANCELED_EVENT = parseAbiItem(
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
);
/** Blocks searched back for the transaction that used an authorization (hours on Base). */
const LOG_LOOKBACK_BLOCKS = 10_000n;
/** Bound on one RPC call: a slow node makes the answer unknown, never a stuck request. */
const RPC_TIMEOUT_MS = 10_000;

/** Reads EIP-3009 state over the configured JSON-RPC URLs (X402_RPC_URL_*; devnet: its anvil). */
export class RpcChainReader implements ChainReader {
  private readonly chains = new Map<string, PublicClient>();

  constructor(rpcUrls: Readonly<Record<string, string>>) {
    for (const [network, url] of Object.entries(rpcUrls)) {
      this.chains.set(
        network,
        createPublicClient({ transport: http(url, { timeout: RPC_TIMEOUT_MS, retryCount: 0 }) }),
      );
    }
  }

  async read(auth: Authorization, transaction: string | undefined): Promise<ChainAnswer> {
    const chain = this.chains.get(auth.network);
    if (!chain) return { kind: "no_rpc" };
    const token = auth.asset as `0x${string}`;
    try {
      const used = await chain.readContract({
        address: token,
        abi: EIP3009_ABI,
        functionName: "authorizationState",
        args: [auth.from, auth.nonce],
      });
      if (!used) {
        if (transaction && !(await mined(chain, transaction))) {
          return { kind: "pending", transaction };
        }
        return { kind: "unused" };
      }
      const latest = await chain.getBlockNumber();
      const fromBlock = latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n;
      const args = { authorizer: auth.from, nonce: auth.nonce };
      const [usedLogs, canceledLogs] = await Promise.all([
        chain.getLogs({ address: token, event: USED_EVENT, args, fromBlock }),
        chain.getLogs({ address: token, event: CANCELED_EVENT, args, fromBlock }),
      ]);
      if (canceledLogs.length > 0) return { kind: "canceled" };
      return { kind: "used", transaction: usedLogs[0]?.transactionHash ?? transaction ?? "" };
    } catch (error) {
      return { kind: "unreadable", why: describeError(error) };
    }
  }
}

/** Whether a transaction is in a block (a reverted one is mined too: the state read says how). */
async function mined(chain: PublicClient, transaction: string): Promise<boolean> {
  try {
    await chain.getTransactionReceipt({ hash: transaction as `0x${string}` });
    return true;
  } catch (error) {
    if (error instanceof TransactionReceiptNotFoundError) return false;
    throw error;
  }
}
