/**
 * POST /mcp: the service speaks MCP (docs/contract.md §7.10, docs/mcp.md) in both eras on
 * one URL: the current revision (2026-07-28: stateless, `server/discover`, a `_meta` envelope
 * on every request, `resultType` on every result) through the SDK's `createMcpHandler`, and the
 * 2025 revisions (`initialize`) through the SDK's Streamable HTTP transport, stateless (no
 * session id, a JSON answer per request). Tools `snapshot` (paid with x402 over MCP, through the
 * payment gate's MCP adapter on the same ledger as POST /v1/snapshot) and `demo_snapshot`
 * (free), with the definitions `secsnap mcp` shares.
 *
 * A server per request (the SDK's stateless pattern), reused from a small idle pool per era
 * (building one costs more than the request, docs/benchmarks.md "MCP"); the request reaches the
 * tool handlers through async context, so a paid answer tells the ledger once it was written.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import {
  McpServer,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  isLegacyRequest,
  type McpHttpHandler,
} from "@modelcontextprotocol/server";
import type { Context, Hono } from "hono";
import { whenSent, type McpPayment, type McpToolResult, type Answer } from "../../payment/index.js";
import {
  SnapshotError,
  demoSnapshot,
  parseSnapshotTarget,
  type SnapshotTarget,
  type UrlPolicy,
} from "../../snapshot/index.js";
import { SERVICE_VERSION } from "../../version.js";
import { PATHS } from "../../routes.js";
import type { SnapshotAdmission } from "../guards/admission.js";
import { DEMO_SNAPSHOT_TOOL, MCP_TOOL_NAMES, SNAPSHOT_TOOL } from "./tools.js";
import { batchRefused, isBatch, readMcpBody, snapshotCallMeta } from "./messages.js";
import { McpUnpaidFastPath, type McpRequestBody } from "./unpaid-fast-path.js";
import { snapshotErrorBody } from "../snapshot-input.js";
import type { SnapshotWork } from "../snapshot-work.js";

export interface McpRouteDeps {
  /** The snapshot of a checked target, as every door runs it (src/http/snapshot-work.ts). */
  work: SnapshotWork;
  urlPolicy: UrlPolicy;
  /** x402 over MCP (the payment gate's `mcp`); without it `snapshot` is served unpaid. */
  payment?: McpPayment;
  admission: SnapshotAdmission;
  log: (message: string, error?: unknown) => void;
  /**
   * The unpaid `tools/call snapshot` answered without the SDK (unpaid-fast-path.ts); default
   * on. Off, every request goes through the SDK (the tests compare both answers).
   */
  unpaidFastPath?: boolean;
  /**
   * The per-client budget of this request (docs/operations.md, "Rate limits"), when the service
   * limits clients: a `tools/call` of `snapshot` carrying a proof is paid work, held only to its
   * client's refused proofs; every other message (a proof elsewhere is ignored) is a free answer.
   */
  budgetOf?: (c: Context) => McpCallBudget;
}

/** One request's client budget: each method answers the 429 when refused. */
export interface McpCallBudget {
  free(): Promise<Response | undefined>;
  proofsSpent(): Promise<Response | undefined>;
  countRefusedProof(): void;
}

/** What a tool call needs of the request it came in (kept in async context). */
interface RequestContext {
  c: Context;
  /** Paid answers' delivery callbacks, told once the response was written out (or not). */
  finishes: ((delivered: boolean) => void)[];
  /** A proof was refused with a PaymentRequired (counted in the client's budget). */
  refusedProof: boolean;
  /**
   * The SDK answered already: a tool that ends later (the client left, and the SDK answered the
   * current revision's request without waiting) tells its ledger at once that nothing was sent.
   */
  answered: boolean;
}

/** Idle servers kept for reuse, per era; more concurrent requests build more, the surplus is dropped. */
const MAX_IDLE_SERVERS = 16;

