import * as z from "zod/mini";
import { ConfigError } from "../config-error.js";
import { NETWORK_IDS, USDC_DECIMALS, type NetworkName } from "../networks.js";
import { CDP_FACILITATOR_URL, readCdpApiKey, type CdpApiKey } from "./cdp.js";
import {
  httpUrl,
  int,
  list,
  port,
  read,
  readTable,
  type Env,
  type Table,
  type Variable,
} from "./read.js";

/** Where payments go and on what terms (docs/contract.md §6.1, docs/payment.md). */
export interface PaymentConfig {
  /** Unset means devnet mode: the embedded local payment network. */
  payTo: `0x${string}` | undefined;
  networks: readonly NetworkName[];
  facilitatorUrl: string | undefined;
  /** Extra header for a hosted facilitator that needs auth (X402_FACILITATOR_AUTH_HEADER). */
  facilitatorHeaders?: Record<string, string>;
  /** Coinbase CDP API key (CDP_API_KEY_ID + CDP_API_KEY_SECRET): a signed JWT per facilitator call. */
  cdpApiKey?: CdpApiKey;
  /** Decimal USDC string, e.g. "0.05". */
  priceUsdc: string;
  /** Times one proof may be released after an unpaid snapshot before it is refused (402). */
  proofReleases: number;
  /** Unpaid snapshots one payer may cause per minute before a 429. */
  refusedPerPayerPerMinute: number;
  /**
   * JSON-RPC URL per network (X402_RPC_URL_BASE, X402_RPC_URL_BASE_SEPOLIA), to read on chain
   * whether a payment whose settlement had no known outcome was made.
   */
  rpcUrls: Partial<Record<NetworkName, string>>;
  /** How long kept paid answers and unsettled reports live (X402_IDEMPOTENCY_TTL_SECONDS). */
  paidRecordTtlSeconds: number;
  /** Days a paid report is kept for GET /v1/snapshots/{id} (SNAPSHOT_RETENTION_DAYS); 0: none. */
  snapshotRetentionDays: number;
  devnetRpcPort: number;
  devnetFacilitatorPort: number;
}

/** Price of one live snapshot when X402_PRICE_USDC is unset. */
export const DEFAULT_PRICE_USDC = "0.05";

/** Blank (devnet mode) or an address that can be paid. */
const payToAddress = z.pipe(
  z.string().check(
    z.regex(/^(0x[0-9a-fA-F]{40})?$/, "must be a 0x-prefixed 20-byte EVM address"),
    z.refine(
      (a) => !/^0x0{40}$/.test(a),
      "must not be the zero address (nothing can be paid to it)",
    ),
  ),
  z.transform((a: string) => (a ? (a as `0x${string}`) : undefined)),
);

/** `Header-Name: value`, as one header to send. */
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(\S.*)$/;
const authHeader = z.pipe(
  z
    .string()
    .check(
      z.regex(HEADER_LINE, 'must be "Header-Name: value", e.g. "Authorization: Bearer <token>"'),
    ),
  z.transform((s: string): Record<string, string> => {
    const [, name = "", value = ""] = HEADER_LINE.exec(s) ?? [];
    return { [name]: value };
  }),
);

const usdcPrice = z.string().check(
  z.regex(
    new RegExp(`^\\d+(\\.\\d{1,${USDC_DECIMALS}})?$`),
    `must be a decimal USDC amount with at most ${USDC_DECIMALS} decimals`,
  ),
  z.refine((s) => Number(s) > 0, "must be greater than 0"),
);

/** Who is paid, where and through whom: read in this order, as each depends on the last. */
const PAYEE = {
  payTo: {
    name: "X402_PAY_TO",
    fallback: "",
    schema: payToAddress,
    meaning: "the address paid; unset: devnet mode",
  },
  // Production sells for real USDC unless a test network is named; devnet mode offers its own.
  networks: {
    name: "X402_NETWORKS",
    fallback: "base",
    schema: list((n) => n in NETWORK_IDS, `networks (${Object.keys(NETWORK_IDS).join(", ")})`),
    meaning: "the networks offered; default base, base-sepolia in devnet mode",
  },
  facilitatorUrl: {
    name: "X402_FACILITATOR_URL",
    fallback: "",
    schema: httpUrl,
    meaning: "the facilitator that verifies and settles; CDP's with a CDP key",
    optional: true,
  },
  facilitatorHeaders: {
    name: "X402_FACILITATOR_AUTH_HEADER",
    fallback: "",
    schema: authHeader,
    meaning: "a header sent to a facilitator that needs auth",
    // Carries a token: never echoed in an error.
    secret: true,
    optional: true,
  },
} as const satisfies Record<string, Variable<unknown>>;

/** The terms of a paid call. */
const TERMS: Table<
  Pick<PaymentConfig, "priceUsdc" | "proofReleases" | "refusedPerPayerPerMinute">
