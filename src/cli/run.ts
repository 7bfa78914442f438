import { StartupError } from "../config-error.js";
import { SERVICE_VERSION } from "../version.js";
import { UsageError, type Command, type CliIo } from "./command.js";

/**
 * The subcommands of `secsnap`; adding one is one entry here. Each is loaded on use, so a command
 * only pays for the modules it needs (the engine, hono, viem…), and `--help` for none of them.
 */
const COMMANDS: Record<string, { summary: string; load: () => Promise<Command> }> = {
  scan: {
    summary: "Run one snapshot locally (no payment) and print the report",
    load: async () => (await import("./scan.js")).scanCommand,
  },
  serve: {
    summary: "Start the HTTP API (configured by environment variables)",
    load: async () => (await import("./serve/command.js")).serveCommand,
  },
  pay: {
    summary: "Pay for one live snapshot with x402 and print the report",
    load: async () => (await import("./pay/command.js")).payCommand,
  },
  get: {
    summary: "Get a report paid for before again, free, signed in with the paying wallet",
    load: async () => (await import("./get/command.js")).getCommand,
  },
  mcp: {
    summary: "Serve MCP on stdio for MCP hosts: tools that pay the API for reports (x402)",
    load: async () => (await import("./mcp/command.js")).mcpCommand,
  },
  verify: {
    summary: "Check a paid report's signature against the service's keys (exit 0 or 1)",
    load: async () => (await import("./verify.js")).verifyCommand,
  },
  facilitator: {
    summary: "Run the x402 facilitator (verify and settle payments) from FACILITATOR_* variables",
    load: async () => (await import("./facilitator.js")).facilitatorCommand,
  },
};

function help(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((name) => name.length));
  return [
    `secsnap ${SERVICE_VERSION}: a JSON snapshot of a website's basic security hygiene`,
    "",
    "Usage: secsnap <command> [options]",
    "",
    "Commands:",
    ...names.map((name) => `  ${name.padEnd(width)}  ${COMMANDS[name]?.summary}`),
    "",
    "Options:",
    "  -h, --help     show this help (or `secsnap <command> --help`)",
    "  -v, --version  print the version",
    "",
  ].join("\n");
}

const isHelp = (arg: string | undefined) => arg === "--help" || arg === "-h";

/** Runs the CLI and returns its exit code: 0 ok, 1 bad usage or configuration, 2 see the command. */
export async function runCli(argv: string[], io: Omit<CliIo, "args">): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined) {
    io.stderr.write(help());
    return 1;
  }
  if (isHelp(name)) {
    io.stdout.write(help());
    return 0;
  }
  if (name === "--version" || name === "-v") {
    io.stdout.write(`${SERVICE_VERSION}\n`);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name]?.load : undefined;
  if (!load) {
    io.stderr.write(`secsnap: unknown command ${JSON.stringify(name)}\n\n${help()}`);
    return 1;
  }
  const command = await load();
  if (args.some(isHelp)) {
    io.stdout.write(command.usage + "\n");
    return 0;
  }
  try {
    return await command.run({ ...io, args });
  } catch (err) {
    // A bad variable, a busy port, a devnet that cannot start: the operator's to fix, one line.
    if (err instanceof StartupError) {
      io.stderr.write(`secsnap: ${err.message}\n`);
      return 1;
    }
    // node:util parseArgs reports unknown options and missing values with ERR_PARSE_ARGS_* codes.
    const code = (err as NodeJS.ErrnoException).code;
    if (err instanceof UsageError || code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr.write(`secsnap ${name}: ${(err as Error).message}\n\n${command.usage}\n`);
      return 1;
    }
    // A bug, not a user mistake: say so on stderr, with the stack to report.
    io.stderr.write(`secsnap ${name}: internal error: ${(err as Error).stack ?? String(err)}\n`);
    return 1;
  }
}
