/**
 * The README's sample report is one the service could send: the response schema accepts it (every
 * field, §9's sections included), and rebuilding it from its own parts gives it back unchanged —
 * the same key order, `checks` equal to the fields, and the score and grade its findings earn.
 * Each finding is the registry's, with its check, severity and recommendation. Its MCP host
 * snippets run the checkout's own `bin/secsnap.js`, never a package fetched by name, and each
 * starts the MCP server as a host would.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { expect, it } from "vitest";
import { ROOT, cleanEnv } from "../cli/run.js";
import { closedPort } from "../fixtures/targets.js";
import { SnapshotResultSchema } from "../../src/http/documents/report-schemas.js";
import { ALL_FINDINGS } from "../../src/snapshot/rules/registry.js";
import { buildReport, type SnapshotResult } from "../../src/snapshot/result.js";

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const LEAD = "A successful report looks like this:";

/** The ```json block that follows the lead sentence. */
function sampleReport(): SnapshotResult {
  const at = README.indexOf(LEAD);
  expect(at, `README.md says "${LEAD}"`).toBeGreaterThan(-1);
  const block = /```json\n([\s\S]*?)```/.exec(README.slice(at));
  if (!block?.[1]) throw new Error("no ```json block after the sample report's lead");
  return JSON.parse(block[1]) as SnapshotResult;
}

it("the README's sample report passes the response schema", () => {
  expect(SnapshotResultSchema.safeParse(sampleReport()).error).toBeUndefined();
});

it("the README's sample report is what its parts build, score and grade included", () => {
  const sample = sampleReport();
  const { notes, checks, findings, score, grade, tls, dns, cross_origin, ...rest } = sample;
  const facts = {
    requested_url: rest.requested_url,
    normalized_url: rest.normalized_url,
    final_url: rest.final_url,
    fetched_at: rest.fetched_at,
    reachable: rest.reachable,
    final_status_code: rest.final_status_code,
    redirect_count: rest.redirect_count,
  };
  const rebuilt = buildReport(facts, checks, notes, findings, { tls, dns, cross_origin });
  expect({ score, grade }).toEqual({ score: rebuilt.score, grade: rebuilt.grade });
  expect(JSON.stringify(sample, null, 2)).toBe(JSON.stringify(rebuilt, null, 2));
});

it("the README's sample findings are the registry's", () => {
  for (const finding of sampleReport().findings) {
    const def = ALL_FINDINGS.find((d) => d.id === finding.id);
    expect(def, finding.id).toBeDefined();
    expect(finding).toMatchObject({
      check: def?.check,
      severity: def?.severity,
      recommendation: def?.recommendation,
    });
  }
});

/** The path the snippets give for the checkout, which the user replaces with theirs. */
const CHECKOUT_PLACEHOLDER = "/path/to/secsnap";

interface HostServer {
  command: string;
  args: string[];
  env?: Record<string, string>;
}

/** The `secsnap` server of every ```json block in "## MCP hosts", in any host's shape. */
function mcpHostSnippets(): HostServer[] {
  const start = README.indexOf("## MCP hosts");
  const section = README.slice(start, README.indexOf("\n## ", start + 1));
  return [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((block) => {
    const config = JSON.parse(block[1]!) as {
      mcpServers?: { secsnap?: HostServer };
      servers?: { secsnap?: HostServer };
    };
    const server = config.mcpServers?.secsnap ?? config.servers?.secsnap;
    if (!server) throw new Error(`a snippet without a secsnap server: ${block[1]}`);
    return server;
  });
}

it("the README's MCP host snippets run the checkout's bin/secsnap.js, never npx", () => {
  const snippets = mcpHostSnippets();
  expect(snippets.length).toBeGreaterThanOrEqual(3);
  for (const server of snippets) {
    expect(server.command).toBe("node");
    expect(server.args[0]).toBe(`${CHECKOUT_PLACEHOLDER}/bin/secsnap.js`);
    expect(server.args[1]).toBe("mcp");
    expect(JSON.stringify(server)).not.toMatch(/npx/);
  }
});

it("each MCP host snippet, with this checkout's path, starts the server a host lists tools of", async () => {
  // No network: the snippets' --api is replaced by a closed local port (listing asks no API).
  const api = `http://127.0.0.1:${await closedPort("127.0.0.1")}`;
  for (const server of mcpHostSnippets()) {
    const args = server.args.map((arg, i) =>
      arg.startsWith(CHECKOUT_PLACEHOLDER)
        ? join(ROOT, arg.slice(CHECKOUT_PLACEHOLDER.length))
        : server.args[i - 1] === "--api"
          ? api
          : arg,
    );
    const env = Object.fromEntries(
      Object.entries(cleanEnv()).filter(
        (entry): entry is [string, string] =>
          entry[1] !== undefined && entry[0] !== "SECSNAP_PRIVATE_KEY",
      ),
    );
    const transport = new StdioClientTransport({ command: process.execPath, args, env, cwd: ROOT });
    const client = new Client({ name: "readme-snippet", version: "1.0.0" });
    try {
      await client.connect(transport);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([
        "demo_snapshot",
        "get_snapshot",
        "snapshot",
        "wallet",
      ]);
    } finally {
      await client.close();
    }
  }
}, 120_000);
