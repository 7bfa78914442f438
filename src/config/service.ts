import { resolve } from "node:path";
import ipaddr from "ipaddr.js";
import * as z from "zod/mini";
import { ConfigError } from "../config-error.js";
import { loadOpsConfig, type OpsConfig } from "./ops.js";
import { loadPaymentConfig, type PaymentConfig } from "./payment.js";
import { host, int, quoted, read, readTable, type Env, type Table } from "./read.js";
import { loadSigningKey, type SigningKeyJwk } from "./signing.js";
import { loadSnapshotConfig, type SnapshotConfig } from "./snapshot.js";
import { loadTelemetryConfig, type TelemetryConfig } from "./telemetry.js";

/** How the operator is reached (OPERATOR_CONTACT), as OpenAPI's `info.contact` states it. */
export type OperatorContact = { email: string } | { url: string };

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
  /**
   * SIGNING_KEY: the Ed25519 key that signs paid reports (docs/proof.md). Unset: the one kept in
   * DATA_DIR, made at first start; required with REDIS_URL.
   */
  signingKey: SigningKeyJwk | undefined;
  snapshot: SnapshotConfig;
  payment: PaymentConfig;
  ops: OpsConfig;
  telemetry: TelemetryConfig;
}

/** A URL with a `?`, `#` or credentials, even empty ones (`new URL` drops an empty `?`). */
function hasQueryFragmentOrCredentials(u: URL): boolean {
  return u.username !== "" || u.password !== "" || /[?#]/.test(u.href);
}

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

const PORT = {
  name: "PORT",
  fallback: "8080",
  schema: int(0, 65535, "a TCP port (1-65535), 0 for a free one"),
  meaning: "the public listener's port",
};

/** Its default depends on the mode: see readHost. */
const HOST = { name: "HOST", fallback: "0.0.0.0", schema: host, meaning: "where it listens" };

const SERVICE: Table<Pick<Config, "publicUrl" | "operatorContact" | "redisUrl" | "dataDir">> = {
  publicUrl: {
    name: "PUBLIC_URL",
    fallback: "",
    schema: publicUrl,
    meaning: "the service's public base URL",
  },
  operatorContact: {
    name: "OPERATOR_CONTACT",
    fallback: "",
    schema: operatorContact,
    meaning: "how the operator is reached",
  },
  redisUrl: {
    name: "REDIS_URL",
    fallback: "",
    schema: redisUrl,
    meaning: "where the state several instances share lives",
    // May carry a password: never echoed in an error.
    secret: true,
  },
  dataDir: {
    name: "DATA_DIR",
    fallback: "./.secsnap",
    schema: dataDir,
    meaning: "where the embedded store keeps payment records",
  },
};

export function loadConfig(env: Env = process.env): Config {
  const port = read(env, PORT);
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
  const service = readTable(env, SERVICE);
  return {
    port,
    host: readHost(env, { devnet: payment.payTo === undefined, local: snapshot.allowLocal }),
    ...service,
    signingKey: loadSigningKey(env, service.redisUrl),
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
  const address = read(env, HOST, mode.devnet ? "127.0.0.1" : HOST.fallback);
  if (mode.local && !isLoopbackHost(address)) {
    throw new ConfigError(
      "HOST",
      "must be a loopback address (127.0.0.1, ::1 or localhost) in local mode (SNAPSHOT_ALLOW_LOCAL, " +
        `serve --allow-local): it fetches this machine's network for whoever reaches it (got ${quoted(address)})`,
    );
  }
  return address;
}

/** `localhost`, or an address in 127.0.0.0/8 or ::1 (IPv4-mapped included). */
function isLoopbackHost(address: string): boolean {
  if (address.toLowerCase() === "localhost") return true;
  return ipaddr.isValid(address) && ipaddr.process(address).range() === "loopback";
}
