/**
 * Every start-up failure is one line (docs/operations.md, "Start-up"): each variable config.ts
 * reads, given a bad value, stops a real `secsnap serve` (or `secsnap facilitator` for its
 * FACILITATOR_*) with exactly one stderr line naming it, no stack and a non-zero exit; so do a
 * busy PORT, devnet ports and facilitator port, and a bad SECSNAP_PRIVATE_KEY for pay and mcp.
 * The variables are learnt from config.ts itself (every key its loaders read), so a new one is
 * covered without touching this file. The bundle runs (bin/secsnap.js, built first when stale),
 * as a user runs it, and it starts in a fraction of the time tsx takes for the sources.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build, staleReason } from "../../scripts/build.js";
import { loadConfig, loadFacilitatorConfig } from "../../src/config.js";
import { startDevnet, type Devnet } from "../../src/devnet/index.js";
import { variablesRead } from "../fixtures/config-variables.js";
import { outputOf } from "../fixtures/child-output.js";
import { closedPort } from "../fixtures/targets.js";
import { ROOT, cleanEnv, type CliRun } from "./run.js";

const BIN = fileURLToPath(new URL("../../bin/secsnap.js", import.meta.url));

type Env = Record<string, string | undefined>;

/** A valid key nobody holds funds with: FACILITATOR_PRIVATE_KEY's base value. */
const SOME_KEY = `0x${"11".repeat(32)}`;

const SERVE_VARIABLES = variablesRead(loadConfig, {});
const FACILITATOR_VARIABLES = variablesRead(loadFacilitatorConfig, {
  FACILITATOR_RPC_URL: "http://127.0.0.1:1",
  FACILITATOR_PRIVATE_KEY: SOME_KEY,
});

/**
 * Variables that accept any value, with the reason; none today. HOST and the like accept any
 * text at parse time but are listened on, so a bad one is still tested (below).
 */
const FREE_TEXT: Record<string, string> = {};

/** Lines that name the variable but, rightly, do not quote the value given. */
const NOT_QUOTED: Record<string, string> = {
  REDIS_URL: "may carry a password",
  SIGNING_KEY: "a private key",
  X402_FACILITATOR_AUTH_HEADER: "carries a token",
  CDP_API_KEY_SECRET: "a secret; the line is about its missing CDP_API_KEY_ID",
  CDP_API_KEY_ID: "set alone, the line is about its missing CDP_API_KEY_SECRET",
};

let scratch: string;
/** A regular file: a DATA_DIR below it cannot be created. */
let aFile: string;
let devnet: Devnet;

/** A bad value for each variable; most take "abc", those that would accept it are listed. */
function badValue(variable: string): string {
  const special: Record<string, string> = {
    DATA_DIR: join(aFile, "data"),
    HOST: "host.invalid",
    METRICS_HOST: "host.invalid",
    FACILITATOR_HOST: "host.invalid",
    TRUST_PROXY: "2",
  };
  return special[variable] ?? "abc";
}

beforeAll(async () => {
  if (staleReason() !== undefined) build();
  scratch = await mkdtemp(join(tmpdir(), "secsnap-startup-"));
  aFile = join(scratch, "a-file");
  writeFileSync(aFile, "not a directory\n");
  // A real chain for `secsnap facilitator`, which asks its RPC before it listens.
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
}, 120_000);
afterAll(async () => {
  await devnet?.close();
  await rm(scratch, { recursive: true, force: true });
});

let dirs = 0;
/** `serve` on free ports with its own DATA_DIR and devnet ports nobody uses; `extra` on top. */
async function serveEnv(extra: Env): Promise<NodeJS.ProcessEnv> {
  return cleanEnv({
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: join(scratch, `data-${++dirs}`),
    DEVNET_RPC_PORT: String(await closedPort("127.0.0.1")),
    DEVNET_FACILITATOR_PORT: String(await closedPort("127.0.0.1")),
    ...(extra as Record<string, string>),
  });
}

