import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { availableParallelism } from "node:os";
import { resolve } from "node:path";
import ipaddr from "ipaddr.js";
// zod's tree-shakable build: `scan` reads its settings here, and full zod costs it ≈ 25 ms at
// start (docs/benchmarks-history.md, "Start-up").
import * as z from "zod/mini";
import { ConfigError } from "./config-error.js";
import { NETWORK_IDS, USDC_DECIMALS, type NetworkName } from "./networks.js";

/**
 * All environment in one typed, validated place (docs/contract.md §6.1): the service's, and the
 * stand-alone facilitator's FACILITATOR_* (docs/facilitator.md). A bad value stops the process
 * at start with one line naming the variable (§6.2). Imports nothing of the layers above.
 */

export { ConfigError };
export { NETWORK_IDS, TEST_NETWORKS } from "./networks.js";

type Env = Record<string, string | undefined>;

/** Longest bad value quoted back in an error line; the rest is cut (one short line). */
const MAX_QUOTED = 40;

/** A bad value as an error line quotes it: JSON-escaped (no control characters), cut short. */
function quoted(raw: string): string {
  return JSON.stringify(raw.length > MAX_QUOTED ? `${raw.slice(0, MAX_QUOTED)}…` : raw);
}

/**
 * One variable through its schema; unset or blank means `fallback`. The error names the
 * variable, says what is expected and quotes the bad value, except a secret's, never echoed.
 */
function read<T>(
  env: Env,
  name: string,
  schema: z.ZodMiniType<T>,
  fallback: string,
  { secret = false } = {},
): T {
  const raw = env[name]?.trim();
  const parsed = schema.safeParse(raw === undefined || raw === "" ? fallback : raw);
  if (!parsed.success) {
    const why = parsed.error.issues[0]?.message ?? "is invalid";
    const got = raw && !secret ? ` (got ${quoted(raw)})` : "";
    throw new ConfigError(name, `${why}${got}`);
  }
  return parsed.data;
}

/** A variable without a default: blank is "must be set (what it is)". */
const required = (what: string) => z.string().check(z.minLength(1, `must be set (${what})`));

const int = (min: number, max: number, what: string) =>
  z.coerce
    .number({ message: `must be ${what}` })
    .check(
      z.int(`must be ${what}`),
      z.minimum(min, `must be ${what}`),
      z.maximum(max, `must be ${what}`),
    );

const port = int(1, 65535, "a TCP port (1-65535)");
/** A port to listen on; 0 picks a free one. */
const listenPort = int(0, 65535, "a TCP port (0-65535)");

/** An on/off setting: 1/true/yes/on or 0/false/no/off, any case. */
const flag = z.pipe(
  z.pipe(
    z.string(),
    z.transform((s: string) => s.toLowerCase()),
  ),
  z.pipe(
    z.enum(["1", "true", "yes", "on", "0", "false", "no", "off"], {
      message: "must be 1 (on) or 0 (off); also true/false, yes/no, on/off",
    }),
    z.transform((s) => ["1", "true", "yes", "on"].includes(s)),
  ),
);

const httpUrl = z.url({ protocol: /^https?$/, message: "must be an http(s) URL" });

/**
 * The service's public base URL (PUBLIC_URL): absolute http(s), no credentials, query or
 * fragment, since paths are appended to it; kept without a trailing slash.
 */
const publicUrl = z.pipe(
  z
    .pipe(
      z
        .string()
        .check(z.refine((s) => s === "" || URL.canParse(s), "must be an absolute http(s) URL")),
      z.transform((s: string) => (s === "" ? undefined : new URL(s))),
    )
    .check(
      z.refine(
        (u) => u === undefined || u.protocol === "https:" || u.protocol === "http:",
        "must be an absolute http(s) URL",
      ),
      z.refine(
        (u) => u === undefined || (!u.search && !u.hash && !hasQueryFragmentOrCredentials(u)),
        { message: "must have no query, fragment or credentials (paths are appended to it)" },
      ),
    ),
  z.transform((u: URL | undefined) =>
    u === undefined ? undefined : `${u.origin}${u.pathname.replace(/\/+$/, "")}`,
  ),
);

