import ipaddr from "ipaddr.js";
// zod's tree-shakable build: `scan` reads its settings here, and full zod costs it ≈ 25 ms at
// start (docs/benchmarks.md "Start-up").
import * as z from "zod/mini";
import { ConfigError } from "../config-error.js";

/**
 * How every variable is read (docs/contract.md §6.1, §6.2): the table row each concern writes
 * per variable, the reader that applies it, and the parsers several concerns share.
 */

export type Env = Record<string, string | undefined>;

/** One environment variable: its name, what unset means, how it is parsed, what it sets. */
export interface Variable<T> {
  name: string;
  /** What unset or blank means, parsed like a value. */
  fallback: string;
  schema: z.ZodMiniType<T>;
  /** What it sets, in a few words; its row in docs/contract.md §6.1 says more. */
  meaning: string;
  /** Never quoted back in an error line. */
  secret?: boolean;
  /** Unset or blank is undefined, not the fallback parsed: read only when set (T has undefined). */
  optional?: boolean;
}

/** A concern's variables, one row per field of what it loads. */
export type Table<C> = { readonly [K in keyof C]-?: Variable<C[K]> };

/** Longest bad value quoted back in an error line; the rest is cut (one short line). */
const MAX_QUOTED = 40;

/** A bad value as an error line quotes it: JSON-escaped (no control characters), cut short. */
export function quoted(raw: string): string {
  return JSON.stringify(raw.length > MAX_QUOTED ? `${raw.slice(0, MAX_QUOTED)}…` : raw);
}

/**
 * One variable through its schema; unset or blank means `fallback`. The error names the
 * variable, says what is expected and quotes the bad value, except a secret's, never echoed.
 */
export function read<T>(
  env: Env,
  variable: Variable<T> & { optional: true },
  fallback?: string,
): T | undefined;
export function read<T>(env: Env, variable: Variable<T>, fallback?: string): T;
export function read<T>(env: Env, variable: Variable<T>, fallback = variable.fallback): T {
  const raw = env[variable.name]?.trim();
  if (variable.optional && !raw) return undefined as T;
  const parsed = variable.schema.safeParse(raw === undefined || raw === "" ? fallback : raw);
  if (!parsed.success) {
    const why = parsed.error.issues[0]?.message ?? "is invalid";
    const got = raw && !variable.secret ? ` (got ${quoted(raw)})` : "";
    throw new ConfigError(variable.name, `${why}${got}`);
  }
  return parsed.data;
}

/** Every row of a table, in its order: the first bad value stops the start. */
export function readTable<C>(env: Env, table: Table<C>): C {
  const values: Partial<C> = {};
  for (const key of Object.keys(table) as (keyof C)[]) values[key] = read(env, table[key]);
  return values as C;
}

/** A variable without a default: blank is "must be set (what it is)". */
export const required = (what: string) => z.string().check(z.minLength(1, `must be set (${what})`));

export const int = (min: number, max: number, what: string) =>
  z.coerce
    .number({ message: `must be ${what}` })
    .check(
      z.int(`must be ${what}`),
      z.minimum(min, `must be ${what}`),
      z.maximum(max, `must be ${what}`),
    );

export const port = int(1, 65535, "a TCP port (1-65535)");
/** A port to listen on; 0 picks a free one. */
export const listenPort = int(0, 65535, "a TCP port (0-65535)");

/** An on/off setting: 1/true/yes/on or 0/false/no/off, any case. */
export const flag = z.pipe(
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

export const httpUrl = z.url({ protocol: /^https?$/, message: "must be an http(s) URL" });

/** Any name or address: one that cannot be bound stops the start at listen, naming it. */
export const host = z.string();

export const list = (item: (s: string) => boolean, what: string) =>
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

export function isCidr(s: string): boolean {
  try {
    ipaddr.parseCIDR(s);
    return true;
  } catch {
    return false;
  }
}
