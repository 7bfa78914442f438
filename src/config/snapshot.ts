import ipaddr from "ipaddr.js";
import * as z from "zod/mini";
import { flag, int, isCidr, list, readTable, type Env, type Table } from "./read.js";

/** What one snapshot may do (docs/contract.md §4.1, §6.1). */
export interface SnapshotConfig {
  timeoutMs: number;
  maxRedirects: number;
  allowedPorts: ReadonlySet<number>;
  /** CIDRs treated as public (tests and private deployments only). */
  allowCidrs: readonly string[];
  /**
   * Local mode (SNAPSHOT_ALLOW_LOCAL; `scan --local`, `serve --allow-local`): loopback, RFC 1918
   * and unique-local targets on any port, for development. Metadata stays blocked.
   */
  allowLocal: boolean;
  /** `ip[:port]` servers for target names; empty means the system resolver. */
  dnsServers: readonly string[];
  /** HTTP requests one snapshot may send, every probe and redirect included (docs/contract.md §4.1). */
  maxRequests: number;
  /** Distinct host names one snapshot may resolve (docs/contract.md §4.1). */
  maxNames: number;
}

/** SNAPSHOT_MAX_REQUESTS and SNAPSHOT_MAX_NAMES by default (docs/contract.md §4.1). */
export const DEFAULT_SNAPSHOT_CAPS = { maxRequests: 32, maxNames: 16 } as const;

/** `ip` or `ip:port` or `[v6]:port`, the forms node:dns Resolver#setServers accepts. */
function isDnsServer(s: string): boolean {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(s) ?? /^([^:]+)(?::(\d{1,5}))?$/.exec(s);
  const host = m ? m[1] : s; // a bare IPv6 address has no port
  const p = m ? m[2] : undefined;
  if (!host || !ipaddr.isValid(host)) return false;
  return p === undefined || (Number(p) >= 1 && Number(p) <= 65535);
}

const isPort = (p: string) => /^\d{1,5}$/.test(p) && Number(p) >= 1 && Number(p) <= 65535;

const SNAPSHOT: Table<SnapshotConfig> = {
  timeoutMs: {
    name: "SNAPSHOT_TIMEOUT_MS",
    fallback: "10000",
    schema: int(100, 600_000, "milliseconds between 100 and 600000"),
    meaning: "deadline of one snapshot",
  },
  maxRedirects: {
    name: "SNAPSHOT_MAX_REDIRECTS",
    fallback: "10",
    schema: int(0, 50, "a whole number from 0 to 50"),
    meaning: "redirects one snapshot follows",
  },
  allowedPorts: {
    name: "SNAPSHOT_ALLOWED_PORTS",
    fallback: "80,443,8080,8443",
    schema: z.pipe(
      list(isPort, "TCP ports"),
      z.transform((ports: string[]) => new Set(ports.map(Number))),
    ),
    meaning: "ports a target URL may name",
  },
  allowCidrs: {
    name: "SNAPSHOT_ALLOW_CIDRS",
    fallback: "",
    schema: list(isCidr, "CIDRs (e.g. 127.0.0.0/8)"),
    meaning: "CIDRs treated as public (tests and private deployments)",
  },
  allowLocal: {
    name: "SNAPSHOT_ALLOW_LOCAL",
    fallback: "0",
    schema: flag,
    meaning: "local mode: loopback and private targets, for development",
  },
  dnsServers: {
    name: "SNAPSHOT_DNS_SERVERS",
    fallback: "",
    schema: list(isDnsServer, "ip[:port] DNS servers"),
    meaning: "DNS servers for target names; empty: the system resolver",
  },
  // At least 1: the main request is always sent. The ceilings keep one call from becoming
  // an amplifier however the operator sets them.
  maxRequests: {
    name: "SNAPSHOT_MAX_REQUESTS",
    fallback: String(DEFAULT_SNAPSHOT_CAPS.maxRequests),
    schema: int(1, 1000, "a whole number from 1 to 1000"),
    meaning: "HTTP requests one snapshot may send",
  },
  maxNames: {
    name: "SNAPSHOT_MAX_NAMES",
    fallback: String(DEFAULT_SNAPSHOT_CAPS.maxNames),
    schema: int(1, 1000, "a whole number from 1 to 1000"),
    meaning: "host names one snapshot may resolve",
  },
};

export function loadSnapshotConfig(env: Env = process.env): SnapshotConfig {
  return readTable(env, SNAPSHOT);
}
