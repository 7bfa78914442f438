import { parseArgs } from "node:util";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { parseUnits } from "viem";
import type { LocalAccount } from "viem/accounts";
import { USDC_DECIMALS } from "../../devnet/index.js";
import { ConfigError } from "../../config-error.js";
import { PATHS } from "../../routes.js";
import { UsageError, type Command, type CliOutput } from "../command.js";
import { chargeOnChain as readCharge, networkLabel, usdc } from "./charge.js";
import {
  PaymentRefused,
  challengeOf,
  chooseAccount,
  chooseOffer,
  describeBody,
  signProof,
  type SignedProof,
} from "./offer.js";
import { keepProofOfPurchase, keepReport, receiptBeside, writablePath } from "./receipt.js";
import {
  NETWORK_NAMES,
  checkKeyVariable,
  httpUrl,
  parseNetwork,
  snapshotEndpoint,
  usdcOption,
} from "./options.js";
import {
  ANSWER_TIMEOUT_S,
  DEFAULT_PAY_TIMEOUT_S,
  Interrupts,
  MAX_SENDS,
  ask,
  inProgress,
  noAnswer,
  sendPaid,
  type Answer,
} from "./send.js";
/** Exit codes of `secsnap pay` (docs/contract.md §8). Bad usage is runCli's 1. */
const PAY_EXIT = {
  report: 0,
  snapshotError: 2,
  paymentRefused: 3,
  unavailable: 4,
  /** Ctrl-C: what a shell reports for a process SIGINT ended (128 + 2). */
  interrupted: 130,
} as const;

/** Longest a chain reading may take; shorter after a Ctrl-C (the user wants out). */
const CHAIN_READ_S = 30;
const CHAIN_READ_INTERRUPTED_S = 5;

/** The exit code and line for an answer other than the report. */
function refusal(response: Response, body: unknown, stderr: CliOutput, endpoint: URL): number {
  // A 404 is a wrong --api far more often than a missing route: say which URL was asked.
  const hint =
    response.status === 404
      ? ` (asked ${endpoint.href}: --api is the service's base URL, ${PATHS.snapshot} is added to it)`
      : "";
  stderr.write(`secsnap pay: the API answered ${response.status}: ${describeBody(body)}${hint}\n`);
  if (response.status === 400) return PAY_EXIT.snapshotError;
  if (response.status === 402) return PAY_EXIT.paymentRefused;
  return PAY_EXIT.unavailable;
}

/** The last line of every failure before a proof left this process. */
function nothingCharged(code: number, stderr: CliOutput, why = "nothing was signed"): number {
  stderr.write(`secsnap pay: nothing was charged (${why})\n`);
  return code;
}

export const payCommand: Command = {
  usage: [
    "Usage: secsnap pay <url> [--api http://127.0.0.1:8080] [--max-usdc 1] [--network base|base-sepolia] [--v1] [--json] [--rpc URL] [--timeout 300] [--output FILE] [--receipt FILE]",
    "",
    "Asks the API for a snapshot of <url>, pays its x402 challenge (USDC, scheme exact) with the",
    "key in SECSNAP_PRIVATE_KEY and prints the report on stdout; the network, amount and payee",
    "(before signing), the report's snapshot_id and the settlement transaction go to stderr.",
    `--api      the service's base URL, path included; ${PATHS.snapshot} is added unless it ends so.`,
    "--network  the network to pay on. Default: a testnet when one is offered; Base mainnet only",
    "           when asked for or when it is the only network offered.",
    "--max-usdc refuses to sign for more than that amount (default 1).",
    "--v1       pays with the legacy protocol (x402 v1: the 402 body, X-PAYMENT, X-PAYMENT-RESPONSE).",
    "--json     always print the report as JSON (on a terminal it is a readable summary).",
    "--rpc      the offer's chain's JSON-RPC URL, read when a signed proof got no report (its",
    "           chain id checked). Default: 127.0.0.1:8545 for a devnet offer of an API on this",
    "           machine, else Base's public RPC.",
    `--timeout  seconds to keep sending the signed proof for its answer (default ${DEFAULT_PAY_TIMEOUT_S}).`,
    "--output   writes the report (JSON) to FILE instead of stdout.",
    "--receipt  writes the settlement response, with the service's signed receipt, to FILE (JSON);",
    "           default with --output: beside it, report.json → report.receipt.json.",
    "Without SECSNAP_PRIVATE_KEY it pays only a service in devnet mode (the challenge marks it),",
    "from anvil's funded test account 2. One proof is signed per call, with a fresh payment id:",
    "after a 503, a 409 in progress or a lost answer the same proof is sent again (at most",
    `${MAX_SENDS} sends, honouring Retry-After). Every failure ends with a line saying whether`,
    "anything was charged: once a proof was sent, the chain's word, never the API's.",
    "Exit codes: 0 report printed, 1 bad usage or key, 2 SnapshotError (the API's 400),",
    "3 payment refused (by --max-usdc or --network before signing, or by the API's 402),",
    "4 service unavailable (unreachable, 503 after the retries, 429, any other answer),",
    "130 interrupted (Ctrl-C).",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const options = readOptions(args);
    checkKeyVariable(env); // a bad key: one line before any network work
    const interrupts = new Interrupts(stderr);
    try {
      return await pay(options, env, stdout, stderr, interrupts);
    } finally {
      interrupts.dispose();
    }
  },
};