> = {
  priceUsdc: {
    name: "X402_PRICE_USDC",
    fallback: DEFAULT_PRICE_USDC,
    schema: usdcPrice,
    meaning: "the price of one live snapshot in USDC",
  },
  proofReleases: {
    name: "SNAPSHOT_PROOF_RELEASES",
    fallback: "3",
    schema: int(0, 100, "a whole number from 0 to 100"),
    meaning: "times one proof is released after an unpaid snapshot",
  },
  refusedPerPayerPerMinute: {
    name: "SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE",
    fallback: "60",
    schema: int(1, 1_000_000, "a whole number from 1 to 1000000"),
    meaning: "unpaid snapshots one payer may cause per minute",
  },
};

/** How long paid records are kept, and the devnet's ports. */
const KEEPING: Table<
  Pick<
    PaymentConfig,
    "paidRecordTtlSeconds" | "snapshotRetentionDays" | "devnetRpcPort" | "devnetFacilitatorPort"
  >
> = {
  paidRecordTtlSeconds: {
    name: "X402_IDEMPOTENCY_TTL_SECONDS",
    fallback: "3600",
    schema: int(
      3600,
      30 * 24 * 3600,
      "a whole number of seconds from 3600 (1 h) to 2592000 (30 days)",
    ),
    meaning: "how long kept paid answers and unsettled reports live",
  },
  snapshotRetentionDays: {
    name: "SNAPSHOT_RETENTION_DAYS",
    fallback: "30",
    schema: int(0, 3650, "a whole number of days from 0 (keep nothing) to 3650"),
    meaning: "how long a paid report can be fetched again by its payer",
  },
  devnetRpcPort: {
    name: "DEVNET_RPC_PORT",
    fallback: "8545",
    schema: port,
    meaning: "the devnet's anvil port",
  },
  devnetFacilitatorPort: {
    name: "DEVNET_FACILITATOR_PORT",
    fallback: "4022",
    schema: port,
    meaning: "the devnet's facilitator port",
  },
};

/** Optional RPC URL per network: X402_RPC_URL_ + the network name in capitals, `-` as `_`. */
const RPC_URLS = (Object.keys(NETWORK_IDS) as NetworkName[]).map((network) => ({
  network,
  variable: {
    name: `X402_RPC_URL_${network.toUpperCase().replace(/-/g, "_")}`,
    fallback: "",
    schema: httpUrl,
    meaning: `a JSON-RPC URL of ${network}, to read an unknown settlement on chain`,
    optional: true,
  } satisfies Variable<string>,
}));

function readRpcUrls(env: Env): Partial<Record<NetworkName, string>> {
  const urls: Partial<Record<NetworkName, string>> = {};
  for (const { network, variable } of RPC_URLS) {
    const url = read(env, variable);
    if (url) urls[network] = url;
  }
  return urls;
}

function readNetworks(env: Env, devnet: boolean): NetworkName[] {
  const networks = read(env, PAYEE.networks, devnet ? "base-sepolia" : "base") as NetworkName[];
  if (networks.length === 0)
    throw new ConfigError("X402_NETWORKS", "must name at least one network");
  if (new Set(networks).size !== networks.length) {
    throw new ConfigError(
      "X402_NETWORKS",
      `names a network twice (got ${JSON.stringify(networks.join(","))})`,
    );
  }
  return networks;
}

/** The facilitator and how it is authorised: a CDP key or one header, never both. */
function readFacilitator(
  env: Env,
): Pick<PaymentConfig, "facilitatorUrl" | "facilitatorHeaders" | "cdpApiKey"> {
  const cdpApiKey = readCdpApiKey(env);
  // With a CDP key and no URL, the facilitator is CDP's (as @coinbase/x402 configures it).
  const facilitatorUrl =
    read(env, PAYEE.facilitatorUrl) ?? (cdpApiKey ? CDP_FACILITATOR_URL : undefined);
  const facilitatorHeaders = read(env, PAYEE.facilitatorHeaders);
  if (facilitatorHeaders && cdpApiKey) {
    throw new ConfigError(
      "X402_FACILITATOR_AUTH_HEADER",
      "must not be set together with CDP_API_KEY_ID/CDP_API_KEY_SECRET (the CDP key signs its own Authorization header)",
    );
  }
  return {
    facilitatorUrl,
    ...(facilitatorHeaders && { facilitatorHeaders }),
    ...(cdpApiKey && { cdpApiKey }),
  };
}

export function loadPaymentConfig(env: Env = process.env): PaymentConfig {
  const payTo = read(env, PAYEE.payTo);
  const networks = readNetworks(env, payTo === undefined);
  const facilitator = readFacilitator(env);
  if (payTo && !facilitator.facilitatorUrl) {
    throw new ConfigError("X402_FACILITATOR_URL", "must be set when X402_PAY_TO is set");
  }
  return {
    payTo,
    networks,
    ...facilitator,
    ...readTable(env, TERMS),
    rpcUrls: readRpcUrls(env),
    ...readTable(env, KEEPING),
  };
}
