/**
 * The networks the service sells on and USDC on each (docs/contract.md §7.1): the one place
 * their names, ids, token address, decimals and EIP-712 domain are written. The devnet poses as
 * Base Sepolia, so these are its facts too. Imports nothing.
 */

/** USDC's decimals, on every network: "0.05" USDC is 50000 units. */
export const USDC_DECIMALS = 6;

/** What the service knows of one network. */
interface NetworkFacts {
  /** The name X402_NETWORKS and x402 v1 use (`base-sepolia`). */
  name: string;
  /** The CAIP-2 id x402 v2 uses: `eip155:` and the chain id. */
  id: `eip155:${number}`;
  chainId: number;
  /** Base's documented public JSON-RPC endpoint, for `secsnap pay` without `--rpc`. */
  publicRpcUrl: string;
  /** Its USDC is worth nothing: offered in production only when X402_NETWORKS names it. */
  test: boolean;
  usdc: {
    address: `0x${string}`;
    decimals: typeof USDC_DECIMALS;
    /** The EIP-712 domain (name, version) a payer signs over, as the token states it. */
    domain: { name: string; version: string };
  };
}

export const NETWORKS = {
  base: {
    name: "base",
    id: "eip155:8453",
    chainId: 8453,
    publicRpcUrl: "https://mainnet.base.org",
    test: false,
    usdc: {
      address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
      decimals: USDC_DECIMALS,
      domain: { name: "USD Coin", version: "2" },
    },
  },
  "base-sepolia": {
    name: "base-sepolia",
    id: "eip155:84532",
    chainId: 84532,
    publicRpcUrl: "https://sepolia.base.org",
    test: true,
    usdc: {
      address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      decimals: USDC_DECIMALS,
      domain: { name: "USDC", version: "2" },
    },
  },
} as const satisfies Record<string, NetworkFacts>;

export type NetworkName = keyof typeof NETWORKS;

const ALL: readonly NetworkFacts[] = Object.values(NETWORKS);

/** Each network's CAIP-2 id by name. */
export const NETWORK_IDS = {
  base: NETWORKS.base.id,
  "base-sepolia": NETWORKS["base-sepolia"].id,
} as const;

/** Networks whose USDC is worth nothing: offered in production only when X402_NETWORKS names them. */
export const TEST_NETWORKS: ReadonlySet<string> = new Set(
  ALL.filter((n) => n.test).map((n) => n.name),
);

/** The network with this CAIP-2 id, if the service knows it. */
export function networkById(id: string): NetworkFacts | undefined {
  return ALL.find((n) => n.id === id);
}