async function pay(
  options: PayOptions,
  env: NodeJS.ProcessEnv,
  stdout: CliOutput,
  stderr: CliOutput,
  interrupts: Interrupts,
): Promise<number> {
  const unpaid = await fetchChallenge(options, stderr, interrupts);
  if (typeof unpaid === "number") return nothingCharged(unpaid, stderr);
  const payment = choosePayment(unpaid, options, stderr);
  if (typeof payment === "number") return nothingCharged(payment, stderr);
  const { offer } = payment;
  let account: LocalAccount;
  try {
    account = choosePayer(env, offer, stderr);
  } catch (err) {
    if (!(err instanceof UsageError || err instanceof ConfigError)) throw err;
    // Not runCli's usage text: the key is the problem, and this line must stay the last.
    stderr.write(`secsnap pay: ${err.message}\n`);
    return nothingCharged(1, stderr);
  }
  // Signed once: every resend below carries this same proof and id, so one call pays at most once.
  const paid = await signProof(payment.challenge, offer, account);
  if (interrupts.beforeSending.aborted) {
    stderr.write("secsnap pay: interrupted\n");
    return nothingCharged(PAY_EXIT.interrupted, stderr, "the signed proof was never sent");
  }
  interrupts.startSending();
  try {
    return await sendProof(paid, offer, options, env, stdout, stderr, interrupts);
  } catch (err) {
    // A bug once the proof may have left: the line saying what was charged still comes last.
    stderr.write(`secsnap pay: internal error: ${(err as Error).stack ?? String(err)}\n`);
    stderr.write(`secsnap pay: ${await chargeOnChain(paid, offer, options, env, interrupts)}\n`);
    return 1;
  }
}

/** The signed proof sent (and resent) for the report; a failure ends with what was charged. */
async function sendProof(
  paid: SignedProof,
  offer: PaymentRequirements,
  options: PayOptions,
  env: NodeJS.ProcessEnv,
  stdout: CliOutput,
  stderr: CliOutput,
  interrupts: Interrupts,
): Promise<number> {
  const sent = await sendPaid(
    (signal) => ask(options.endpoint, options.target, paid.proof, signal),
    options.timeoutS,
    interrupts,
    (line) => stderr.write(`secsnap pay: ${line}\n`),
    (answer) => describeBody(answer.body),
  );
  const { answer } = sent;
  if (answer?.response.status === 200) {
    if (options.output === undefined) {
      stdout.write(await printable(answer.body, options.json, stdout, env));
    } else {
      keepReport(`${JSON.stringify(answer.body, null, 2)}\n`, options.output, stdout, stderr);
    }
    const settlement = paid.settlement(answer.response);
    keepProofOfPurchase(answer.body, settlement, options.receipt, stderr);
    reportSettlement(settlement, offer, stderr);
    return PAY_EXIT.report;
  }
  // An answer that ends the sends by itself (not a 503 or a 409 in progress) is reported as such,
  // even after a first Ctrl-C: it is what the user waited for.
  const final = answer && answer.response.status !== 503 && !inProgress(answer);
  let code: number;
  if (answer && (final || !interrupts.interrupted)) {
    code = refusal(answer.response, answer.body, stderr, options.endpoint);
  } else if (interrupts.interrupted) {
    const last = answer ? `the last answer was ${answer.response.status}` : sent.lost;
    stderr.write(`secsnap pay: interrupted (${last ?? "no answer"})\n`);
    code = PAY_EXIT.interrupted;
  } else {
    code = lostAnswer(sent.lost ?? "no answer", sent.sends, options, stderr);
  }
  // Whatever the answer says, only the chain tells whether the proof was charged: an API may
  // settle a proof and still answer 402 or 409.
  stderr.write(`secsnap pay: ${await chargeOnChain(paid, offer, options, env, interrupts)}\n`);
  return code;
}

