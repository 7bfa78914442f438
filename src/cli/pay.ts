import { parseArgs } from "node:util";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment } from "@x402/fetch";
import type { PaymentRequired } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { formatUnits } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { LocalAccount } from "viem/accounts";
import { DEFAULT_PAYER, DEVNET_NETWORK, USDC_DECIMALS } from "../devnet/index.js";
import { UsageError, type Command } from "./command.js";

export interface PayOutcome {
  status: number;
  body: unknown;
  /** Decoded PAYMENT-RESPONSE, when the service settled. */
  settlement?: { success: boolean; transaction: string; network: string; payer?: string };
}

/**
 * True when the challenge only offers the devnet chain (the embedded default of `npm start`,
 * docs/contract.md §7.7), whose funded test accounts may then pay.
 */
function looksLikeDevnet(challenge: PaymentRequired): boolean {
  return (
    challenge.accepts.length > 0 && challenge.accepts.every((a) => a.network === DEVNET_NETWORK)
  );
}

function chooseAccount(
  key: string | undefined,
  challenge: PaymentRequired,
): { account: LocalAccount; note?: string } {
  if (key) {
    if (!/^0x[0-9a-fA-F]{64}$/.test(key)) {
      throw new UsageError("SECSNAP_PRIVATE_KEY must be a 0x-prefixed 32-byte hex private key");
    }
    return { account: privateKeyToAccount(key as `0x${string}`) };
  }
  if (looksLikeDevnet(challenge)) {
    const account = privateKeyToAccount(DEFAULT_PAYER.privateKey);
    return {
      account,
      note: `devnet: paying from anvil test account ${DEFAULT_PAYER.index} (${account.address}); set SECSNAP_PRIVATE_KEY to use another`,
    };
  }
  throw new UsageError(
    `the API asks for payment on ${challenge.accepts.map((a) => a.network).join(", ")}: set SECSNAP_PRIVATE_KEY to the payer's private key`,
  );
}

/**
 * `--v1`: pays the x402 v1 challenge in the 402 body with an `X-PAYMENT` proof, as legacy
 * clients do (the SDK's client signs v1 through the same scheme registration).
 */
async function payWithV1(client: x402Client, body: unknown, request: Request): Promise<Response> {
  const http = new x402HTTPClient(client);
  const challenge = http.getPaymentRequiredResponse(() => null, body);
  if (challenge.x402Version !== 1) {
    throw new Error("the API's 402 body is not an x402 v1 challenge");
  }
  const proof = http.encodePaymentSignatureHeader(await http.createPaymentPayload(challenge));
  for (const [name, value] of Object.entries(proof)) request.headers.set(name, value);
  return fetch(request);
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const payCommand: Command = {
  usage: [
    "Usage: secsnap pay <url> [--api http://127.0.0.1:8080] [--max-usdc 1] [--v1]",
    "",
    "Asks the API for a snapshot of <url>, pays its x402 challenge (USDC, scheme exact) with the",
    "key in SECSNAP_PRIVATE_KEY and prints the report on stdout; the amount paid and the",
    "settlement transaction go to stderr. Against the devnet (a challenge offering only",
    "eip155:84532) it pays from anvil's funded test account 2 unless SECSNAP_PRIVATE_KEY is set.",
    "--max-usdc refuses to sign for more than that amount (default 1).",
    "--v1 pays with the legacy protocol (x402 v1: the 402 body, X-PAYMENT, X-PAYMENT-RESPONSE).",
    "Exit codes: 0 report printed, 1 bad usage, 2 the API refused (400, 402, 503) or is unreachable.",
  ].join("\n"),

  async run({ args, env, stdout, stderr }) {
    const { positionals, values } = parseArgs({
      args,
      options: {
        api: { type: "string", default: "http://127.0.0.1:8080" },
        "max-usdc": { type: "string", default: "1" },
        v1: { type: "boolean", default: false },
      },
      allowPositionals: true,
    });
    const [target, ...extra] = positionals;
    if (target === undefined || extra.length > 0) throw new UsageError("give exactly one <url>");
    let endpoint: URL;
    try {
      endpoint = new URL("/v1/snapshot", values.api);
    } catch {
      throw new UsageError(`--api must be a URL (got ${JSON.stringify(values.api)})`);
    }
    const maxUsdc = values["max-usdc"];
    if (!/^\d+(\.\d{1,6})?$/.test(maxUsdc))
      throw new UsageError("--max-usdc must be a USDC amount");

    const request = (): Request =>
      new Request(endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ url: target }),
      });

    let outcome: PayOutcome;
    try {
      // An unpaid first call shows the challenge (and whether this is the devnet) before any
      // key is chosen; input errors come back as 400 here, before anything is signed.
      const first = await fetch(request());
      if (first.status !== 402) {
        outcome = { status: first.status, body: await readBody(first) };
      } else {
        const probe = new x402HTTPClient(new x402Client());
        const firstBody = await readBody(first);
        const challenge = probe.getPaymentRequiredResponse(
          (name) => first.headers.get(name),
          firstBody,
        );
        const { account, note } = chooseAccount(
          env.SECSNAP_PRIVATE_KEY?.trim() || undefined,
          challenge,
        );
        if (note) stderr.write(`${note}\n`);
        const client = new x402Client();
        client.setSpendControls({ maxAmountPerPayment: `$${maxUsdc}` });
        registerExactEvmScheme(client, { signer: account });
        const response = values.v1
          ? await payWithV1(client, firstBody, request())
          : await wrapFetchWithPayment(fetch, client)(request());
        const header =
          response.headers.get("PAYMENT-RESPONSE") ?? response.headers.get("X-PAYMENT-RESPONSE");
        outcome = {
          status: response.status,
          body: await readBody(response),
          ...(header && { settlement: decodePaymentResponseHeader(header) }),
        };
        const offered = challenge.accepts[0];
        if (outcome.status === 200 && outcome.settlement?.success && offered) {
          const paid =
            challenge.accepts.find((a) => a.network === outcome.settlement?.network) ?? offered;
          stderr.write(
            `paid ${formatUnits(BigInt(paid.amount), USDC_DECIMALS)} USDC (${paid.amount} units of ${paid.asset}) on ${paid.network} to ${paid.payTo}\n` +
              `settlement transaction: ${outcome.settlement.transaction}\n`,
          );
        }
      }
    } catch (err) {
      if (err instanceof UsageError) throw err;
      const refused = /ECONNREFUSED/.test(causeOf(err));
      const hint = refused ? `; is the service running at ${values.api}? (--api URL)` : "";
      stderr.write(`secsnap pay: ${(err as Error).message}${causeOf(err)}${hint}\n`);
      return 2;
    }

    if (outcome.status === 200) {
      stdout.write(`${JSON.stringify(outcome.body, null, 2)}\n`);
      return 0;
    }
    const detail = typeof outcome.body === "string" ? outcome.body : JSON.stringify(outcome.body);
    stderr.write(`secsnap pay: the API answered ${outcome.status}: ${detail}\n`);
    return 2;
  },
};

function causeOf(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? ` (${cause.message})` : "";
}
