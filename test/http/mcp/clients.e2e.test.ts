/**
 * POST /mcp with the MCP ecosystem's own tools: the MCP Inspector's CLI (lists the tools, calls
 * demo_snapshot) and the MCP conformance suite's server checks (docs/mcp.md, "Conformance").
 * The service is wired as `secsnap serve` wires it; no tool here pays, so its facilitator is a
 * closed port.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import conformanceSuite from "@modelcontextprotocol/conformance/package.json" with { type: "json" };
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningServer } from "../../../src/http/index.js";
import {
  startLocalTarget,
  startPaidService,
  type LocalTarget,
} from "../../fixtures/paid-service.js";
import { outputOf, type ChildOutput } from "../../fixtures/child-output.js";
import { closedPort } from "../../fixtures/targets.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

let target: LocalTarget;
let service: RunningServer;

beforeAll(async () => {
  target = await startLocalTarget();
  service = await startPaidService({
    engine: target.engine,
    ports: [target.port],
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    networks: ["eip155:84532"],
    facilitatorUrl: `http://127.0.0.1:${await closedPort("127.0.0.1")}`,
    devnet: true,
  });
});

afterAll(async () => {
  await service?.close(1_000);
  await target?.close();
});

/** Runs a program from node_modules/.bin one level below the checkout; its exit code and output. */
async function run(bin: string, args: string[], nodeArgs: string[] = []): Promise<ChildOutput> {
  const path = join(ROOT, "node_modules", ".bin", bin);
  const child = spawn(process.execPath, [...nodeArgs, path, ...args], {
    // The Inspector CLI's v1 finds its own package.json relative to the working directory's parent.
    cwd: join(ROOT, "test"),
    env: { ...process.env, NO_COLOR: "1" },
  });
  return outputOf(child);
}

describe("the MCP Inspector's CLI against POST /mcp", () => {
  async function inspect(method: string[]): Promise<unknown> {
    const { code, stdout, stderr } = await run("mcp-inspector-cli", [
      "--cli",
      `${service.url}/mcp`,
      "--transport",
      "http",
      "--method",
      ...method,
    ]);
    expect(code, stderr).toBe(0);
    return JSON.parse(stdout) as unknown;
  }

  // Two runs of an outside CLI, each starting Node twice: slow on a busy machine.
  it("lists the tools and calls demo_snapshot", { timeout: 90_000 }, async () => {
    const listed = (await inspect(["tools/list"])) as { tools: Tool[] };
    expect(listed.tools.map((t) => t.name).sort()).toEqual(["demo_snapshot", "snapshot"]);
    const demo = (await inspect(["tools/call", "--tool-name", "demo_snapshot"])) as CallToolResult;
    expect(demo.isError).toBeFalsy();
    expect(demo.structuredContent).toMatchObject({ _demo: true });
  });
});

/**
 * The suite's server scenarios that apply to a stateless server with tools only. The others
 * need what this server does not offer (docs/mcp.md, "Conformance"): logging, completions,
 * resources, prompts, the conformance suite's own test tools (images, audio, sampling,
 * elicitation, progress…), SSE streams and sessions.
 */
const APPLICABLE_SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "dns-rebinding-protection",
] as const;

describe("the MCP conformance suite's server checks against POST /mcp", () => {
  it.each(APPLICABLE_SCENARIOS)("%s passes", async (scenario) => {
    const out = mkdtempSync(join(tmpdir(), "secsnap-conformance-"));
    try {
      // The project's own suite (the devDependency) is what that name runs.
      expect(conformanceSuite.bin.conformance).toBe("dist/index.js");
      const { code, stdout, stderr } = await run(
        "conformance",
        ["server", "--url", `${service.url}/mcp`, "--scenario", scenario, "-o", out],
        ["--import", join(ROOT, "test", "fixtures", "conformance-on-node20.mjs")],
      );
      const checks = readdirSync(out).flatMap((dir) => {
        const file = join(out, dir, "checks.json");
        return JSON.parse(readFileSync(file, "utf8")) as { id: string; status: string }[];
      });
      expect(checks.length, stdout + stderr).toBeGreaterThan(0);
      const failed = checks.filter((c) => c.status === "FAILURE" || c.status === "ERROR");
      expect(failed, stdout + stderr).toEqual([]);
      expect(code, stdout + stderr).toBe(0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
