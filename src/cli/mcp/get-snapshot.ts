/**
 * The `get_snapshot` tool of `secsnap mcp` (docs/mcp.md): a paid report again, free, signed in
 * with the wallet `snapshot` pays with, as `secsnap get` does (src/cli/get/again.ts). Loaded on
 * its first call, like the paying half.
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { getSnapshotAgain, signInAccount } from "../get/again.js";
import { summary } from "./payer.js";

const NOTHING_CHARGED = "Nothing was charged: getting a report again is free.";

export async function getSnapshot(
  base: URL,
  env: NodeJS.ProcessEnv,
  id: string,
  cancelled: AbortSignal,
  log: (line: string) => void,
): Promise<CallToolResult> {
  let signIn: ReturnType<typeof signInAccount>;
  try {
    signIn = signInAccount(env.SECSNAP_PRIVATE_KEY?.trim() || undefined);
  } catch (err) {
    return failure(`Not signed in: ${(err as Error).message}.`);
  }
  const { account, note } = signIn;
  if (note) log(note);
  const again = await getSnapshotAgain(base, id, account, cancelled);
  if (again.kind === "failed" || again.kind === "unsigned") {
    return failure(`No report: ${again.why}.`);
  }
  if (again.kind === "refused") {
    return failure(
      `The API answered ${again.status}${again.code ? ` ${again.code}` : ""}: ${again.why} ` +
        `(signed in as ${account.address}).`,
    );
  }
  let report: Record<string, unknown>;
  try {
    report = JSON.parse(again.body) as Record<string, unknown>;
  } catch {
    return failure("The API's answer is not JSON.");
  }
  return {
    content: [
      {
        type: "text",
        text: [summary(report), `Report ${id} again, free, signed in as ${account.address}.`]
          .concat(note ? [note] : [])
          .join("\n"),
      },
      { type: "text", text: again.body },
    ],
    structuredContent: report,
  };
}

function failure(why: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text: `${why}\n${NOTHING_CHARGED}` }] };
}
