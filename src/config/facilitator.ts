import * as z from "zod/mini";
import { NETWORK_IDS, type NetworkName } from "../networks.js";
import { host, httpUrl, listenPort, readTable, required, type Env, type Table } from "./read.js";

/** Environment of the stand-alone facilitator, `secsnap facilitator` (docs/facilitator.md). */
export interface FacilitatorConfig {
  /** JSON-RPC URL of the chain it settles on (FACILITATOR_RPC_URL). */
  rpcUrl: string;
  /** The gas-paying hot key (FACILITATOR_PRIVATE_KEY); 0x is added when missing. */
  privateKey: `0x${string}`;
  /** CAIP-2 ids, all of one chain; undefined: the RPC's own chain. */
  networks: string[] | undefined;
  /** Default 127.0.0.1: private unless asked otherwise. */
  host: string;
  port: number;
  /** When set, /verify and /settle need `Authorization: Bearer <authToken>`. */
  authToken: string | undefined;
}

const evmPrivateKey = z.pipe(
  z.pipe(
    z.pipe(
      required("gas-paying key"),
      z.transform((key: string) => (key.startsWith("0x") ? key : `0x${key}`)),
    ),
    z
      .string()
      .check(z.regex(/^0x[0-9a-fA-F]{64}$/, "must be 32 bytes of hex (0x + 64 hex digits)")),
  ),
  z.transform((key: string) => key as `0x${string}`),
);

/** Network names or eip155 ids, as CAIP-2 ids; one facilitator settles on one chain. */
const facilitatorNetworks = z.pipe(
  z
    .pipe(
      z.string(),
      z.transform((s: string) =>
        s
          .split(",")
          .map((n) => n.trim())
          .filter(Boolean)
          .map((n) => (n in NETWORK_IDS ? NETWORK_IDS[n as NetworkName] : n)),
      ),
    )
    .check(
      z.refine(
        (ids) => ids.length > 0 && ids.every((id) => /^eip155:\d{1,15}$/.test(id)),
        "must list base, base-sepolia or eip155:<chain id>",
      ),
      z.refine(
        (ids) => new Set(ids).size === 1,
        "must all be the chain of FACILITATOR_RPC_URL (run one facilitator per chain)",
      ),
    ),
  z.transform((ids: string[]) => [...new Set(ids)]),
);

/** Blank is none; otherwise long enough not to be guessed. */
const authToken = z.pipe(
  z
    .string()
    .check(
      z.refine(
        (token) => token === "" || (token.length >= 16 && !/\s/.test(token)),
        "must be at least 16 characters without spaces",
      ),
    ),
  z.transform((token: string) => token || undefined),
);

const FACILITATOR: Table<FacilitatorConfig> = {
  rpcUrl: {
    name: "FACILITATOR_RPC_URL",
    fallback: "",
    schema: z.pipe(required("JSON-RPC URL of the chain"), httpUrl),
    meaning: "JSON-RPC URL of the chain it settles on",
  },
  privateKey: {
    name: "FACILITATOR_PRIVATE_KEY",
    fallback: "",
    schema: evmPrivateKey,
    meaning: "the gas-paying hot key",
    secret: true,
  },
  networks: {
    name: "FACILITATOR_NETWORKS",
    fallback: "",
    schema: facilitatorNetworks,
    meaning: "the networks it settles on; unset: the RPC's own chain",
    optional: true,
  },
  host: {
    name: "FACILITATOR_HOST",
    fallback: "127.0.0.1",
    schema: host,
    meaning: "where it listens",
  },
  port: {
    name: "FACILITATOR_PORT",
    fallback: "4022",
    schema: listenPort,
    meaning: "its port; 0 picks a free one",
  },
  authToken: {
    name: "FACILITATOR_AUTH_TOKEN",
    fallback: "",
    schema: authToken,
    meaning: "the bearer token /verify and /settle need",
    secret: true,
  },
};

export function loadFacilitatorConfig(env: Env = process.env): FacilitatorConfig {
  return readTable(env, FACILITATOR);
}