/** How the operator is reached (OPERATOR_CONTACT), as OpenAPI's `info.contact` states it. */
export type OperatorContact = { email: string } | { url: string };

/**
 * OPERATOR_CONTACT: an e-mail address or an absolute http(s) URL where the operator is reached
 * about outages, prices or schemas; blank is unset.
 */
const operatorContact = z.pipe(
  z
    .string()
    .check(
      z.refine(
        (s) =>
          s === "" ||
          /^[^\s@/:]+@[^\s@/:]+\.[^\s@/:]+$/.test(s) ||
          (URL.canParse(s) && /^https?:$/.test(new URL(s).protocol)),
        "must be an e-mail address or an absolute http(s) URL",
      ),
    ),
  z.transform((s: string): OperatorContact | undefined =>
    s === "" ? undefined : s.includes("://") ? { url: s } : { email: s },
  ),
);

/** REDIS_URL: `redis://` or `rediss://` (TLS), as ioredis reads it; blank is unset. */
const redisUrl = z.pipe(
  z
    .string()
    .check(
      z.refine(
        (s) => s === "" || (URL.canParse(s) && /^rediss?:$/.test(new URL(s).protocol)),
        "must be a redis:// or rediss:// URL",
      ),
    ),
  z.transform((s: string) => (s === "" ? undefined : s)),
);

/**
 * DATA_DIR: the embedded payment store's directory, made absolute against the working directory
 * at start, so a later chdir cannot move it. Whether it can be created and locked is learnt when
 * the store opens (src/store/embedded.ts), which names DATA_DIR in its one line too.
 */
const dataDir = z.pipe(
  z
    .string()
    .check(z.refine((s) => !s.includes("\0"), "must be a directory path (no NUL character)")),
  z.transform((s: string) => resolve(s)),
);

/** A URL with a `?`, `#` or credentials, even empty ones (`new URL` drops an empty `?`). */
function hasQueryFragmentOrCredentials(u: URL): boolean {
  return u.username !== "" || u.password !== "" || /[?#]/.test(u.href);
}

const list = (item: (s: string) => boolean, what: string) =>
  z
    .pipe(
      z.string(),
      z.transform((s: string) =>
        s
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean),
      ),
    )
    .check(z.refine((xs) => xs.every(item), `must be a comma-separated list of ${what}`));

function isCidr(s: string): boolean {
  try {
    ipaddr.parseCIDR(s);
    return true;
  } catch {
    return false;
  }
}

/** `ip` or `ip:port` or `[v6]:port`, the forms node:dns Resolver#setServers accepts. */
function isDnsServer(s: string): boolean {
  const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(s) ?? /^([^:]+)(?::(\d{1,5}))?$/.exec(s);
  const host = m ? m[1] : s; // a bare IPv6 address has no port
  const p = m ? m[2] : undefined;
  if (!host || !ipaddr.isValid(host)) return false;
  return p === undefined || (Number(p) >= 1 && Number(p) <= 65535);
}

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
  devnetRpcPort: number;
  devnetFacilitatorPort: number;
}

export interface Config {
  port: number;
  host: string;
  /**
   * PUBLIC_URL without a trailing slash: the base of the paid resource's URL in the challenges,
   * and the OpenAPI `servers` entry. Unset: each request's own URL.
   */
  publicUrl: string | undefined;
  /** OPERATOR_CONTACT: how the operator is reached, OpenAPI's `info.contact`. Unset: none. */
  operatorContact: OperatorContact | undefined;
  /**
   * REDIS_URL: where the state several instances share lives (proof claims, paid records, rate
   * counters; docs/operations.md). Unset: in this process's memory.
   */
  redisUrl: string | undefined;
  /**
   * DATA_DIR, absolute: where the embedded store keeps payment records when REDIS_URL is unset
   * (docs/operations.md, "Where payment records live"). One process per directory.
   */
  dataDir: string;
  snapshot: SnapshotConfig;
  payment: PaymentConfig;
  ops: OpsConfig;
  telemetry: TelemetryConfig;
}

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

