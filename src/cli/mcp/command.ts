/**
 * `secsnap mcp`: a stdio MCP server for MCP hosts (docs/contract.md §8.2, docs/mcp.md). Its tools
 * pay the HTTP API as `secsnap pay` does. stdout is the protocol: every line of ours goes to
 * stderr. Start-up loads none of the SDK: the first answers come from the build's record
 * (listing.ts) while the SDK and the tools load (server.ts); x402 and viem are loaded on
 * the first call that needs them (payer.ts).
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { PATHS } from "../../routes.js";
import { UsageError, type Command } from "../command.js";
import { answerFirstRequests, readListing } from "./listing.js";
import type { McpOptions } from "./payer.js";
import { apiBase, checkKeyVariable, httpUrl, parseNetwork, usdcOption } from "../pay/options.js";
import { DEFAULT_PAY_TIMEOUT_S } from "../pay/send.js";

/** The price it expects: `--max-usdc` defaults to it, so a dearer service is refused. */
const EXPECTED_PRICE_USDC = "0.05";
const DEFAULT_BUDGET_USDC = "1.00";

export const mcpCommand: Command = {
  usage: [
    "Usage: secsnap mcp [--api http://127.0.0.1:8080] [--max-usdc 0.05] [--budget-usdc 1.00] [--network base-sepolia] [--rpc URL] [--timeout 300]",
    "",
    "A stdio MCP server for MCP hosts (Claude Desktop, Cursor, VS Code, agents). Its tools:",
    "snapshot(url) pays the API for a live report with the key in SECSNAP_PRIVATE_KEY (without",
    "it, only a service in devnet mode, from anvil's funded test account 2); demo_snapshot is the",
    "free demo; wallet says the address, network, USDC balance and what this session spent;",
    "get_snapshot(snapshot_id) gets a report paid for before again, free, signed in with that key.",
    `--api         the service's base URL, path included (a trailing ${PATHS.snapshot} is accepted).`,
    `--max-usdc    refuses, before signing, a call that costs more (default ${EXPECTED_PRICE_USDC}).`,
    `--budget-usdc refuses, before signing, a call beyond this session's total (default ${DEFAULT_BUDGET_USDC}):`,
    "              spent, and signed without a report until the chain says used or expired.",
    "--network     a network it may pay on: base-sepolia (the default) or base; repeat to allow",
    "              both. Base mainnet only when named.",
    "--rpc         the offer's chain's JSON-RPC URL, its chain id checked (balance, and whether a",
    "              call that got no report was charged). Default: 127.0.0.1:8545 for a devnet",
    "              offer of an API on this machine, else Base's public RPC.",
    `--timeout     seconds to keep sending one signed proof for its answer (default ${DEFAULT_PAY_TIMEOUT_S}).`,
    "stdout carries the protocol; logs go to stderr.",
  ].join("\n"),

  async run({ args, env, stderr }) {
    const { options, writeListing } = readOptions(args);
    checkKeyVariable(env); // a bad key: one line at start, not an error at the first paid call
    const log = (line: string) => stderr.write(`secsnap mcp: ${line}\n`);
    if (writeListing !== undefined) {
      // The build's step (scripts/bundle.js): the SDK's first answers, recorded.
      const { recordListing } = await import("./server.js");
      writeFileSync(writeListing, JSON.stringify(await recordListing(options)));
      return 0;
    }
    const listing = readListing();
    const [early, { serve }] = listing
      ? [await answerFirstRequests(listing), await import("./server.js")]
      : [undefined, await import("./server.js")];
    return serve(options, env, log, early);
  },
};

function readOptions(args: string[]): { options: McpOptions; writeListing?: string } {
  const { positionals, values } = parseArgs({
    args,
    options: {
      api: { type: "string", default: "http://127.0.0.1:8080" },
      "max-usdc": { type: "string", default: EXPECTED_PRICE_USDC },
      "budget-usdc": { type: "string", default: DEFAULT_BUDGET_USDC },
      network: { type: "string", multiple: true },
      rpc: { type: "string" },
      timeout: { type: "string", default: String(DEFAULT_PAY_TIMEOUT_S) },
      "write-listing": { type: "string" },
    },
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError("takes no arguments, only options");
  if (values.rpc !== undefined) httpUrl(values.rpc, "--rpc");
  if (!/^\d{1,5}$/.test(values.timeout) || Number(values.timeout) < 1) {
    throw new UsageError("--timeout must be a whole number of seconds, at least 1");
  }
  const options: McpOptions = {
    base: apiBase(values.api),
    maxUsdc: usdcOption(values["max-usdc"], "--max-usdc"),
    budgetUsdc: usdcOption(values["budget-usdc"], "--budget-usdc"),
    // The test network unless networks are named: real money only when asked for.
    networks: [...new Set((values.network ?? ["base-sepolia"]).map(parseNetwork))],
    rpc: values.rpc,
    timeoutS: Number(values.timeout),
  };
  return {
    options,
    ...(values["write-listing"] !== undefined && { writeListing: values["write-listing"] }),
  };
}
