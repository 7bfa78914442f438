import { x402Facilitator } from "@x402/core/facilitator";
import type { Network } from "@x402/core/types";
import { toFacilitatorEvmSigner } from "@x402/evm";
import type { FacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";
import { EVM_NETWORK_CHAIN_ID_MAP } from "@x402/evm/v1";
import { createPublicClient, createWalletClient, defineChain, http } from "viem";
import type {
  Abi,
  Address,
  Chain,
  Hex,
  ReadContractParameters,
  VerifyTypedDataParameters,
  WriteContractParameters,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { walletTxQueue } from "./tx-queue.js";

/**
 * The x402 side of the facilitator: the official x402Facilitator with the official EVM `exact`
 * scheme, over a viem signer whose transaction submission goes through one queue per wallet.
 */

export interface FacilitatorOptions {
  /** JSON-RPC endpoint of the chain the facilitator settles on. */
  rpcUrl: string;
  /** Gas-paying key: it submits every transferWithAuthorization and pays its gas. */
  privateKey: Hex;
  /** CAIP-2 networks to serve, e.g. ["eip155:84532"]. All must be the RPC's chain. */
  networks: string[];
  /** viem chain for the RPC; defaults to a plain EIP-155 chain with the networks' chain id. */
  chain?: Chain;
  /** How often to poll for receipts (ms). Default 1000; a local devnet can go lower. */
  pollingIntervalMs?: number;
  /**
   * Sends the JSON-RPC calls made in one tick as one batch request. Only for an RPC known to
   * take batches (the devnet's anvil): some providers refuse or cap them.
   */
  batchRpc?: boolean;
  /** How long a settlement waits for its receipt before answering `settlement_pending`. */
  confirmationTimeoutMs?: number;
  /** When set, POST /verify and /settle require `Authorization: Bearer <authToken>`. */
  authToken?: string;
  /** Receives one line per settlement and per unexpected error. */
  log?: (line: string) => void;
}

export interface X402FacilitatorHandle {
  facilitator: x402Facilitator;
  /** The gas payer's address. */
  address: Address;
  chainId: number;
  networks: Network[];
  /** The same chain under its x402 v1 names (e.g. `base-sepolia`), each to its CAIP-2 id. */
  networksV1: ReadonlyMap<string, Network>;
  rpcUrl: string;
}

/** x402 v1 names of a chain, as the SDK's v1 EVM scheme knows them. */
function v1NetworkNames(chainId: number): string[] {
  return Object.entries(EVM_NETWORK_CHAIN_ID_MAP)
    .filter(([, id]) => id === chainId)
    .map(([name]) => name);
}

const EIP155 = /^eip155:(\d{1,15})$/;

/** Validates CAIP-2 EVM networks and returns their one shared chain id. */
function parseEvmNetworks(networks: readonly string[]): {
  chainId: number;
  networks: Network[];
} {
  if (networks.length === 0) throw new Error("at least one network is required");
  const ids = new Set<number>();
  for (const network of networks) {
    const m = EIP155.exec(network);
    if (!m?.[1]) throw new Error(`network ${JSON.stringify(network)} is not eip155:<chain id>`);
    ids.add(Number(m[1]));
  }
  if (ids.size !== 1) {
    // One RPC URL and one wallet client serve exactly one chain.
    throw new Error(
      `all networks must be the same chain (one RPC per facilitator); got ${networks.join(", ")}`,
    );
  }
  const [chainId] = ids;
  return { chainId: chainId as number, networks: [...new Set(networks)] as Network[] };
}

export function createX402Facilitator(opts: FacilitatorOptions): X402FacilitatorHandle {
  const { chainId, networks } = parseEvmNetworks(opts.networks);
  if (!/^0x[0-9a-fA-F]{64}$/.test(opts.privateKey)) {
    throw new Error("privateKey must be 0x followed by 64 hex digits");
  }
  if (opts.chain && opts.chain.id !== chainId) {
    throw new Error(`chain ${opts.chain.id} does not match network eip155:${chainId}`);
  }
  const chain =
    opts.chain ??
    defineChain({
      id: chainId,
      name: `eip155:${chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [opts.rpcUrl] } },
    });
  const account = privateKeyToAccount(opts.privateKey);
  // Bounded RPC calls: a hung node must turn into an error, not a hung settlement.
  const transport = http(opts.rpcUrl, {
    timeout: 15_000,
    retryCount: 1,
    ...(opts.batchRpc && { batch: true }),
  });
  const pollingInterval = opts.pollingIntervalMs ?? 1_000;
  const publicClient = createPublicClient({ chain, transport, pollingInterval });
  const walletClient = createWalletClient({ account, chain, transport, pollingInterval });
  const queue = walletTxQueue(opts.rpcUrl, account.address, () =>
    publicClient.getTransactionCount({ address: account.address, blockTag: "pending" }),
  );

  // The SDK's signer interface is deliberately loose (abi: unknown[], functionName: string);
  // the casts hand its arguments to viem unchanged.
  const signer: FacilitatorEvmSigner = toFacilitatorEvmSigner(
    {
      address: account.address,
      readContract: (args) =>
        publicClient.readContract({
          address: args.address,
          abi: args.abi as Abi,
          functionName: args.functionName,
          args: args.args ?? [],
        } as ReadContractParameters),
      verifyTypedData: (args) =>
        publicClient.verifyTypedData(args as unknown as VerifyTypedDataParameters),
      writeContract: (args) =>
        queue.submit((nonce) =>
          walletClient.writeContract({
            address: args.address,
            abi: args.abi as Abi,
            functionName: args.functionName,
            args: args.args,
            gas: args.gas,
            dataSuffix: args.dataSuffix,
            nonce,
          } as WriteContractParameters),
        ),
      sendTransaction: (args) =>
        queue.submit((nonce) =>
          walletClient.sendTransaction({ to: args.to, data: args.data, nonce }),
        ),
      waitForTransactionReceipt: (args) => publicClient.waitForTransactionReceipt(args),
      getCode: (args) => publicClient.getCode(args),
    },
    { confirmationTimeoutMs: opts.confirmationTimeoutMs ?? 120_000 },
  );

  // x402 v2 and v1 (docs/contract.md §7.1) for this chain only: register() and registerV1()
  // rather than registerExactEvmScheme(), which would register v1 for every EVM network known.
  const v1Names = v1NetworkNames(chainId);
  const facilitator = new x402Facilitator().register(networks, new ExactEvmScheme(signer));
  if (v1Names.length > 0) {
    facilitator.registerV1(v1Names as Network[], new ExactEvmSchemeV1(signer));
  }
  const caip = `eip155:${chainId}` as Network;
  const networksV1 = new Map(v1Names.map((name) => [name, caip]));
  return {
    facilitator,
    address: account.address,
    chainId,
    networks,
    networksV1,
    rpcUrl: opts.rpcUrl,
  };
}