/** The charge line read on chain, for a proof that left without a report. */
async function chargeOnChain(
  paid: SignedProof,
  offer: PaymentRequirements,
  options: PayOptions,
  env: NodeJS.ProcessEnv,
  interrupts: Interrupts,
): Promise<string> {
  const bound = interrupts.interrupted ? CHAIN_READ_INTERRUPTED_S : CHAIN_READ_S;
  interrupts.startReading();
  const signal = AbortSignal.any([AbortSignal.timeout(bound * 1000), interrupts.readingChain]);
  return (await readCharge(paid.authorization, offer, options.rpc, options.endpoint, env, signal))
    .line;
}

/** The command line, checked: a bad argument is a UsageError. */
interface PayOptions {
  /** The URL to snapshot. */
  target: string;
  /** `--api` as given, and the snapshot route under it. */
  api: string;
  endpoint: URL;
  maxUsdc: string;
  /** `--network` as a CAIP-2 id; undefined: the default choice of chooseOffer. */
  network: string | undefined;
  v1: boolean;
  json: boolean;
  /** `--rpc`; undefined: chainRpc's default for the offer. */
  rpc: string | undefined;
  /** `--timeout`: seconds for the paid sends. */
  timeoutS: number;
  /** `--output`, resolved: where the report is kept instead of stdout. */
  output: string | undefined;
  /** `--receipt`, resolved (default beside `--output`): where the settlement and its receipt are kept. */
  receipt: string | undefined;
}

function readOptions(args: string[]): PayOptions {
  const { positionals, values } = parseArgs({
    args,
    options: {
      api: { type: "string", default: "http://127.0.0.1:8080" },
      "max-usdc": { type: "string", default: "1" },
      network: { type: "string" },
      v1: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      rpc: { type: "string" },
      timeout: { type: "string", default: String(DEFAULT_PAY_TIMEOUT_S) },
      output: { type: "string" },
      receipt: { type: "string" },
    },
    allowPositionals: true,
  });
  const [target, ...extra] = positionals;
  if (target === undefined || extra.length > 0) throw new UsageError("give exactly one <url>");
  const endpoint = snapshotEndpoint(values.api);
  const maxUsdc = usdcOption(values["max-usdc"], "--max-usdc");
  const network = values.network === undefined ? undefined : parseNetwork(values.network);
  if (values.rpc !== undefined) httpUrl(values.rpc, "--rpc");
  if (!/^\d{1,5}$/.test(values.timeout) || Number(values.timeout) < 1) {
    throw new UsageError("--timeout must be a whole number of seconds, at least 1");
  }
  return {
    target,
    api: values.api,
    endpoint,
    maxUsdc,
    network,
    v1: values.v1,
    json: values.json,
    rpc: values.rpc,
    timeoutS: Number(values.timeout),
    ...keptFiles(values.output, values.receipt),
  };
}

/** `--output` and `--receipt` (default beside `--output`), checked before anything is signed. */
function keptFiles(
  output: string | undefined,
  receipt: string | undefined,
): Pick<PayOptions, "output" | "receipt"> {
  const report = output === undefined ? undefined : writablePath(output, "--output");
  const beside = receipt ?? (report === undefined ? undefined : receiptBeside(report));
  const kept = beside && writablePath(beside, "--receipt");
  if (kept !== undefined && kept === report) {
    throw new UsageError("--output and --receipt name the same file");
  }
  return { output: report, receipt: kept };
}

/** No answer from the API: one line, with a hint when nothing listens at `--api`. */
function unreachable(why: string, options: PayOptions, stderr: CliOutput): number {
  const hint = /ECONNREFUSED/.test(why)
    ? `; is the service running at ${options.api}? (--api URL)`
    : "";
  stderr.write(`secsnap pay: ${why}${hint}\n`);
  return PAY_EXIT.unavailable;
}

/** The last paid send got no answer; the chain's line follows it. */
function lostAnswer(why: string, sends: number, options: PayOptions, stderr: CliOutput): number {
  const hint = /ECONNREFUSED/.test(why) ? `; is the service still running at ${options.api}?` : "";
  stderr.write(
    `secsnap pay: the service did not answer the signed proof after ${sends} sends (${why}${hint}); ` +
      "whether you were charged is what the chain says, on the next line\n",
  );
  return PAY_EXIT.unavailable;
}

/**
 * The 402 of an unpaid first call, or the exit code. It shows the challenge before any key is
 * chosen; input errors come back as 400 here, before anything is signed.
 */
