import { z } from "zod";
import { ConfigError, NETWORK_IDS } from "../config.js";
import type { Hex } from "viem";

/**
 * Environment of the stand-alone facilitator (`secsnap facilitator`), for operators who run
 * their own x402 facilitator against Base. A bad value stops the start with one line naming
 * the variable (ConfigError, as for the service's own configuration).
 *
 *   FACILITATOR_RPC_URL      required  http(s) JSON-RPC URL of the chain to settle on
 *   FACILITATOR_PRIVATE_KEY  required  0x + 64 hex: the gas-paying hot key
 *   FACILITATOR_NETWORKS     optional  base | base-sepolia | eip155:<id>, comma-separated, all
 *                                      the RPC's chain; default: the RPC's chain id
 *   FACILITATOR_HOST         optional  default 127.0.0.1 (private by default)
 *   FACILITATOR_PORT         optional  default 4022
 *   FACILITATOR_AUTH_TOKEN   optional  when set, /verify and /settle need this bearer token
 */

export interface FacilitatorEnvConfig {
  rpcUrl: string;
  privateKey: Hex;
  /** CAIP-2 ids; undefined = use the RPC's chain id. */
  networks: string[] | undefined;
  host: string;
  port: number;
  authToken: string | undefined;
}

type Env = Record<string, string | undefined>;

function value(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === "" ? undefined : raw;
}

export function loadFacilitatorConfig(env: Env = process.env): FacilitatorEnvConfig {
  const rpcUrl = value(env, "FACILITATOR_RPC_URL");
  if (!rpcUrl)
    throw new ConfigError("FACILITATOR_RPC_URL", "must be set (JSON-RPC URL of the chain)");
  if (!z.url({ protocol: /^https?$/ }).safeParse(rpcUrl).success) {
    throw new ConfigError("FACILITATOR_RPC_URL", "must be an http(s) URL");
  }

  const key = value(env, "FACILITATOR_PRIVATE_KEY");
  if (!key) throw new ConfigError("FACILITATOR_PRIVATE_KEY", "must be set (gas-paying key)");
  const prefixed = key.startsWith("0x") ? key : `0x${key}`;
  // Never echo the value: it is a secret.
  if (!/^0x[0-9a-fA-F]{64}$/.test(prefixed)) {
    throw new ConfigError(
      "FACILITATOR_PRIVATE_KEY",
      "must be 32 bytes of hex (0x + 64 hex digits)",
    );
  }

  let networks: string[] | undefined;
  const rawNetworks = value(env, "FACILITATOR_NETWORKS");
  if (rawNetworks) {
    networks = rawNetworks
      .split(",")
      .map((n) => n.trim())
      .filter(Boolean)
      .map((n) => (n in NETWORK_IDS ? NETWORK_IDS[n as keyof typeof NETWORK_IDS] : n));
    const bad = networks.find((n) => !/^eip155:\d{1,15}$/.test(n));
    if (bad !== undefined || networks.length === 0) {
      throw new ConfigError(
        "FACILITATOR_NETWORKS",
        `must list base, base-sepolia or eip155:<chain id> (got ${JSON.stringify(rawNetworks)})`,
      );
    }
    if (new Set(networks).size > 1) {
      throw new ConfigError(
        "FACILITATOR_NETWORKS",
        "must all be the chain of FACILITATOR_RPC_URL (run one facilitator per chain)",
      );
    }
  }

  const host = value(env, "FACILITATOR_HOST") ?? "127.0.0.1";
  const rawPort = value(env, "FACILITATOR_PORT") ?? "4022";
  const port = Number(rawPort);
  if (!/^\d{1,5}$/.test(rawPort) || port > 65535) {
    throw new ConfigError(
      "FACILITATOR_PORT",
      `must be a TCP port 0-65535 (got ${JSON.stringify(rawPort)})`,
    );
  }

  const authToken = value(env, "FACILITATOR_AUTH_TOKEN");
  if (authToken !== undefined && (authToken.length < 16 || /\s/.test(authToken))) {
    throw new ConfigError(
      "FACILITATOR_AUTH_TOKEN",
      "must be at least 16 characters without spaces",
    );
  }

  return { rpcUrl, privateKey: prefixed as Hex, networks, host, port, authToken };
}
