/**
 * A fast start for `secsnap mcp`: an MCP host sends `initialize` then `tools/list` and waits for
 * both before it offers the tools. Loading the SDK, zod and the report's schemas takes several
 * times a bare Node start, so the bundle carries the SDK's own answers to those two requests,
 * recorded by the build (server.ts, `recordListing`), and they are written from that record
 * while the SDK loads. Then the SDK's stdio transport reads every line read so far, as if it had
 * read them itself, and takes over (docs/mcp.md, "Start-up"). Without a record (the sources run
 * through tsx) the SDK answers everything. Nothing here imports the SDK.
 */
import { readFileSync } from "node:fs";
import { SERVICE_VERSION } from "../../version.js";

/** The recorded answers (`result` members), as JSON. */
export interface McpListing {
  version: string;
  /** By protocol version the SDK supports. */
  initialize: Record<string, unknown>;
  /** For a version it does not support (the SDK answers with its latest). */
  initializeOtherwise: unknown;
  toolsList: unknown;
}

/** What was done on stdin before the SDK was loaded: server.ts hands it to the SDK. */
export interface EarlySession {
  /** The whole lines read so far, in order: the SDK gets them first. */
  lines: string[];
  /** Then what was read after them, a part of a line perhaps. */
  rest: string;
  /** stdin has ended already. */
  ended: boolean;
  /** Requests already answered from the listing: the SDK's own answers to them are dropped. */
  answered: Set<string | number>;
}

/** Beside the bundle's chunks (dist/mcp-listing.json); absent when the sources run. */
const LISTING = new URL("../mcp-listing.json", import.meta.url);

export function readListing(): McpListing | undefined {
  try {
    const listing = JSON.parse(readFileSync(LISTING, "utf8")) as McpListing;
    return listing.version === SERVICE_VERSION ? listing : undefined;
  } catch {
    return undefined;
  }
}

interface Message {
  jsonrpc?: unknown;
  id?: string | number;
  method?: string;
  params?: { protocolVersion?: unknown };
}

/**
 * Reads stdin, answering `initialize` and `tools/list` from the listing, until the first
 * `tools/list` is answered or another request comes (or stdin ends): then the SDK is needed.
 * Resolves with what was read, for the SDK to read again.
 */
export function answerFirstRequests(listing: McpListing): Promise<EarlySession> {
  const lines: string[] = [];
  const answered = new Set<string | number>();
  // The listing's answers are the 2025 revisions': a tools/list is one only after `initialize`
  // (the current revision's session opens with server/discover or its envelope: the SDK's).
  let initialized = false;
  let partial = "";
  return new Promise((resolve) => {
    const handOver = (ended: boolean) => {
      process.stdin.off("data", onData);
      process.stdin.off("end", onEnd);
      process.stdin.pause();
      resolve({ lines, rest: partial, answered, ended });
    };
    const onEnd = () => handOver(true);
    const answer = (id: string | number, result: unknown) => {
      answered.add(id);
      process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`);
    };
    const onData = (chunk: Buffer) => {
      const parts = (partial + chunk.toString("utf8")).split("\n");
      partial = parts.pop() ?? "";
      for (const [index, raw] of parts.entries()) {
        const line = raw.replace(/\r$/, "");
        if (line.trim() === "") continue;
        lines.push(line);
        let message: Message | undefined;
        try {
          message = JSON.parse(line) as Message;
        } catch {
          message = undefined; // the SDK's transport reports it
        }
        const id = message?.id;
        const known =
          message?.jsonrpc === "2.0" && (typeof id === "string" || typeof id === "number");
        if (known && message?.method === "initialize") {
          initialized = true;
          const version = message.params?.protocolVersion;
          answer(
            id,
            (typeof version === "string" && listing.initialize[version]) ||
              listing.initializeOtherwise,
          );
        } else if (known && initialized && message?.method === "tools/list") {
          answer(id, listing.toolsList);
        } else if (message?.method !== "notifications/initialized") {
          // Anything else is the SDK's to answer; what follows is unread yet.
          partial = [...parts.slice(index + 1), partial].join("\n");
          handOver(false);
          return;
        }
        if (known && initialized && message?.method === "tools/list") {
          partial = [...parts.slice(index + 1), partial].join("\n");
          handOver(false);
          return;
        }
      }
    };
    process.stdin.on("data", onData);
    process.stdin.once("end", onEnd);
  });
}
