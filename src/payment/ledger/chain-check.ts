import {
  createPublicClient,
  http,
  isAddressEqual,
  parseAbi,
  parseAbiItem,
  parseEventLogs,
  TransactionReceiptNotFoundError,
  type Log,
  type PublicClient,
} from "viem";
import type { Authorization } from "./authorization.js";
import { describeError } from "../describe-error.js";

/**
 * What the chain says about one authorization (docs/payment.md, "Who decides unknown"): the
 * facilitator's answers can be lost or inconclusive, the token's own state cannot. A used nonce
 * is not a payment: EIP-3009 nonces are the payer's, not one (to, value)'s, so the payer can
 * spend the nonce of the authorization it sent us on another one it signs (to itself, value 0),
 * or cancel it. Paid means the transaction that used the nonce moved our price from the payer to
 * our payTo in the offered token.
 */
export type ChainAnswer =
  /** Used by the transaction that paid us: the price moved from the payer to payTo. */
  | { kind: "used"; transaction: string }
  /** Used by a transaction that paid us nothing (another authorization of the payer's). */
  | { kind: "used_elsewhere"; transaction: string }
  | { kind: "canceled" }
  /** Not used, and the known transaction (if any) is not mined: it may still land. */
  | { kind: "pending"; transaction: string }
  /** Not used and no transaction known: nothing moved (yet). */
  | { kind: "unused" }
  /** No RPC configured for the network: the chain cannot be asked. */
  | { kind: "no_rpc" }
  /** The RPC failed: still unknown. */
  | { kind: "unreadable"; why: string };

/** What pays for an authorization: the offer's price (token units) to the offer's payTo. */
export interface Due {
  readonly payTo: string;
  readonly amount: string;
}

/** The chain as the ledger asks it; a test double stands in for it in unit tests. */
export interface ChainReader {
  read(auth: Authorization, due: Due, transaction: string | undefined): Promise<ChainAnswer>;
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
/** The token's events in the transaction that used a nonce. */
const TOKEN_EVENTS = parseAbi([
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);
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

  async read(auth: Authorization, due: Due, transaction: string | undefined): Promise<ChainAnswer> {
    const chain = this.chains.get(auth.network);
    if (!chain) return { kind: "no_rpc" };
    try {
      const used = await chain.readContract({
        address: auth.asset as `0x${string}`,
        abi: EIP3009_ABI,
        functionName: "authorizationState",
        args: [auth.from, auth.nonce],
      });
      if (used) return await howUsed(chain, auth, due, transaction);
      if (transaction && !(await mined(chain, transaction))) {
        return { kind: "pending", transaction };
      }
      return { kind: "unused" };
    } catch (error) {
      return { kind: "unreadable", why: describeError(error) };
    }
  }
}

/** A used nonce: canceled, or used by a transaction whose receipt says whether it paid us. */
async function howUsed(
  chain: PublicClient,
  auth: Authorization,
  due: Due,
  transaction: string | undefined,
): Promise<ChainAnswer> {
  const token = auth.asset as `0x${string}`;
  const latest = await chain.getBlockNumber();
  const fromBlock = latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n;
  const args = { authorizer: auth.from, nonce: auth.nonce };
  const [usedLogs, canceledLogs] = await Promise.all([
    chain.getLogs({ address: token, event: USED_EVENT, args, fromBlock }),
    chain.getLogs({ address: token, event: CANCELED_EVENT, args, fromBlock }),
  ]);
  if (canceledLogs.length > 0) return { kind: "canceled" };
  // Past the lookback, the transaction the record knows is the one to read.
  const user = usedLogs[0]?.transactionHash ?? transaction;
  const receipt = user && (await chain.getTransactionReceipt({ hash: user as `0x${string}` }));
  const paid = receipt ? paidIn(receipt.logs, auth, due) : undefined;
  if (!user || paid === undefined) {
    return {
      kind: "unreadable",
      why: `no transaction that used the authorization in the last ${LOG_LOOKBACK_BLOCKS} blocks`,
    };
  }
  return { kind: paid ? "used" : "used_elsewhere", transaction: user };
}

/**
 * Whether a transaction's use of the authorization paid us (undefined: it did not use it), as
 * @x402/evm checks its own settlements: a Transfer by the token from the payer to payTo of the
 * price. The token emits an authorization's transfer right after marking its nonce used (USDC's
 * _transferWithAuthorization), so only the log after AuthorizationUsed counts: another transfer
 * in the same transaction (a second authorization batched with it) pays for its own nonce.
 */
function paidIn(logs: readonly Log[], auth: Authorization, due: Due): boolean | undefined {
  const events = parseEventLogs({
    abi: TOKEN_EVENTS,
    logs: logs.filter((log) => isAddressEqual(log.address, auth.asset as `0x${string}`)),
  });
  const use = events.find(
    (event) =>
      event.eventName === "AuthorizationUsed" &&
      isAddressEqual(event.args.authorizer, auth.from) &&
      event.args.nonce.toLowerCase() === auth.nonce,
  );
  if (!use) return undefined;
  const transfer = events.find((event) => event.logIndex === use.logIndex + 1);
  return (
    transfer?.eventName === "Transfer" &&
    isAddressEqual(transfer.args.from, auth.from) &&
    isAddressEqual(transfer.args.to, due.payTo as `0x${string}`) &&
    transfer.args.value === BigInt(due.amount)
  );
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