export function loadOpsConfig(env: Env = process.env): OpsConfig {
  return {
    rateLimitPerMinute: read(
      env,
      "RATE_LIMIT_PER_MINUTE",
      int(1, 1_000_000, "a whole number from 1 to 1000000"),
      "600",
    ),
    trustedProxies: readTrustedProxies(env),
    snapshotMaxConcurrency: read(
      env,
      "SNAPSHOT_MAX_CONCURRENCY",
      int(1, 100_000, "a whole number from 1 to 100000"),
      String(defaultSnapshotConcurrency()),
    ),
    shutdownGraceMs: read(
      env,
      "SHUTDOWN_GRACE_MS",
      int(0, 120_000, "milliseconds between 0 and 120000"),
      "2000",
    ),
  };
}

/**
 * TRUSTED_PROXIES, and TRUST_PROXY refused unless 0: its hop count believed X-Forwarded-For from
 * any peer, so a client reaching an instance directly chose its own rate-limit key
 * (docs/operations.md, "Rate limits"). A start that still sets it stops and says what replaces it.
 */
function readTrustedProxies(env: Env): readonly string[] {
  const old = env.TRUST_PROXY?.trim();
  if (old !== undefined && old !== "" && old !== "0") {
    throw new ConfigError(
      "TRUST_PROXY",
      `is replaced by TRUSTED_PROXIES, the proxies' CIDRs, e.g. 10.0.0.0/8 (got ${JSON.stringify(old)})`,
    );
  }
  return read(
    env,
    "TRUSTED_PROXIES",
    list(isCidrOrAddress, "CIDRs or addresses (e.g. 10.0.0.0/8, 192.0.2.7)"),
    "",
  );
}

function isCidrOrAddress(s: string): boolean {
  return s.includes("/") ? isCidr(s) : ipaddr.isValid(s);
}

/** pino's levels; `silent` logs nothing. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Metrics and logs (docs/operations.md). */
export interface TelemetryConfig {
  /** METRICS_PORT: the metrics listener's port (0 picks a free one); undefined: `off`, none. */
  metricsPort: number | undefined;
  /** METRICS_HOST: where the metrics listener binds; default 127.0.0.1, never public by default. */
  metricsHost: string;
  logLevel: LogLevel;
}

const METRICS_PORT_EXPECTED = 'must be a TCP port (1-65535), 0 for a free one, or "off"';

/** METRICS_PORT: `off` (no metrics listener) or a port to listen on. */
const metricsPort = z.union(
  [
    z.pipe(
      z.literal("off"),
      z.transform(() => undefined),
    ),
    int(0, 65535, METRICS_PORT_EXPECTED.slice("must be ".length)),
  ],
  { message: METRICS_PORT_EXPECTED },
);

