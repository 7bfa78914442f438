import { availableParallelism } from "node:os";
import ipaddr from "ipaddr.js";
import { ConfigError } from "../config-error.js";
import { int, isCidr, list, read, readTable, type Env, type Table } from "./read.js";

/** Running under load and in a fleet (docs/operations.md). */
export interface OpsConfig {
  /** Free answers (402, 400, demo, OpenAPI, page) per client IP and minute (RATE_LIMIT_PER_MINUTE). */
  rateLimitPerMinute: number;
  /**
   * TRUSTED_PROXIES: CIDRs (or addresses) of the proxies in front; X-Forwarded-For is believed
   * only from a peer in them. Empty: never.
   */
  trustedProxies: readonly string[];
  /** Paid snapshots in flight per instance before a 503 (SNAPSHOT_MAX_CONCURRENCY). */
  snapshotMaxConcurrency: number;
  /** On SIGTERM, how long /ready says draining before the listener closes (SHUTDOWN_GRACE_MS). */
  shutdownGraceMs: number;
}

/**
 * Snapshots in flight per instance by default, per core: a snapshot mostly waits on the network,
 * so memory and deadlines bound it, not CPU (docs/operations.md, "Back-pressure").
 */
const SNAPSHOTS_PER_CORE = 64;

/** What a machine of this size runs at once by default: SNAPSHOT_MAX_CONCURRENCY's default. */
export function defaultSnapshotConcurrency(): number {
  return availableParallelism() * SNAPSHOTS_PER_CORE;
}

function isCidrOrAddress(s: string): boolean {
  return s.includes("/") ? isCidr(s) : ipaddr.isValid(s);
}

/** The table, made at load: SNAPSHOT_MAX_CONCURRENCY's default depends on the machine. */
function opsTable(): Table<OpsConfig> {
  return {
    rateLimitPerMinute: {
      name: "RATE_LIMIT_PER_MINUTE",
      fallback: "600",
      schema: int(1, 1_000_000, "a whole number from 1 to 1000000"),
      meaning: "free answers per client IP and minute",
    },
    trustedProxies: {
      name: "TRUSTED_PROXIES",
      fallback: "",
      schema: list(isCidrOrAddress, "CIDRs or addresses (e.g. 10.0.0.0/8, 192.0.2.7)"),
      meaning: "the proxies whose X-Forwarded-For is believed",
    },
    snapshotMaxConcurrency: {
      name: "SNAPSHOT_MAX_CONCURRENCY",
      fallback: String(defaultSnapshotConcurrency()),
      schema: int(1, 100_000, "a whole number from 1 to 100000"),
      meaning: "paid snapshots in flight per instance before a 503",
    },
    shutdownGraceMs: {
      name: "SHUTDOWN_GRACE_MS",
      fallback: "2000",
      schema: int(0, 120_000, "milliseconds between 0 and 120000"),
      meaning: "how long the readiness check says draining on SIGTERM",
    },
  };
}

export function loadOpsConfig(env: Env = process.env): OpsConfig {
  const { rateLimitPerMinute, ...rest } = opsTable();
  const limit = read(env, rateLimitPerMinute);
  // In its place before TRUSTED_PROXIES: the variable it names instead.
  refuseTrustProxy(env);
  return { rateLimitPerMinute: limit, ...readTable(env, rest) };
}

/**
 * TRUST_PROXY refused unless 0: its hop count believed X-Forwarded-For from any peer, so a
 * client reaching an instance directly chose its own rate-limit key (docs/operations.md, "Rate
 * limits"). A start that still sets it stops and says what replaces it.
 */
function refuseTrustProxy(env: Env): void {
  const old = env.TRUST_PROXY?.trim();
  if (old !== undefined && old !== "" && old !== "0") {
    throw new ConfigError(
      "TRUST_PROXY",
      `is replaced by TRUSTED_PROXIES, the proxies' CIDRs, e.g. 10.0.0.0/8 (got ${JSON.stringify(old)})`,
    );
  }
}
