/**
 * `secsnap mcp`: a stdio MCP server for MCP hosts (docs/contract.md §7.3, docs/mcp.md). Its tools
 * pay the HTTP API as `secsnap pay` does. stdout is the protocol: every line of ours goes to
 * stderr. Start-up loads the MCP SDK and the tool definitions only; x402 and viem are loaded on
 * the first call that needs them (mcp-pay.ts), so a host's first `tools/list` is answered fast.
 */
import { parseArgs } from "node:util";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import { DEMO_SNAPSHOT_TOOL, MCP_TOOL_NAMES, SNAPSHOT_TOOL } from "../http/index.js";
import { SERVICE_VERSION } from "../version.js";
import { UsageError, type Command, type CliOutput } from "./command.js";
import type { McpOptions, McpPayer } from "./mcp-pay.js";
import { apiBase, httpUrl, parseNetwork, usdcOption } from "./pay-options.js";
import { DEFAULT_PAY_TIMEOUT_S } from "./pay-send.js";

/** The price it expects: `--max-usdc` defaults to it, so a dearer service is refused. */
const EXPECTED_PRICE_USDC = "0.05";
const DEFAULT_BUDGET_USDC = "1.00";

const WalletOutputSchema = z.object({
  address: z.string().nullable().describe("The payer's address; null when not known yet."),
  key: z
    .enum(["SECSNAP_PRIVATE_KEY", "devnet test account", "none"])
    .describe("Where the signing key comes from."),
  network: z.string().describe("CAIP-2 id of the network the balance is read on."),
  asset: z.string().describe("The USDC contract read."),
  balance_usdc: z.string().nullable().describe("USDC balance on chain; null when unreadable."),
  spent_usdc: z.string().describe("USDC charged by this session's calls."),
  budget_usdc: z.string().describe("--budget-usdc: the most this session may spend."),
  budget_left_usdc: z
    .string()
    .describe("What is left of the budget; a call whose charge is unknown counts as spent."),
  max_usdc_per_call: z.string(),
  networks_allowed: z.array(z.string()),
  paid_calls: z.number().int().min(0),
  note: z.string().optional(),
});

export const mcpCommand: Command = {
  usage: [
    "Usage: secsnap mcp [--api http://127.0.0.1:8080] [--max-usdc 0.05] [--budget-usdc 1.00] [--network base-sepolia] [--rpc URL] [--timeout 300]",
    "",
    "A stdio MCP server for MCP hosts (Claude Desktop, Cursor, VS Code, agents). Its tools:",
    "snapshot(url) pays the API for a live report with the key in SECSNAP_PRIVATE_KEY (without",
    "it, only a service in devnet mode, from anvil's funded test account 2); demo_snapshot is the",
    "free demo; wallet says the address, network, USDC balance and what this session spent.",
    "--api         the service's base URL, path included (a trailing /v1/snapshot is accepted).",
    `--max-usdc    refuses, before signing, a call that costs more (default ${EXPECTED_PRICE_USDC}).`,
    `--budget-usdc refuses, before signing, a call beyond this session's total (default ${DEFAULT_BUDGET_USDC}).`,
    "--network     a network it may pay on: base-sepolia (the default) or base; repeat to allow",
    "              both. Base mainnet only when named.",
    "--rpc         the chain's JSON-RPC URL (balance, and whether a call whose answer was lost was",
    "              charged). Default: the devnet's 127.0.0.1:8545 for a devnet offer, else Base's.",
    `--timeout     seconds to keep sending one signed proof for its answer (default ${DEFAULT_PAY_TIMEOUT_S}).`,
    "stdout carries the protocol; logs go to stderr.",
  ].join("\n"),

  async run({ args, env, stderr }) {
    const options = readOptions(args);
    return serve(options, env, stderr);
  },
};