export function loadTelemetryConfig(env: Env = process.env): TelemetryConfig {
  return {
    metricsPort: read(env, "METRICS_PORT", metricsPort, "9464"),
    // Any name or address: one that cannot be bound stops the start at listen, naming METRICS_HOST.
    metricsHost: read(env, "METRICS_HOST", z.string(), "127.0.0.1"),
    logLevel: read(
      env,
      "LOG_LEVEL",
      z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(", ")}` }),
      "info",
    ),
  };
}

/** Price of one live snapshot when X402_PRICE_USDC is unset. */
export const DEFAULT_PRICE_USDC = "0.05";

export function loadSnapshotConfig(env: Env = process.env): SnapshotConfig {
  return {
    timeoutMs: read(
      env,
      "SNAPSHOT_TIMEOUT_MS",
      int(100, 600_000, "milliseconds between 100 and 600000"),
      "10000",
    ),
    maxRedirects: read(
      env,
      "SNAPSHOT_MAX_REDIRECTS",
      int(0, 50, "a whole number from 0 to 50"),
      "10",
    ),
    allowedPorts: new Set(
      read(
        env,
        "SNAPSHOT_ALLOWED_PORTS",
        list((p) => /^\d{1,5}$/.test(p) && Number(p) >= 1 && Number(p) <= 65535, "TCP ports"),
        "80,443,8080,8443",
      ).map(Number),
    ),
    allowCidrs: read(env, "SNAPSHOT_ALLOW_CIDRS", list(isCidr, "CIDRs (e.g. 127.0.0.0/8)"), ""),
    allowLocal: read(env, "SNAPSHOT_ALLOW_LOCAL", flag, "0"),
    dnsServers: read(env, "SNAPSHOT_DNS_SERVERS", list(isDnsServer, "ip[:port] DNS servers"), ""),
    // At least 1: the main request is always sent. The ceilings keep one call from becoming
    // an amplifier however the operator sets them.
    maxRequests: read(
      env,
      "SNAPSHOT_MAX_REQUESTS",
      int(1, 1000, "a whole number from 1 to 1000"),
      String(DEFAULT_SNAPSHOT_CAPS.maxRequests),
    ),
    maxNames: read(
      env,
      "SNAPSHOT_MAX_NAMES",
      int(1, 1000, "a whole number from 1 to 1000"),
      String(DEFAULT_SNAPSHOT_CAPS.maxNames),
    ),
  };
}

/** CDP's facilitator, as `@coinbase/x402` configures it. */
export const CDP_FACILITATOR_URL = "https://api.cdp.coinbase.com/platform/v2/x402";

export interface CdpApiKey {
  /** The key's id (CDP_API_KEY_ID), sent as `kid` and `sub`. */
  apiKeyId: string;
  /** CDP_API_KEY_SECRET: an EC P-256 PEM key, or base64 of a 64-byte Ed25519 seed + public key. */
  apiKeySecret: string;
}

export interface CdpSigningKey {
  alg: "ES256" | "EdDSA";
  key: KeyObject;
}

/**
 * The signing key in a CDP API key secret, in either format CDP issues. Throws an Error whose
 * message says what is wrong without echoing the secret.
 */
export function parseCdpApiKeySecret(secret: string): CdpSigningKey {
  const trimmed = secret.trim();
  if (trimmed.includes("-----BEGIN")) {
    // A PEM pasted into a one-line env var often arrives with literal "\n" (as in CDP's JSON key file).
    const pem = trimmed.replace(/\\n/g, "\n");
    let key: KeyObject;
    try {
      key = createPrivateKey(pem); // node reads both SEC1 ("EC PRIVATE KEY") and PKCS#8
    } catch {
      throw new Error("is a PEM block but not a readable private key");
    }
    if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
      throw new Error("is a PEM key but not an EC P-256 private key (CDP signs with ES256)");
    }
    return { alg: "ES256", key };
  }
  // Strict base64: Buffer.from(_, "base64") silently skips junk, which would hide a bad paste.
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, "base64") : undefined;
  if (bytes?.length !== 64) {
    throw new Error(
      "must be an EC P-256 PEM private key or base64 of a 64-byte Ed25519 key (as CDP issues them)",
    );
  }
  const d = bytes.subarray(0, 32).toString("base64url");
  const x = bytes.subarray(32).toString("base64url");
  const key = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d, x }, format: "jwk" });
  // The second half is the public key of the first: a mismatch means a damaged or mixed-up
  // secret, which would otherwise only show up as 401s from CDP.
  if (createPublicKey(key).export({ format: "jwk" }).x !== x) {
    throw new Error("is 64 bytes but its public half does not match its private half");
  }
  return { alg: "EdDSA", key };
}

/** CDP_API_KEY_ID + CDP_API_KEY_SECRET (the names @coinbase/x402 reads): both or neither. */
function readCdpApiKey(env: Env): CdpApiKey | undefined {
  const apiKeyId = env.CDP_API_KEY_ID?.trim() || undefined;
  const apiKeySecret = env.CDP_API_KEY_SECRET?.trim() || undefined;
  if (!apiKeyId && !apiKeySecret) return undefined;
  if (!apiKeyId)
    throw new ConfigError("CDP_API_KEY_ID", "must be set when CDP_API_KEY_SECRET is set");
  if (!apiKeySecret) {
    throw new ConfigError("CDP_API_KEY_SECRET", "must be set when CDP_API_KEY_ID is set");
  }
  try {
    parseCdpApiKeySecret(apiKeySecret); // checked here so a bad key stops the start, not each call
  } catch (err) {
    // The message never contains the secret itself.
    throw new ConfigError("CDP_API_KEY_SECRET", (err as Error).message);
  }
  return { apiKeyId, apiKeySecret };
}

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

/** Optional RPC URL per network: X402_RPC_URL_ + the network name in capitals, `-` as `_`. */
function readRpcUrls(env: Env): Partial<Record<NetworkName, string>> {
  const urls: Partial<Record<NetworkName, string>> = {};
  for (const name of Object.keys(NETWORK_IDS) as NetworkName[]) {
    const variable = `X402_RPC_URL_${name.toUpperCase().replace(/-/g, "_")}`;
    if (env[variable]?.trim()) urls[name] = read(env, variable, httpUrl, "");
  }
  return urls;
}

export function loadPaymentConfig(env: Env = process.env): PaymentConfig {
  const payTo = read(env, "X402_PAY_TO", payToAddress, "");
  // Production sells for real USDC unless a test network is named; devnet mode offers its own.
  const networks = read(
    env,
    "X402_NETWORKS",
    list((n) => n in NETWORK_IDS, `networks (${Object.keys(NETWORK_IDS).join(", ")})`),
    payTo ? "base" : "base-sepolia",
  ) as NetworkName[];
  if (networks.length === 0)
    throw new ConfigError("X402_NETWORKS", "must name at least one network");
  if (new Set(networks).size !== networks.length) {
    throw new ConfigError(
      "X402_NETWORKS",
      `names a network twice (got ${JSON.stringify(networks.join(","))})`,
    );
  }
  const cdpApiKey = readCdpApiKey(env);
  // With a CDP key and no URL, the facilitator is CDP's (as @coinbase/x402 configures it).
  const facilitatorUrl =
    env.X402_FACILITATOR_URL?.trim() || (cdpApiKey ? CDP_FACILITATOR_URL : undefined);
  if (env.X402_FACILITATOR_URL?.trim()) {
    read(env, "X402_FACILITATOR_URL", httpUrl, "");
  }
  const authHeader = env.X402_FACILITATOR_AUTH_HEADER?.trim();
  const authMatch = authHeader
    ? /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):\s*(\S.*)$/.exec(authHeader)
    : null;
  if (authHeader && !authMatch) {
    throw new ConfigError(
      "X402_FACILITATOR_AUTH_HEADER",
      'must be "Header-Name: value", e.g. "Authorization: Bearer <token>"',
    );
  }
  if (authHeader && cdpApiKey) {
    throw new ConfigError(
      "X402_FACILITATOR_AUTH_HEADER",
      "must not be set together with CDP_API_KEY_ID/CDP_API_KEY_SECRET (the CDP key signs its own Authorization header)",
    );
  }
  if (payTo && !facilitatorUrl) {
    throw new ConfigError("X402_FACILITATOR_URL", "must be set when X402_PAY_TO is set");
  }
  return {
    payTo,
    networks,
    facilitatorUrl,
    ...(authMatch?.[1] && authMatch[2] && { facilitatorHeaders: { [authMatch[1]]: authMatch[2] } }),
    ...(cdpApiKey && { cdpApiKey }),
    priceUsdc: read(
      env,
      "X402_PRICE_USDC",
      z.string().check(
        z.regex(
          new RegExp(`^\\d+(\\.\\d{1,${USDC_DECIMALS}})?$`),
          `must be a decimal USDC amount with at most ${USDC_DECIMALS} decimals`,
        ),
        z.refine((s) => Number(s) > 0, "must be greater than 0"),
      ),
      DEFAULT_PRICE_USDC,
    ),
    proofReleases: read(
      env,
      "SNAPSHOT_PROOF_RELEASES",
      int(0, 100, "a whole number from 0 to 100"),
      "3",
    ),
    refusedPerPayerPerMinute: read(
      env,
      "SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE",
      int(1, 1_000_000, "a whole number from 1 to 1000000"),
      "60",
    ),
    rpcUrls: readRpcUrls(env),
    paidRecordTtlSeconds: read(
      env,
      "X402_IDEMPOTENCY_TTL_SECONDS",
      int(3600, 30 * 24 * 3600, "a whole number of seconds from 3600 (1 h) to 2592000 (30 days)"),
      "3600",
    ),
    devnetRpcPort: read(env, "DEVNET_RPC_PORT", port, "8545"),
    devnetFacilitatorPort: read(env, "DEVNET_FACILITATOR_PORT", port, "4022"),
  };
}

export function loadConfig(env: Env = process.env): Config {
  const port = read(env, "PORT", int(0, 65535, "a TCP port (1-65535), 0 for a free one"), "8080");
  const telemetry = loadTelemetryConfig(env);
  // Metrics are for the operator only: never on the public listener.
  if (
    telemetry.metricsPort !== undefined &&
    telemetry.metricsPort !== 0 &&
    telemetry.metricsPort === port
  ) {
    throw new ConfigError("METRICS_PORT", `must differ from PORT (got ${port} for both)`);
  }
  const snapshot = loadSnapshotConfig(env);
  const payment = loadPaymentConfig(env);
  // Local targets are for development: a production service (real money, reachable by others)
  // that fetched its own network for anyone paying would be an SSRF hole (docs/security.md).
  if (snapshot.allowLocal && payment.payTo !== undefined) {
    throw new ConfigError(
      "SNAPSHOT_ALLOW_LOCAL",
      "(serve --allow-local) is for development: it needs devnet mode, so unset X402_PAY_TO or drop it",
    );
  }
  return {
    port,
    host: readHost(env, { devnet: payment.payTo === undefined, local: snapshot.allowLocal }),
    publicUrl: read(env, "PUBLIC_URL", publicUrl, ""),
    operatorContact: read(env, "OPERATOR_CONTACT", operatorContact, ""),
    // May carry a password: never echoed in an error.
    redisUrl: read(env, "REDIS_URL", redisUrl, "", { secret: true }),
    dataDir: read(env, "DATA_DIR", dataDir, "./.secsnap"),
    snapshot,
    payment,
    ops: loadOpsConfig(env),
    telemetry,
  };
}

/**
 * HOST (docs/contract.md §6.1): every address in production mode; loopback in devnet and local
 * mode, whose service pays from a public devnet key and, in local mode, fetches this machine's
 * own network for whoever asks (docs/security.md, "Devnet and local mode"). Devnet mode listens
 * elsewhere when HOST says so; local mode refuses any address but loopback. Otherwise any name
 * or address: one that cannot be bound stops the start at listen, naming HOST.
 */
function readHost(env: Env, mode: { devnet: boolean; local: boolean }): string {
  const host = read(env, "HOST", z.string(), mode.devnet ? "127.0.0.1" : "0.0.0.0");
  if (mode.local && !isLoopbackHost(host)) {
    throw new ConfigError(
      "HOST",
      "must be a loopback address (127.0.0.1, ::1 or localhost) in local mode (SNAPSHOT_ALLOW_LOCAL, " +
        `serve --allow-local): it fetches this machine's network for whoever reaches it (got ${quoted(host)})`,
    );
  }
  return host;
}

/** `localhost`, or an address in 127.0.0.0/8 or ::1 (IPv4-mapped included). */
function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === "localhost") return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === "loopback";
}

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

const authToken = z
  .string()
  .check(
    z.refine(
      (token) => token === "" || (token.length >= 16 && !/\s/.test(token)),
      "must be at least 16 characters without spaces",
    ),
  );

export function loadFacilitatorConfig(env: Env = process.env): FacilitatorConfig {
  return {
    rpcUrl: read(
      env,
      "FACILITATOR_RPC_URL",
      z.pipe(required("JSON-RPC URL of the chain"), httpUrl),
      "",
    ),
    privateKey: read(env, "FACILITATOR_PRIVATE_KEY", evmPrivateKey, "", { secret: true }),
    networks: env.FACILITATOR_NETWORKS?.trim()
      ? read(env, "FACILITATOR_NETWORKS", facilitatorNetworks, "")
      : undefined,
    host: read(env, "FACILITATOR_HOST", z.string(), "127.0.0.1"),
    port: read(env, "FACILITATOR_PORT", listenPort, "4022"),
    authToken: read(env, "FACILITATOR_AUTH_TOKEN", authToken, "", { secret: true }) || undefined,
  };
}
