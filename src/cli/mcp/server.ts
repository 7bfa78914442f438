/**
 * The MCP server of `secsnap mcp` on the official SDK: its four tools registered on an
 * McpServer (docs/mcp.md), served in both eras of MCP by the SDK's `serveStdio` (the session's
 * first message chooses: `initialize` for the 2025 revisions, `server/discover` or a request
 * with the 2026-07-28 envelope for the current one). Loaded by command.ts once the session needs
 * more than its first answers, and by the build, which records those answers (listing.ts).
 */
import { PassThrough, Writable, type Readable } from "node:stream";
import {
  InMemoryTransport,
  McpServer,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolResult,
  type JSONRPCMessage,
} from "@modelcontextprotocol/server";
import { StdioServerTransport, serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";
import {
  DEMO_SNAPSHOT_TOOL,
  GET_SNAPSHOT_TOOL,
  MCP_TOOL_NAMES,
  SNAPSHOT_TOOL,
} from "../../http/index.js";
import { SERVICE_VERSION } from "../../version.js";
import { PATHS } from "../../routes.js";
import type { EarlySession, McpListing } from "./listing.js";
import type { McpOptions, McpPayer } from "./payer.js";

const WalletOutputSchema = z.object({
  address: z.string().nullable().describe("The payer's address; null when not known yet."),
  key: z
    .enum(["SECSNAP_PRIVATE_KEY", "devnet test account", "none"])
    .describe("Where the signing key comes from."),
  network: z.string().describe("CAIP-2 id of the network the balance is read on."),
  asset: z.string().describe("The USDC contract read."),
  balance_usdc: z.string().nullable().describe("USDC balance on chain; null when unreadable."),
  spent_usdc: z.string().describe("USDC charged by this session's calls, by the chain's word."),
  committed_usdc: z
    .string()
    .describe(
      "USDC signed for calls that got no report and that the chain has not settled: held against the budget until the chain says used (then spent) or expired unused (then freed).",
    ),
  budget_usdc: z.string().describe("--budget-usdc: the most this session may spend."),
  budget_left_usdc: z
    .string()
    .describe("What is left of the budget once spent and committed USDC are counted."),
  max_usdc_per_call: z.string(),
  networks_allowed: z.array(z.string()),
  paid_calls: z.number().int().min(0),
  note: z.string().optional(),
});

/** The paying half of a session, loaded once on first use: one wallet, one budget. */
function sessionPayer(options: McpOptions, env: NodeJS.ProcessEnv, log: (line: string) => void) {
  let payer: Promise<McpPayer> | undefined;
  return () => (payer ??= import("./payer.js").then((m) => new m.McpPayer(options, env, log)));
}

/**
 * The server with its four tools. The SDK may build more than one a session (a probe of the era
 * first): they share the session's payer, so its budget holds across them.
 */
function createServer(
  options: McpOptions,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
  paying: () => Promise<McpPayer>,
) {
  const server = new McpServer({ name: "secsnap", version: SERVICE_VERSION });

  server.registerTool(MCP_TOOL_NAMES.snapshot, SNAPSHOT_TOOL, async ({ url }, ctx) =>
    guarded(log, () => paying().then((p) => p.snapshot(url, ctx.mcpReq.signal))),
  );
  server.registerTool(MCP_TOOL_NAMES.demoSnapshot, DEMO_SNAPSHOT_TOOL, async (_args, ctx) =>
    guarded(log, () => demo(options.base, ctx.mcpReq.signal)),
  );
  server.registerTool("get_snapshot", GET_SNAPSHOT_TOOL, async ({ snapshot_id }, ctx) =>
    guarded(log, async () => {
      const { getSnapshot } = await import("./get-snapshot.js");
      return getSnapshot(options.base, env, snapshot_id, ctx.mcpReq.signal, log);
    }),
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
    async (_args, ctx) => guarded(log, () => paying().then((p) => p.wallet(ctx.mcpReq.signal))),
  );
  return server;
}

/**
 * Serves MCP with the SDK's stdio transport until the host closes stdin; 0 then. After an early
 * start, the SDK reads the lines already read (its state then is as if it had read them all)
 * and its answers to requests already answered are not written twice.
 */
export async function serve(
  options: McpOptions,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
  early: EarlySession | undefined,
): Promise<number> {
  const paying = sessionPayer(options, env, log);
  let input: Readable = process.stdin;
  let output: Writable = process.stdout;
  if (early) {
    const replay = new PassThrough();
    replay.write(early.lines.map((line) => `${line}\n`).join("") + early.rest);
    if (early.ended) replay.end();
    else process.stdin.pipe(replay);
    input = replay;
    output = withoutAnswersTo(early.answered);
  }
  const transport = new StdioServerTransport(input, output);
  const closed = new Promise<void>((resolve) => {
    // The host ends the session by closing our stdin (the MCP stdio transport's shutdown).
    input.once("end", () => void session.close().then(resolve));
  });
  const session = serveStdio(() => createServer(options, env, log, paying), {
    transport,
    onerror: (error) => log(`MCP: ${error.message}`),
  });
  log(
    `serving MCP on stdio; paying ${options.base.href} on ${options.networks.join(", ")}, at most ${options.maxUsdc} USDC a call and ${options.budgetUsdc} USDC this session`,
  );
  await closed;
  return 0;
}

/** stdout, less the SDK's answers to the requests answered early (one message per write). */
function withoutAnswersTo(answered: Set<string | number>): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = chunk.toString();
      const message = JSON.parse(text) as { id?: string | number; method?: string };
      if (message.method === undefined && message.id !== undefined && answered.delete(message.id)) {
        done();
        return;
      }
      process.stdout.write(text, () => done());
    },
  });
}

/**
 * The SDK's own answers to a session's first requests, recorded by the build (scripts/bundle.js
 * runs `secsnap mcp --write-listing`): `initialize` for each protocol version it supports and
 * for one it does not, and `tools/list`. command.ts answers those from this record while the SDK
 * loads, so a host gets the SDK's answers without waiting for it.
 */
export async function recordListing(options: McpOptions): Promise<McpListing> {
  const log = () => {};
  // A server connected by hand speaks the 2025 revisions, as serveStdio's after `initialize`.
  const server = createServer(options, {}, log, sessionPayer(options, {}, log));
  const [client, inServer] = InMemoryTransport.createLinkedPair();
  const answers = new Map<string | number, unknown>();
  client.onmessage = (message: JSONRPCMessage) => {
    if ("id" in message && "result" in message) answers.set(message.id, message.result);
  };
  await server.connect(inServer);
  const versions = [...SUPPORTED_PROTOCOL_VERSIONS, "0000-00-00"];
  const clientInfo = { name: "secsnap-build", version: SERVICE_VERSION };
  for (const [id, protocolVersion] of versions.entries()) {
    await client.send({
      jsonrpc: "2.0",
      id,
      method: "initialize",
      params: { protocolVersion, capabilities: {}, clientInfo },
    });
  }
  const toolsId = versions.length;
  await client.send({ jsonrpc: "2.0", id: toolsId, method: "tools/list", params: {} });
  while (answers.size < versions.length + 1) await new Promise((r) => setTimeout(r, 5));
  await server.close();
  return {
    version: SERVICE_VERSION,
    initialize: Object.fromEntries(SUPPORTED_PROTOCOL_VERSIONS.map((v, i) => [v, answers.get(i)])),
    initializeOtherwise: answers.get(versions.length - 1),
    toolsList: answers.get(toolsId),
  };
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
  const url = new URL(PATHS.demo.slice(1), base);
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