/** Mounts POST /mcp (GET and DELETE fall to the app's 405: no SSE stream, no session). */
export function addMcpRoute<E extends object>(app: Hono<E>, deps: McpRouteDeps): void {
  const requests = new AsyncLocalStorage<RequestContext>();
  const { payment } = deps;
  /** Whether a parsed message is one `tools/call` of `snapshot` with a proof in its `_meta`. */
  const carriesProof = (message: unknown): boolean => {
    const meta = snapshotCallMeta(message);
    return meta !== undefined && (payment?.carriesProof(meta) ?? false);
  };
  const eras = new McpEras(() => buildServer(deps, requests));
  const fast =
    payment && deps.unpaidFastPath !== false
      ? new McpUnpaidFastPath(deps.urlPolicy, () => payment.unpaidResult())
      : undefined;
  app.post(PATHS.mcp, async (c) => {
    const { body, prepared } = await readRequest(c, fast);
    const budget = deps.budgetOf?.(c);
    if (budget) {
      const paid = payment !== undefined && body.read && body.parsed && carriesProof(body.value);
      const refused = paid ? await budget.proofsSpent() : await budget.free();
      if (refused) return refused;
    }
    if (prepared) return prepared;
    if (isBatch(body)) return batchRefused();
    const context: RequestContext = { c, finishes: [], refusedProof: false, answered: false };
    const response = await requests.run(context, () => eras.serve(c.req.raw, body));
    context.answered = true;
    if (context.refusedProof) budget?.countRefusedProof();
    if (context.finishes.length > 0) {
      whenSent(c, (delivered) => {
        for (const finish of context.finishes) finish(delivered);
      });
    }
    return response;
  });
}

/**
 * The request's body as far as read, or the answer already known: the unpaid fast path's, or a
 * refusal of the body. Every message is seen before the SDK answers any: a batch is refused, not
 * counted as one.
 */
async function readRequest(
  c: Context,
  fast: McpUnpaidFastPath | undefined,
): Promise<{ body: McpRequestBody; prepared?: Response }> {
  if (fast) {
    const taken = await fast.answer(c);
    if ("answer" in taken) return { body: { read: false }, prepared: taken.answer };
    if (taken.body.read) return { body: taken.body };
  }
  const read = await readMcpBody(c);
  return "answer" in read ? { body: { read: false }, prepared: read.answer } : { body: read };
}

/** A server with both tools; its handlers read the request from the async context. */
function buildServer(deps: McpRouteDeps, requests: AsyncLocalStorage<RequestContext>): McpServer {
  const demo = demoSnapshot() as unknown as Record<string, unknown>;
  const demoResult: McpToolResult = {
    content: [{ type: "text", text: JSON.stringify(demo) }],
    structuredContent: demo,
  };
  const server = new McpServer({ name: "secsnap", version: SERVICE_VERSION });
  server.registerTool(MCP_TOOL_NAMES.snapshot, SNAPSHOT_TOOL, async ({ url }, ctx) => {
    const request = requests.getStore();
    if (!request) throw new Error("MCP tool call outside a request");
    // The x402 keys; the 2026-07-28 envelope's own keys are lifted out of it by the SDK.
    const meta = ctx.mcpReq._meta;
    const answer = await snapshotTool(deps, request.c, url, meta);
    if (answer.finish && request.answered) answer.finish(false);
    else if (answer.finish) request.finishes.push(answer.finish);
    if (deps.payment?.carriesProof(meta) && isPaymentRequired(answer.result)) {
      request.refusedProof = true;
    }
    return answer.result;
  });
  server.registerTool(MCP_TOOL_NAMES.demoSnapshot, DEMO_SNAPSHOT_TOOL, () => demoResult);
  return server;
}

/**
 * Both eras on one URL. The current revision goes to the SDK's `createMcpHandler` (it owns the
 * envelope, the header checks and their codes, `server/discover`); 2025-era requests, as its
 * own `isLegacyRequest` classifies them, go to a stateless Streamable HTTP transport answering
 * JSON, as before: the handler's built-in fallback (`legacy: 'stateless'`) answers them as an
 * SSE stream, which the unpaid fast path could not match byte for byte.
 */
