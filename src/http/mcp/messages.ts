/**
 * What POST /mcp reads of a request before the SDK does (docs/mcp.md, "Budgets and batches"):
 * the body, bounded, so every message is seen once before any of it is answered; a JSON-RPC
 * batch is refused (MCP 2025-06-18 dropped batches), so one request is one message and one
 * budget unit; and only a `tools/call` of `snapshot` carrying a proof is paid work.
 */
import type { Context } from "hono";
import { readBodyText } from "../request-body.js";
import { MCP_TOOL_NAMES } from "./tools.js";
import type { McpRequestBody } from "./unpaid-fast-path.js";

/** Largest POST /mcp body read: a tools/call of one URL is far smaller. */
const MAX_MCP_BODY_BYTES = 64 * 1024;

/** The SDK's JSON-RPC error answer (no id: the request's is not known). */
function jsonRpcError(status: number, code: number, message: string): Response {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null });
  return new Response(body, { status, headers: { "content-type": "application/json" } });
}

/**
 * The body as the SDK would read it, at most MAX_MCP_BODY_BYTES (beyond: the SDK's 413); an
 * unreadable body (the client gone) is empty text, which the SDK answers as a parse error.
 */
export async function readMcpBody(c: Context): Promise<McpRequestBody | { answer: Response }> {
  const read = await readBodyText(c, MAX_MCP_BODY_BYTES);
  if (!read.ok && read.reason === "too_large") {
    const limit = `Payload Too Large: Request body must not exceed ${MAX_MCP_BODY_BYTES} bytes`;
    return { answer: jsonRpcError(413, -32000, limit) };
  }
  const text = read.ok ? read.text : "";
  try {
    return { read: true, parsed: true, value: JSON.parse(text) as unknown };
  } catch {
    return { read: true, parsed: false, text };
  }
}

/** Whether the body is a JSON-RPC batch (an array of messages). */
export function isBatch(body: McpRequestBody): boolean {
  return body.read && body.parsed && Array.isArray(body.value);
}

/** The answer to a batch: -32600 Invalid Request, HTTP 400, nothing in it answered. */
export function batchRefused(): Response {
  return jsonRpcError(400, -32600, "Invalid Request: batches are not supported");
}

/** The `_meta` of a `tools/call` of `snapshot` (the one paid tool), else undefined. */
export function snapshotCallMeta(message: unknown): Record<string, unknown> | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const { method, params } = message as {
    method?: unknown;
    params?: { name?: unknown; _meta?: unknown };
  };
  if (method !== "tools/call" || params?.name !== MCP_TOOL_NAMES.snapshot) return undefined;
  const meta = params._meta;
  return typeof meta === "object" && meta !== null ? (meta as Record<string, unknown>) : undefined;
}
