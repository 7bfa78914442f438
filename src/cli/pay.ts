import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { getDefaultAsset } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { formatUnits, parseUnits } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { LocalAccount } from "viem/accounts";
import { NETWORK_IDS } from "../config.js";
import { DEFAULT_PAYER, DEVNET_NETWORK, USDC_DECIMALS } from "../devnet/index.js";
import { UsageError, type Command, type CliOutput } from "./command.js";

/** Exit codes of `secsnap pay` (docs/contract.md §8). Bad usage is runCli's 1. */
const PAY_EXIT = {
  report: 0,
  snapshotError: 2,
  paymentRefused: 3,
  unavailable: 4,
} as const;

/** Sends of one signed proof at most: a 503 or a lost answer is retried with the same proof. */
const PAID_ATTEMPTS = 4;
/** Longest wait honoured from a `Retry-After`, so a hostile value cannot hold the command. */
const MAX_RETRY_WAIT_S = 30;
/** Wait before resending after a lost connection (no `Retry-After` to honour). */
const LOST_ANSWER_WAIT_S = 2;
/** Characters of a refusal's body shown on stderr. */
const MAX_BODY_SHOWN = 2_000;

const MAINNET = NETWORK_IDS.base;
const NETWORK_NAMES: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(NETWORK_IDS).map(([name, id]) => [id, name]),
);

/** "base-sepolia (eip155:84532)", or the bare id of a network without a name. */
function networkLabel(network: string): string {
  const name = NETWORK_NAMES[network];
  return name ? `${name} (${network})` : network;
}

function usdc(units: string | bigint): string {
  return `${formatUnits(BigInt(units), USDC_DECIMALS)} USDC`;
}

/** A `--network` value as a CAIP-2 id: `base`, `base-sepolia` or the id itself. */
function parseNetwork(value: string): string {
  const id = (NETWORK_IDS as Record<string, string>)[value] ?? value;
  if (!NETWORK_NAMES[id]) {
    throw new UsageError(
      `--network must be one of ${Object.keys(NETWORK_IDS).join(", ")} (got ${JSON.stringify(value)})`,
    );
  }
  return id;
}

/** An offer this command can pay: exact USDC (the SDK's address for that network), an amount. */
function payable(offer: PaymentRequirements): boolean {
  if (offer.scheme !== "exact" || !NETWORK_NAMES[offer.network]) return false;
  const usdcAsset = getDefaultAsset(offer.network).asset;
  return (
    offer.asset.toLowerCase() === usdcAsset.toLowerCase() &&
    /^\d{1,30}$/.test(offer.amount) &&
    /^0x[0-9a-fA-F]{40}$/.test(offer.payTo)
  );
}

/** Refused before anything is signed or after the service said no: exit 3 with this line. */
class PaymentRefused extends Error {
  override name = "PaymentRefused";
}

/**
 * The offer to pay. Base mainnet only when asked for (`--network base`) or when it is the only
 * payable offer: with a testnet offered too, real money is never the default.
 */
function chooseOffer(challenge: PaymentRequired, wanted: string | undefined): PaymentRequirements {
  const offers = challenge.accepts.filter(payable);
  const offered = challenge.accepts.map((a) => `${a.scheme} on ${networkLabel(a.network)}`);
  if (wanted !== undefined) {
    const match = offers.find((o) => o.network === wanted);
    if (!match) {
      throw new PaymentRefused(
        `--network ${NETWORK_NAMES[wanted]} is not offered by the API (it offers ${offered.join(", ") || "nothing"})`,
      );
    }
    return match;
  }
  const offer = offers.find((o) => o.network !== MAINNET) ?? offers[0];
  if (!offer) {
    throw new PaymentRefused(
      `the API offers no payment this client can make (USDC, scheme exact, on ${Object.keys(NETWORK_IDS).join(" or ")}); it offers ${offered.join(", ") || "nothing"}`,
    );
  }
  return offer;
}

/**
 * The payer. The devnet's public test key only when the service marks the offer as its devnet
 * (`extra.devnet`, docs/contract.md §7.7) on the devnet chain: Base Sepolia alone is a real
 * testnet, where a public key's funds are anyone's.
 */