function readOptions(args: string[]): McpOptions {
  const { positionals, values } = parseArgs({
    args,
    options: {
      api: { type: "string", default: "http://127.0.0.1:8080" },
      "max-usdc": { type: "string", default: EXPECTED_PRICE_USDC },
      "budget-usdc": { type: "string", default: DEFAULT_BUDGET_USDC },
      network: { type: "string", multiple: true },
      rpc: { type: "string" },
      timeout: { type: "string", default: String(DEFAULT_PAY_TIMEOUT_S) },
    },
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new UsageError("takes no arguments, only options");
  if (values.rpc !== undefined) httpUrl(values.rpc, "--rpc");
  if (!/^\d{1,5}$/.test(values.timeout) || Number(values.timeout) < 1) {
    throw new UsageError("--timeout must be a whole number of seconds, at least 1");
  }
  return {
    base: apiBase(values.api),
    maxUsdc: usdcOption(values["max-usdc"], "--max-usdc"),
    budgetUsdc: usdcOption(values["budget-usdc"], "--budget-usdc"),
    // The test network unless networks are named: real money only when asked for.
    networks: [...new Set((values.network ?? ["base-sepolia"]).map(parseNetwork))],
    rpc: values.rpc,
    timeoutS: Number(values.timeout),
  };
}

/** Serves MCP on stdin/stdout until the host closes stdin; 0 then. */
async function serve(options: McpOptions, env: NodeJS.ProcessEnv, stderr: CliOutput) {
  const log = (line: string) => stderr.write(`secsnap mcp: ${line}\n`);
  const server = new McpServer({ name: "secsnap", version: SERVICE_VERSION });

  // The paying half, loaded once on first use.
  let payer: Promise<McpPayer> | undefined;
  const paying = () =>
    (payer ??= import("./mcp-pay.js").then((m) => new m.McpPayer(options, env, log)));

  server.registerTool(MCP_TOOL_NAMES.snapshot, SNAPSHOT_TOOL, async ({ url }, extra) =>
    guarded(log, () => paying().then((p) => p.snapshot(url, extra.signal))),
  );
  server.registerTool(MCP_TOOL_NAMES.demoSnapshot, DEMO_SNAPSHOT_TOOL, async (_args, extra) =>
    guarded(log, () => demo(options.base, extra.signal)),
  );
  server.registerTool(
    "wallet",
    {
      title: "secsnap wallet",
      description:
        "The wallet `snapshot` pays with: address, network, USDC balance (read on chain), what this " +
        "session spent, its budget and per-call cap. Free.",
      inputSchema: {},
      outputSchema: WalletOutputSchema,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async (_args, extra) => guarded(log, () => paying().then((p) => p.wallet(extra.signal))),
  );

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    // The host ends the session by closing our stdin (the MCP stdio transport's shutdown).
    process.stdin.once("end", () => void server.close());
  });
  await server.connect(transport);
  log(
    `serving MCP on stdio; paying ${options.base.href} on ${options.networks.join(", ")}, at most ${options.maxUsdc} USDC a call and ${options.budgetUsdc} USDC this session`,
  );
  await closed;
  return 0;
}

/** A tool's work; a bug becomes an error result saying so, not a dropped session. */
async function guarded(
  log: (line: string) => void,
  work: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await work();
  } catch (err) {
    log(`internal error: ${(err as Error).stack ?? String(err)}`);
    return { isError: true, content: [{ type: "text", text: `internal error: ${String(err)}` }] };
  }
}

/** `GET /demo/snapshot` of the API: free, no key or chain needed. */
async function demo(base: URL, signal: AbortSignal): Promise<CallToolResult> {
  const url = new URL("demo/snapshot", base);
  try {
    const response = await fetch(url, {
      headers: { Accept: "application/json" },
      signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]),
    });
    const body: unknown = await response.json();
    if (!response.ok) throw new Error(`the API answered ${response.status}`);
    const report = body as { grade?: unknown; score?: unknown };
    return {
      content: [
        {
          type: "text",
          text: `Demo report (a fixed sample: nothing fetched, nothing paid): grade ${String(report.grade)}, score ${String(report.score)}.`,
        },
        { type: "text", text: JSON.stringify(body) },
      ],
      structuredContent: body as Record<string, unknown>,
    };
  } catch (err) {
    return {
      isError: true,
      content: [{ type: "text", text: `GET ${url.href} failed: ${String(err)}` }],
    };
  }
}