class McpEras {
  private readonly legacy: ServerPool;
  private readonly modern: McpHttpHandler;

  constructor(build: () => McpServer) {
    this.legacy = new ServerPool(build);
    const modern = new ServerPool(build);
    this.modern = createMcpHandler(() => modern.take(), { legacy: "reject" });
  }

  /** The request to the era it speaks, with its body as the route read it. */
  async serve(request: Request, body: McpRequestBody): Promise<Response> {
    // Not JSON: the SDK reads the text again from a copy of the request and says so.
    const forwarded = body.read && !body.parsed ? withText(request, body.text) : request;
    const parsed = body.read && body.parsed ? { parsedBody: body.value } : undefined;
    if (await isLegacyRequest(forwarded, parsed?.parsedBody)) {
      return this.serveLegacy(forwarded, parsed);
    }
    return this.modern.fetch(forwarded, parsed);
  }

  private async serveLegacy(
    request: Request,
    parsed: { parsedBody: unknown } | undefined,
  ): Promise<Response> {
    const server = this.legacy.take();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, parsed);
    } finally {
      await server.close();
    }
  }
}

/** The request again with `text` as its body (the original's was read). */
function withText(request: Request, text: string): Request {
  return new Request(request.url, { method: request.method, headers: request.headers, body: text });
}

/**
 * Idle servers of one era: a server serves one request at a time, and building one (its tools'
 * schemas) costs more than the request, so a server goes back to the pool once its exchange
 * closed (the SDK's handler closes modern ones itself, after the answer).
 */
class ServerPool {
  private readonly idle: McpServer[] = [];

  constructor(private readonly build: () => McpServer) {}

  take(): McpServer {
    const reused = this.idle.pop();
    if (reused) return reused;
    const server = this.build();
    server.server.onclose = () => {
      if (this.idle.length < MAX_IDLE_SERVERS && !this.idle.includes(server)) {
        this.idle.push(server);
      }
    };
    return server;
  }
}

/** The `snapshot` tool: the URL policy first (never charged), then the paid call. */
async function snapshotTool(
  deps: McpRouteDeps,
  c: Context,
  raw: string,
  meta: Record<string, unknown> | undefined,
): Promise<{ result: McpToolResult; finish?: (delivered: boolean) => void }> {
  let target: SnapshotTarget;
  try {
    target = parseSnapshotTarget(raw, deps.urlPolicy);
  } catch (err) {
    if (err instanceof SnapshotError) return { result: errorResult(snapshotErrorBody(err, raw)) };
    throw err;
  }
  const signal = c.req.raw.signal;
  const run = (own: AbortSignal) => deps.work(target, own);
  const { payment } = deps;
  if (payment) {
    const call = JSON.stringify({ tool: MCP_TOOL_NAMES.snapshot, url: raw });
    const body = Buffer.from(call, "utf8");
    return payment.call({ meta, target, body, run, signal, admission: deps.admission });
  }
  const refused = deps.admission.enter();
  if (refused) return { result: failure(refused) };
  try {
    return { result: keptResult(await run(signal)) };
  } finally {
    deps.admission.leave();
  }
}

/** An error result carrying a PaymentRequired (its proof was refused). */
function isPaymentRequired(result: McpToolResult): boolean {
  return result.isError === true && Array.isArray(result.structuredContent?.["accepts"]);
}

/** A report, or the SnapshotError as an error result. */
function keptResult(answer: Answer): McpToolResult {
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  if (answer.status === 200) {
    return { content: [{ type: "text", text: answer.body }], structuredContent: body };
  }
  return errorResult(body);
}

function errorResult(body: object): McpToolResult {
  return {
    isError: true,
    structuredContent: body as Record<string, unknown>,
    content: [{ type: "text", text: JSON.stringify(body) }],
  };
}

/** A refusal of admission (busy, draining) as an error result saying to retry. */
function failure(answer: Answer): McpToolResult {
  const { error } = JSON.parse(answer.body) as { error: string };
  return { isError: true, content: [{ type: "text", text: error }] };
}