function chooseAccount(
  key: string | undefined,
  offer: PaymentRequirements,
): { account: LocalAccount; note?: string } {
  if (key) {
    if (!/^0x[0-9a-fA-F]{64}$/.test(key)) {
      throw new UsageError("SECSNAP_PRIVATE_KEY must be a 0x-prefixed 32-byte hex private key");
    }
    return { account: privateKeyToAccount(key as `0x${string}`) };
  }
  if (offer.extra?.devnet === true && offer.network === DEVNET_NETWORK) {
    const account = privateKeyToAccount(DEFAULT_PAYER.privateKey);
    return {
      account,
      note: `devnet: paying from anvil test account ${DEFAULT_PAYER.index} (${account.address}); set SECSNAP_PRIVATE_KEY to use another`,
    };
  }
  throw new UsageError(
    `the API asks for payment on ${networkLabel(offer.network)}: set SECSNAP_PRIVATE_KEY to the payer's private key`,
  );
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** An answer's body for one stderr line: no control characters from the service, bounded. */
function describeBody(body: unknown): string {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ").slice(0, MAX_BODY_SHOWN);
}

/** Seconds to wait as the answer asks (`Retry-After` in seconds), within MAX_RETRY_WAIT_S. */
function retryWait(response: Response): number {
  const header = response.headers.get("retry-after")?.trim() ?? "";
  const seconds = /^\d+$/.test(header) ? Number(header) : NaN;
  return Number.isFinite(seconds) ? Math.min(seconds, MAX_RETRY_WAIT_S) : LOST_ANSWER_WAIT_S;
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? ` (${cause.message})` : "";
}

/** The exit code and line for an answer other than the report. */
function refusal(response: Response, body: unknown, stderr: CliOutput): number {
  stderr.write(`secsnap pay: the API answered ${response.status}: ${describeBody(body)}\n`);
  if (response.status === 400) return PAY_EXIT.snapshotError;
  if (response.status === 402) return PAY_EXIT.paymentRefused;
  return PAY_EXIT.unavailable;
}

export const payCommand: Command = {
  usage: [
    "Usage: secsnap pay <url> [--api http://127.0.0.1:8080] [--max-usdc 1] [--network base|base-sepolia] [--v1] [--json]",
    "",
    "Asks the API for a snapshot of <url>, pays its x402 challenge (USDC, scheme exact) with the",
    "key in SECSNAP_PRIVATE_KEY and prints the report on stdout; the network, amount and payee",
    "(before signing) and the settlement transaction go to stderr.",
    "--api      the service's base URL, path included (…/v1/snapshot is appended to it).",
    "--network  the network to pay on. Default: a testnet when one is offered; Base mainnet only",
    "           when asked for or when it is the only network offered.",
    "--max-usdc refuses to sign for more than that amount (default 1).",
    "--v1       pays with the legacy protocol (x402 v1: the 402 body, X-PAYMENT, X-PAYMENT-RESPONSE).",
    "--json     always print the report as JSON (on a terminal it is a readable summary).",
    "Without SECSNAP_PRIVATE_KEY it pays only a service in devnet mode (the challenge marks it),",
    "from anvil's funded test account 2. One proof is signed per call: after a 503 or a lost",
    `answer the same proof is sent again (at most ${PAID_ATTEMPTS} sends, honouring Retry-After).`,
    "Exit codes: 0 report printed, 1 bad usage or key, 2 SnapshotError (the API's 400),",
    "3 payment refused (by --max-usdc or --network before signing, or by the API's 402),",
    "4 service unavailable (unreachable, 503 after the retries, 429, any other answer).",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const options = readOptions(args);
    const unpaid = await fetchChallenge(options, stderr);
    if (typeof unpaid === "number") return unpaid;
    const payment = choosePayment(unpaid, options, stderr);
    if (typeof payment === "number") return payment;
    const { offer } = payment;
    const account = choosePayer(env, offer, stderr);
    // Signed once: every resend below carries this same proof, so one call pays at most once.
    const paid = await signProof(payment.challenge, offer, account);
    const answer = await sendPaid(options, paid.proof, stderr);
    if (typeof answer === "number") return answer;
    stdout.write(await printable(answer.body, options.json, stdout, env));
    reportSettlement(paid.settlement(answer.response), offer, stderr);
    return PAY_EXIT.report;
  },
};

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
    },
    allowPositionals: true,
  });
  const [target, ...extra] = positionals;
  if (target === undefined || extra.length > 0) throw new UsageError("give exactly one <url>");
  const endpoint = snapshotEndpoint(values.api);
  const maxUsdc = values["max-usdc"];
  if (!/^\d+(\.\d{1,6})?$/.test(maxUsdc)) throw new UsageError("--max-usdc must be a USDC amount");
  const network = values.network === undefined ? undefined : parseNetwork(values.network);
  return { target, api: values.api, endpoint, maxUsdc, network, v1: values.v1, json: values.json };
}

/** An answer of the API, with its body read (JSON, else the text). */
interface Answer {
  response: Response;
  body: unknown;
}

/** One POST of the target to the snapshot route, with a proof's headers or none. */
async function ask(options: PayOptions, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(options.endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", ...headers },
    body: JSON.stringify({ url: options.target }),
  });
  return { response, body: await readBody(response) };
}

/** No answer from the API: one line, with a hint when nothing listens at `--api`. */
function unreachable(err: unknown, options: PayOptions, stderr: CliOutput): number {
  const refused = /ECONNREFUSED/.test(causeOf(err));
  const hint = refused ? `; is the service running at ${options.api}? (--api URL)` : "";
  stderr.write(`secsnap pay: ${(err as Error).message}${causeOf(err)}${hint}\n`);
  return PAY_EXIT.unavailable;
}

/**
 * The 402 of an unpaid first call, or the exit code. It shows the challenge before any key is
 * chosen; input errors come back as 400 here, before anything is signed.
 */
