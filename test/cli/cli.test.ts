import { describe, expect, it } from "vitest";
import { closedPort } from "../fixtures/targets.js";
import { cleanEnv, runCli, runProcess } from "./run.js";

describe("secsnap CLI basics", () => {
  it("--help lists the commands and exits 0", async () => {
    const { code, stdout } = await runCli(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\s+scan\s+\S/m);
    expect(stdout).toMatch(/^\s+serve\s+\S/m);
    expect(stdout).toMatch(/^\s+facilitator\s+\S/m);
  });

  it("--version prints 1.0.0", async () => {
    const { code, stdout } = await runCli(["--version"]);
    expect(code).toBe(0);
    expect(stdout.trim()).toBe("1.0.0");
  });

  it("scan --help shows the scan usage", async () => {
    const { code, stdout } = await runCli(["scan", "--help"]);
    expect(code).toBe(0);
    expect(stdout).toContain("secsnap scan <url>... [--local] [--format FORMAT] [--output FILE]");
  });

  it.each([
    [[] as string[], /Usage: secsnap <command>/],
    [["frobnicate"], /unknown command "frobnicate"/],
    [["scan"], /at least one <url>/],
    [["scan", "--bogus", "example.com"], /bogus/],
    [["serve", "extra"], /no arguments/],
  ])("bad usage %j exits 1 with a message on stderr", async (args, message) => {
    const { code, stderr, stdout } = await runCli(args);
    expect(code).toBe(1);
    expect(stderr).toMatch(message);
    expect(stdout).toBe("");
  });

  it.each([
    [["serve"], { PORT: "eighty" }, /^secsnap: PORT /],
    [["serve"], { X402_PAY_TO: "0x123" }, /^secsnap: X402_PAY_TO /],
    // Local mode is for development: with real money (production mode) it is refused.
    [
      ["serve", "--allow-local"],
      { X402_PAY_TO: `0x${"ab".repeat(20)}`, X402_FACILITATOR_URL: "https://f.example" },
      /^secsnap: SNAPSHOT_ALLOW_LOCAL .*X402_PAY_TO/,
    ],
    [["scan", "example.com"], { SNAPSHOT_TIMEOUT_MS: "soon" }, /^secsnap: SNAPSHOT_TIMEOUT_MS /],
    [["facilitator"], {}, /^secsnap: FACILITATOR_RPC_URL /],
    [
      ["facilitator"],
      // Nothing listens on port 1: an unreachable RPC is one line, not a stack trace.
      { FACILITATOR_RPC_URL: "http://127.0.0.1:1", FACILITATOR_PRIVATE_KEY: `0x${"a".repeat(64)}` },
      /^secsnap facilitator: FACILITATOR_RPC_URL did not answer/,
    ],
  ])(
    "bad configuration for %j exits 1 with one line naming the variable",
    async (args, env, line) => {
      const { code, stderr } = await runCli(args, cleanEnv(env));
      expect(code).toBe(1);
      expect(stderr.trim().split("\n")).toHaveLength(1);
      expect(stderr).toMatch(line);
    },
  );

  it("pay against an API that is not running exits 4 (service unavailable) and says where it looked", async () => {
    const api = `http://127.0.0.1:${await closedPort("127.0.0.1")}`;
    const { code, stderr } = await runCli(["pay", "https://example.com", "--api", api], cleanEnv());
    expect(code).toBe(4);
    expect(stderr).toContain(`ECONNREFUSED`);
    expect(stderr).toContain(`is the service running at ${api}?`);
  });

  it.each([
    [["--version"], 0],
    [["frobnicate"], 1],
    [["scan", "ftp://example.com/", "--json"], 2],
  ])("the real process %j exits with the code the CLI returns (%d)", async (args, exitCode) => {
    const inProcess = await runCli(args);
    const real = await runProcess(args);
    expect(inProcess.code).toBe(exitCode);
    expect(real).toEqual(inProcess);
  });
});