async function fetchChallenge(
  options: PayOptions,
  stderr: CliOutput,
  interrupts: Interrupts,
): Promise<Answer | number> {
  let unpaid: Answer;
  try {
    const timeout = AbortSignal.timeout(ANSWER_TIMEOUT_S * 1000);
    const signal = AbortSignal.any([timeout, interrupts.beforeSending]);
    unpaid = await ask(options.endpoint, options.target, {}, signal);
  } catch (err) {
    if (interrupts.beforeSending.aborted) {
      stderr.write("secsnap pay: interrupted\n");
      return PAY_EXIT.interrupted;
    }
    return unreachable(noAnswer(err), options, stderr);
  }
  if (unpaid.response.status !== 402) {
    return refusal(unpaid.response, unpaid.body, stderr, options.endpoint);
  }
  return unpaid;
}

/**
 * The challenge to sign and the offer chosen from it, within `--max-usdc`; or exit 3 with the
 * reason, before anything is signed.
 */
function choosePayment(
  unpaid: Answer,
  options: PayOptions,
  stderr: CliOutput,
): { challenge: PaymentRequired; offer: PaymentRequirements } | number {
  try {
    let challenge = challengeOf(unpaid);
    const offer = chooseOffer(
      challenge,
      options.network === undefined ? undefined : [options.network],
    );
    // --v1 signs the body's x402 v1 challenge for the offer chosen above.
    if (options.v1) challenge = v1Challenge(unpaid.body, offer);
    if (BigInt(offer.amount) > parseUnits(options.maxUsdc, USDC_DECIMALS)) {
      throw new PaymentRefused(`price ${usdc(offer.amount)} exceeds --max-usdc ${options.maxUsdc}`);
    }
    return { challenge, offer };
  } catch (err) {
    stderr.write(`secsnap pay: ${(err as Error).message}\n`);
    return PAY_EXIT.paymentRefused;
  }
}

/** The payer's account, stated on stderr with what it is about to pay. */
function choosePayer(
  env: NodeJS.ProcessEnv,
  offer: PaymentRequirements,
  stderr: CliOutput,
): LocalAccount {
  const { account, note } = chooseAccount(env.SECSNAP_PRIVATE_KEY?.trim() || undefined, offer);
  if (note) stderr.write(`${note}\n`);
  stderr.write(
    `paying ${usdc(offer.amount)} on ${networkLabel(offer.network)} to ${offer.payTo} from ${account.address}\n`,
  );
  return account;
}

/** What was charged, naming the settlement transaction, on stderr; the report's 200 means settled. */
function reportSettlement(
  settlement: SettleResponse | undefined,
  offer: PaymentRequirements,
  stderr: CliOutput,
): void {
  const charged = `secsnap pay: charged ${usdc(offer.amount)} (${offer.amount} units of ${offer.asset})`;
  stderr.write(
    settlement
      ? `${charged} on ${networkLabel(settlement.network)} to ${offer.payTo}; ` +
          `settlement transaction: ${settlement.transaction}\n`
      : `${charged} on ${networkLabel(offer.network)} to ${offer.payTo}: a report is sent only ` +
          "once settled; its settlement header was unreadable, so the transaction is not named\n",
  );
}

/**
 * A report as `scan` shows it on a terminal, anything else as JSON. The summary's modules (the
 * report schema, the checks) are loaded only for a terminal.
 */
async function printable(
  body: unknown,
  json: boolean,
  stdout: CliOutput,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  if (!json && stdout.isTTY) {
    const [{ SnapshotResultSchema }, { formatReport, useColor }] = await Promise.all([
      import("../../http/index.js"),
      import("../format.js"),
    ]);
    const report = SnapshotResultSchema.safeParse(body);
    if (report.success) return formatReport(report.data, useColor(stdout, env));
  }
  return `${JSON.stringify(body, null, 2)}\n`;
}

/**
 * The x402 v1 challenge of a 402 body, narrowed to the entry for the network of `offer` (v1
 * names networks `base` / `base-sepolia`). The SDK's client signs v1 through the same scheme
 * registration and sends it as `X-PAYMENT`.
 */
function v1Challenge(body: unknown, offer: PaymentRequirements): PaymentRequired {
  const v1 = new x402HTTPClient(new x402Client()).getPaymentRequiredResponse(() => null, body);
  if (v1.x402Version !== 1) {
    throw new PaymentRefused("the API's 402 body is not an x402 v1 challenge");
  }
  const name = NETWORK_NAMES[offer.network];
  const entry = v1.accepts.find((a) => a.network === name);
  if (!entry) throw new PaymentRefused(`the x402 v1 challenge offers no payment on ${name}`);
  return { ...v1, accepts: [entry] };
}