async function fetchChallenge(options: PayOptions, stderr: CliOutput): Promise<Answer | number> {
  let unpaid: Answer;
  try {
    unpaid = await ask(options);
  } catch (err) {
    return unreachable(err, options, stderr);
  }
  if (unpaid.response.status !== 402) return refusal(unpaid.response, unpaid.body, stderr);
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
    const http = new x402HTTPClient(new x402Client());
    let challenge = http.getPaymentRequiredResponse(
      (name) => unpaid.response.headers.get(name),
      unpaid.body,
    );
    const offer = chooseOffer(challenge, options.network);
    // --v1 signs the body's x402 v1 challenge for the offer chosen above.
    if (options.v1) challenge = v1Challenge(http, unpaid.body, offer);
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

/**
 * The paid call: the same proof sent again after a 503 or a lost answer, at most PAID_ATTEMPTS
 * times. The report's answer, or the exit code.
 */
async function sendPaid(
  options: PayOptions,
  proof: Record<string, string>,
  stderr: CliOutput,
): Promise<Answer | number> {
  for (let attempt = 1; ; attempt++) {
    const last = attempt === PAID_ATTEMPTS;
    let answer: Answer;
    try {
      answer = await ask(options, proof);
    } catch (err) {
      if (last) return unreachable(err, options, stderr);
      stderr.write(
        `secsnap pay: no answer (${(err as Error).message}${causeOf(err)}); sending the same proof again in ${LOST_ANSWER_WAIT_S}s\n`,
      );
      await sleep(LOST_ANSWER_WAIT_S * 1000);
      continue;
    }
    const { response, body } = answer;
    if (response.status === 503 && !last) {
      const wait = retryWait(response);
      stderr.write(
        `secsnap pay: the API answered 503 (${describeBody(body)}); sending the same proof again in ${wait}s\n`,
      );
      await sleep(wait * 1000);
      continue;
    }
    if (response.status !== 200) return refusal(response, body, stderr);
    return answer;
  }
}

/** What was paid and the settlement transaction, on stderr; or that its header was unreadable. */
function reportSettlement(
  settlement: Settlement | undefined,
  offer: PaymentRequirements,
  stderr: CliOutput,
): void {
  stderr.write(
    settlement
      ? `paid ${usdc(offer.amount)} (${offer.amount} units of ${offer.asset}) on ${networkLabel(settlement.network)} to ${offer.payTo}\n` +
          `settlement transaction: ${settlement.transaction}\n`
      : "secsnap pay: the report came without a readable settlement header\n",
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
      import("../http/index.js"),
      import("./format.js"),
    ]);
    const report = SnapshotResultSchema.safeParse(body);
    if (report.success) return formatReport(report.data, useColor(stdout, env));
  }
  return `${JSON.stringify(body, null, 2)}\n`;
}

interface SignedProof {
  /** The proof's request headers, sent unchanged on every resend. */
  proof: Record<string, string>;
  /** The settlement a 200 reports, if its header can be read. */
  settlement(response: Response): Settlement | undefined;
}

interface Settlement {
  network: string;
  transaction: string;
}

/**
 * The x402 v1 challenge of a 402 body, narrowed to the entry for the network of `offer` (v1
 * names networks `base` / `base-sepolia`). The SDK's client signs v1 through the same scheme
 * registration and sends it as `X-PAYMENT`.
 */
function v1Challenge(
  http: x402HTTPClient,
  body: unknown,
  offer: PaymentRequirements,
): PaymentRequired {
  const v1 = http.getPaymentRequiredResponse(() => null, body);
  if (v1.x402Version !== 1) {
    throw new PaymentRefused("the API's 402 body is not an x402 v1 challenge");
  }
  const name = NETWORK_NAMES[offer.network];
  const entry = v1.accepts.find((a) => a.network === name);
  if (!entry) throw new PaymentRefused(`the x402 v1 challenge offers no payment on ${name}`);
  return { ...v1, accepts: [entry] };
}

/** One proof for `offer` (x402 v2, or v1 for a v1 challenge), signed by the SDK's exact EVM scheme. */
async function signProof(
  challenge: PaymentRequired,
  offer: PaymentRequirements,
  account: LocalAccount,
): Promise<SignedProof> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  const http = new x402HTTPClient(client);
  const payload = await client.createPaymentPayload(
    challenge.x402Version === 1 ? challenge : { ...challenge, accepts: [offer] },
  );
  return {
    proof: http.encodePaymentSignatureHeader(payload),
    settlement: (response) => {
      try {
        return http.getPaymentSettleResponse((name) => response.headers.get(name));
      } catch {
        return undefined;
      }
    },
  };
}

/** `<api>/v1/snapshot`, keeping the path of `--api` (a service behind a path prefix). */
function snapshotEndpoint(api: string): URL {
  let base: URL;
  try {
    base = new URL(api);
  } catch {
    throw new UsageError(`--api must be a URL (got ${JSON.stringify(api)})`);
  }
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    throw new UsageError(`--api must be an http(s) URL (got ${JSON.stringify(api)})`);
  }
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  base.search = "";
  base.hash = "";
  return new URL("v1/snapshot", base);
}
