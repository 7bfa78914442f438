/**
 * The unpaid `tools/call snapshot` on POST /mcp without the SDK's transport and McpServer: the
 * one hot unpaid MCP answer (an agent asking the price), which through the SDK cost ≈ 1.7× the
 * HTTP 402 (docs/benchmarks.md "MCP"). Its answer depends only on the configuration (the
 * payment's prepared PaymentRequired result) and the request's id, so it is serialized once, the
 * way the SDK serializes it, and the id spliced in.
 *
 * Only a request whose SDK answer cannot differ is taken: every check the SDK's transport makes
 * on it passes, it is one well-formed JSON-RPC tools/call of `snapshot` with exactly `{url}` as
 * arguments and no `_meta`, and its URL passes the URL policy (an invalid URL gets the SDK path's
 * SnapshotError). Anything else goes to the SDK, with the body already read and parsed. Such a
 * request speaks a 2025 revision (no `_meta` envelope, no 2026-07-28 version header): the
 * current revision's answer carries `resultType` and the server's identity besides, and its
 * requests always carry the envelope, so they all go to the SDK (docs/mcp.md, "Two eras").
 */
import { SUPPORTED_PROTOCOL_VERSIONS, specTypeSchemas } from "@modelcontextprotocol/server";
import type { Context } from "hono";
import type { McpToolResult } from "../../payment/index.js";
import { SnapshotError, parseInputUrl, type UrlPolicy } from "../../snapshot/index.js";
import { readBodyText } from "../request-body.js";
import { MCP_TOOL_NAMES } from "./tools.js";

/**
 * Largest body the route reads itself: a tools/call of one URL is far smaller. Larger (or
 * undeclared) bodies are left unread to the SDK, which applies its own limit and 413.
 */
const MAX_READ_BYTES = 16 * 1024;

/** What the route hands the SDK when the fast path does not answer. */
export type McpRequestBody =
  | { read: false }
  /** The body was read: parsed (the SDK's `parsedBody`), or its text when not JSON. */
  | { read: true; parsed: true; value: unknown }
  | { read: true; parsed: false; text: string };

export type UnpaidFastAnswer = { answer: Response } | { body: McpRequestBody };

/** The request's JSON-RPC id, when it is one the SDK accepts (a string or an integer). */
type RequestId = string | number;

/**
 * The fast path: `prepared()` gives the tool result an unpaid call gets right now (undefined when
 * it is not known without waiting).
 */
export class McpUnpaidFastPath {
  /** The serialized `result` per prepared result object (one, while the challenge holds). */
  private readonly serialized = new WeakMap<McpToolResult, string>();
  /** URLs known to pass the URL policy (pure: no DNS, no clock); bounded, cleared when full. */
  private readonly passing = new Set<string>();

  constructor(
    private readonly policy: UrlPolicy,
    private readonly prepared: () => McpToolResult | undefined,
  ) {}

  /** Answers the request, or returns its body (as far as read) for the SDK. */
  async answer(c: Context): Promise<UnpaidFastAnswer> {
    if (!this.sdkAcceptsHeaders(c)) return { body: { read: false } };
    const declared = c.req.header("content-length");
    if (declared === undefined || !(Number(declared) <= MAX_READ_BYTES)) {
      return { body: { read: false } };
    }
    const read = await readBodyText(c, MAX_READ_BYTES);
    const text = read.ok ? read.text : "";
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { body: { read: true, parsed: false, text } };
    }
    const body: McpRequestBody = { read: true, parsed: true, value };
    const id = this.unpaidSnapshotCallId(value);
    if (id === undefined) return { body };
    const result = this.prepared();
    if (!result) return { body };
    let serialized = this.serialized.get(result);
    if (serialized === undefined) {
      // As the SDK's Server does: the tool's result parsed by the CallToolResult schema (its key order).
      serialized = JSON.stringify(validCallToolResult(result));
      this.serialized.set(result, serialized);
    }
    // The SDK's Protocol answers `{result, jsonrpc, id}`, serialized by the transport.
    const json = `{"result":${serialized},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;
    return {
      answer: new Response(json, { status: 200, headers: { "Content-Type": "application/json" } }),
    };
  }

  /**
   * The transport's header checks (stateless, no DNS-rebinding protection): both media types
   * accepted (its substring check), the JSON content type (only the plain literal here), and a
   * 2025 protocol version or none (a 2026-07-28 one is the current revision's, checked there).
   */
  private sdkAcceptsHeaders(c: Context): boolean {
    const accept = c.req.header("accept");
    if (!accept?.includes("application/json") || !accept.includes("text/event-stream")) {
      return false;
    }
    if (c.req.header("content-type") !== "application/json") return false;
    const version = c.req.header("mcp-protocol-version");
    return version === undefined || SUPPORTED_PROTOCOL_VERSIONS.includes(version);
  }

  /** The id of a `{jsonrpc, id, method: "tools/call", params: {name: "snapshot", arguments: {url}}}`. */
  private unpaidSnapshotCallId(message: unknown): RequestId | undefined {
    if (!isPlainObject(message) || !hasExactly(message, REQUEST_KEYS)) return undefined;
    const { jsonrpc, id, method, params } = message;
    if (jsonrpc !== "2.0" || method !== "tools/call") return undefined;
    if (typeof id !== "string" && !(typeof id === "number" && Number.isSafeInteger(id))) {
      return undefined;
    }
    if (!isPlainObject(params) || !hasExactly(params, PARAMS_KEYS)) return undefined;
    if (params.name !== MCP_TOOL_NAMES.snapshot) return undefined;
    const args = params.arguments;
    if (!isPlainObject(args) || !hasExactly(args, ARGUMENTS_KEYS)) return undefined;
    if (typeof args.url !== "string" || !this.urlPasses(args.url)) return undefined;
    return id;
  }

  private urlPasses(url: string): boolean {
    if (this.passing.has(url)) return true;
    try {
      parseInputUrl(url, this.policy);
    } catch (err) {
      if (err instanceof SnapshotError) return false;
      throw err;
    }
    if (this.passing.size >= REMEMBERED_URLS) this.passing.clear();
    this.passing.add(url);
    return true;
  }
}

/** The result as the SDK's 2025-era codec writes it (its schema's key order). */
function validCallToolResult(result: McpToolResult): unknown {
  const checked = specTypeSchemas.CallToolResult["~standard"].validate(result);
  if (checked.issues) throw new Error(`not a CallToolResult: ${JSON.stringify(checked.issues)}`);
  return checked.value;
}

/** Distinct passing URLs remembered. */
const REMEMBERED_URLS = 256;

const REQUEST_KEYS = ["jsonrpc", "id", "method", "params"];
const PARAMS_KEYS = ["name", "arguments"];
const ARGUMENTS_KEYS = ["url"];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Exactly these own keys, in any order. */
function hasExactly(value: Record<string, unknown>, keys: readonly string[]): boolean {
  let count = 0;
  for (const key in value) {
    if (!keys.includes(key)) return false;
    count++;
  }
  return count === keys.length;
}