function facilitatorEnv(extra: Env): NodeJS.ProcessEnv {
  return cleanEnv({
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_PRIVATE_KEY: SOME_KEY,
    FACILITATOR_PORT: "0",
    ...(extra as Record<string, string>),
  });
}

/**
 * The CLI to its end. A start that does not fail is killed after a minute (a guard against a
 * hang, not a measurement): the exit is then a signal and the assertions below fail.
 */
async function run(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env });
  child.stdin.end();
  const output = outputOf(child);
  const guard = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const run = await output;
  clearTimeout(guard);
  return run;
}

/** Exactly one non-empty stderr line, naming `variable`, without a stack; a non-zero exit. */
function expectOneLine(result: CliRun, variable: string): string {
  const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
  expect(lines, result.stderr).toHaveLength(1);
  const [line] = lines as [string];
  expect(line).toContain(variable);
  // What is expected, in this project's words: not zod's generic English ("Invalid input").
  expect(line).not.toMatch(/Invalid input|Too small|Too big|received/);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  expect(result.code).not.toBe(0);
  expect(result.code).not.toBeNull();
  return line;
}

describe("the variables config.ts reads", () => {
  it("are found by watching it read (a sample, so the list is not empty by mistake)", () => {
    expect(SERVE_VARIABLES).toEqual(
      expect.arrayContaining(["PORT", "METRICS_PORT", "DATA_DIR", "DEVNET_FACILITATOR_PORT"]),
    );
    expect(FACILITATOR_VARIABLES).toEqual(
      expect.arrayContaining(["FACILITATOR_PORT", "FACILITATOR_RPC_URL"]),
    );
  });
});

describe.concurrent("a bad value stops `serve` with one line naming it", () => {
  const tested = SERVE_VARIABLES.filter((name) => !(name in FREE_TEXT));
  it.each(tested)("%s", { timeout: 120_000 }, async (variable) => {
    const value = badValue(variable);
    const line = expectOneLine(
      await run(["serve"], await serveEnv({ [variable]: value })),
      variable,
    );
    if (!(variable in NOT_QUOTED)) expect(line).toContain(value); // what was given, quoted back
  });
});

describe.concurrent("a bad value stops `facilitator` with one line naming it", () => {
  const tested = FACILITATOR_VARIABLES.filter((name) => !(name in FREE_TEXT));
  it.each(tested)("%s", { timeout: 120_000 }, async (variable) => {
    expectOneLine(
      await run(["facilitator"], facilitatorEnv({ [variable]: badValue(variable) })),
      variable,
    );
  });
});

describe.concurrent("a bad SECSNAP_PRIVATE_KEY stops pay and mcp with one line, no usage", () => {
  it.each([
    [["pay", "https://example.com", "--api", "http://127.0.0.1:1"]],
    [["mcp", "--api", "http://127.0.0.1:1"]],
  ])("%j", { timeout: 60_000 }, async (args) => {
    const line = expectOneLine(
      await run(args, cleanEnv({ SECSNAP_PRIVATE_KEY: "0xnot-a-key" })),
      "SECSNAP_PRIVATE_KEY",
    );
    expect(line).not.toContain("0xnot-a-key"); // a key is never echoed
  });
});

/** A TCP listener on 127.0.0.1 that accepts and never answers: something else on the port. */
async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, server };
}

describe.concurrent("a busy port stops the start with one line naming its variable", () => {
  it.each([
    ["serve", "PORT"],
    ["serve", "DEVNET_RPC_PORT"],
    ["serve", "DEVNET_FACILITATOR_PORT"],
    ["facilitator", "FACILITATOR_PORT"],
  ])("%s, %s", { timeout: 120_000 }, async (command, variable) => {
    const { port, server } = await holdPort();
    try {
      const extra = { [variable]: String(port) };
      const env = command === "serve" ? await serveEnv(extra) : facilitatorEnv(extra);
      const line = expectOneLine(await run([command], env), variable);
      expect(line).toContain(String(port));
    } finally {
      server.close();
    }
  });
});
