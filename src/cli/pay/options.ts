/**
 * The command-line values `secsnap pay` and `secsnap mcp` share: the API's snapshot route and the
 * networks. No heavy import here: `secsnap mcp` checks its options before loading any of x402.
 */
import { ConfigError } from "../../config-error.js";
import { NETWORK_IDS } from "../../config.js";
import { USDC_DECIMALS } from "../../networks.js";
import { PATHS } from "../../routes.js";
import { UsageError } from "../command.js";

export const MAINNET = NETWORK_IDS.base;
/** Network names by CAIP-2 id. */
export const NETWORK_NAMES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(NETWORK_IDS).map(([name, id]) => [id, name]),
);

/** A `--network` value as a CAIP-2 id: `base`, `base-sepolia` or the id itself. */
export function parseNetwork(value: string): string {
  const id = (NETWORK_IDS as Record<string, string>)[value] ?? value;
  if (!NETWORK_NAMES[id]) {
    throw new UsageError(
      `--network must be one of ${Object.keys(NETWORK_IDS).join(", ")} (got ${JSON.stringify(value)})`,
    );
  }
  return id;
}

/** A USDC amount: at most USDC's decimals. */
const USDC_AMOUNT = new RegExp(`^\\d+(\\.\\d{1,${USDC_DECIMALS}})?$`);

/** A USDC amount option (`--max-usdc`, `--budget-usdc`), checked: at most 6 decimals. */
export function usdcOption(value: string, option: string): string {
  if (!USDC_AMOUNT.test(value)) throw new UsageError(`${option} must be a USDC amount`);
  return value;
}

/** A URL option, checked: http(s) only. */
export function httpUrl(value: string, option: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`${option} must be a URL (got ${JSON.stringify(value)})`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UsageError(`${option} must be an http(s) URL (got ${JSON.stringify(value)})`);
  }
  return url;
}

/**
 * The service's base URL from `--api`, keeping its path (a service behind a path prefix); an
 * `--api` that already names the snapshot route (`…/v1/snapshot`) stands for its base.
 */
export function apiBase(api: string): URL {
  const base = httpUrl(api, "--api");
  const path = base.pathname.replace(/\/$/, "");
  if (path.endsWith(PATHS.snapshot)) base.pathname = `${path.slice(0, -PATHS.snapshot.length)}/`;
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  base.search = "";
  base.hash = "";
  return base;
}

/** `<api>/v1/snapshot`: the paid route under the base of `--api` (relative, to keep its path). */
export function snapshotEndpoint(api: string): URL {
  return new URL(PATHS.snapshot.slice(1), apiBase(api));
}

/**
 * SECSNAP_PRIVATE_KEY, checked: 0x and 64 hex digits. A bad one is a ConfigError, one line
 * without usage (the command line was fine), and never echoes the key.
 */
export function checkedKey(key: string): `0x${string}` {
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) {
    throw new ConfigError(
      "SECSNAP_PRIVATE_KEY",
      "must be a private key: 0x and 64 hex digits (32 bytes); the value is not shown",
    );
  }
  return key as `0x${string}`;
}

/** Checks SECSNAP_PRIVATE_KEY at start, before any network work, when it is set. */
export function checkKeyVariable(env: NodeJS.ProcessEnv): void {
  const key = env.SECSNAP_PRIVATE_KEY?.trim();
  if (key) checkedKey(key);
}
