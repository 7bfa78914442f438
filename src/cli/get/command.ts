import { parseArgs } from "node:util";
import { PATHS } from "../../routes.js";
import { UsageError, type Command, type CliOutput } from "../command.js";
import { apiBase, checkKeyVariable } from "../pay/options.js";
import { keepReport, writablePath } from "../pay/receipt.js";
import { getSnapshotAgain, signInAccount, type SnapshotAgain } from "./again.js";

/** Exit codes of `secsnap get` (docs/contract.md §8). Bad usage or key is runCli's 1. */
const GET_EXIT = { report: 0, refused: 1, unavailable: 4 } as const;

export const getCommand: Command = {
  usage: [
    "Usage: secsnap get <snapshot_id> [--api http://127.0.0.1:8080] [--output FILE]",
    "",
    "Gets a report paid for before again, free, by the snapshot_id `secsnap pay` printed: it",
    "signs in (x402 sign-in-with-x) with the wallet that paid, the key in SECSNAP_PRIVATE_KEY",
    "(without it, anvil's test account 2, the devnet payer), and prints the report on stdout,",
    "the same bytes as the paid answer (`secsnap verify` checks them).",
    `--api     the service's base URL, path included; ${PATHS.snapshotAgain} is added to it.`,
    "--output  writes the report to FILE instead of stdout.",
    "Exit codes: 0 report printed, 1 bad usage or key, or refused (another wallet's report:",
    "not_payer; no report kept under this id; sign-in refused; a challenge for another origin,",
    "not signed), 4 service unavailable.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const { id, base, output } = readOptions(args);
    checkKeyVariable(env); // a bad key: one line before any network work
    const { account, note } = signInAccount(env.SECSNAP_PRIVATE_KEY?.trim() || undefined);
    if (note) stderr.write(`secsnap get: ${note}\n`);
    const again = await getSnapshotAgain(base, id, account);
    if (again.kind !== "report") return refusal(again, account.address, base, stderr);
    if (output === undefined) stdout.write(again.body);
    else keepReport(again.body, output, stdout, stderr, "get");
    return GET_EXIT.report;
  },
};

function readOptions(args: string[]): { id: string; base: URL; output: string | undefined } {
  const { positionals, values } = parseArgs({
    args,
    options: {
      api: { type: "string", default: "http://127.0.0.1:8080" },
      output: { type: "string" },
    },
    allowPositionals: true,
  });
  const [id, ...extra] = positionals;
  if (!id || extra.length > 0) throw new UsageError("give exactly one <snapshot_id>");
  return {
    id,
    base: apiBase(values.api),
    output: values.output === undefined ? undefined : writablePath(values.output, "--output"),
  };
}

/** One line saying why there is no report; the exit code. */
function refusal(
  again: Exclude<SnapshotAgain, { kind: "report" }>,
  address: string,
  base: URL,
  stderr: CliOutput,
): number {
  if (again.kind !== "refused") {
    stderr.write(`secsnap get: ${again.why}\n`);
    return again.kind === "unsigned" ? GET_EXIT.refused : GET_EXIT.unavailable;
  }
  const { status, code, why } = again;
  const hint =
    code === "not_payer"
      ? ` (signed in as ${address}: set SECSNAP_PRIVATE_KEY to the key that paid)`
      : code === "not_found"
        ? ` (asked under ${base.href}: --api is the service's base URL)`
        : "";
  stderr.write(`secsnap get: the API answered ${status}${code ? ` ${code}` : ""}: ${why}${hint}\n`);
  return status >= 400 && status < 429 ? GET_EXIT.refused : GET_EXIT.unavailable;
}
