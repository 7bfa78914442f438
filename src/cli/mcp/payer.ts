/**
 * The paying half of `secsnap mcp`, loaded on the first call that needs it: the `snapshot` and
 * `wallet` tools. It pays as `secsnap pay` does — the same offer choice, one signed proof with a
 * payment id, resends of that same proof after a lost answer, the chain read that says whether
 * anything was charged — within the session's caps, checked before signing (docs/mcp.md).
 */
import type { CallToolResult } from "@modelcontextprotocol/server";
import type { Network, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { getDefaultAsset } from "@x402/evm";
import { formatUnits, parseUnits, type Address } from "viem";
import { privateKeyToAccount, type LocalAccount } from "viem/accounts";
import { DEVNET_NETWORK, USDC_DECIMALS } from "../../devnet/index.js";
import { SnapshotErrorBodySchema, SnapshotResultSchema } from "../../http/index.js";
import {
  chainRpc,
  chargeOnChain,
  networkLabel,
  readOfferChain,
  readUsdcBalance,
  usdc,
  type ChainReading,
  type SignedAuthorization,
} from "../pay/charge.js";
import {
  PaymentRefused,
  challengeOf,
  chooseAccount,
  chooseOffer,
  describeBody,
  signProof,
} from "../pay/offer.js";
import { MAINNET, checkedKey, snapshotEndpoint } from "../pay/options.js";
import { ANSWER_TIMEOUT_S, ask, noAnswer, sendPaid, type Answer } from "../pay/send.js";

/** What `secsnap mcp` was started with, checked (command.ts reads the command line). */
export interface McpOptions {
  /** The API's base URL (`--api`, its path kept; a trailing /v1/snapshot dropped). */
  base: URL;
  /** `--max-usdc`: the most one call may cost. */
  maxUsdc: string;
  /** `--budget-usdc`: the most this session may spend. */
  budgetUsdc: string;
  /** The networks it may pay on, as CAIP-2 ids (`--network`, repeatable). */
  networks: string[];
  rpc: string | undefined;
  timeoutS: number;
}

/** Bound on one chain reading (balance, or whether a call was charged). */
const CHAIN_READ_S = 30;
/** Findings named in a report's short text. */
const WORST_SHOWN = 3;

const NOTHING_SIGNED = "Nothing was signed; nothing was charged.";

function text(...lines: string[]): CallToolResult["content"] {
  return [{ type: "text", text: lines.join("\n") }];
}

/** An error result that says whether anything was charged (its last sentence). */
function failure(
  why: string,
  charged: string,
  structured?: Record<string, unknown>,
): CallToolResult {
  return {
    isError: true,
    content: text(why, charged),
    ...(structured && { structuredContent: structured }),
  };
}

/**
 * A signed authorization whose call ended without a report and that the chain has not settled
 * either way: unknown, or unused but still usable until it expires. Its amount stays committed.
 */
interface Commitment {
  amount: bigint;
  offer: PaymentRequirements;
  /** Undefined: a proof without an EIP-3009 authorization, committed for the whole session. */
  authorization: SignedAuthorization | undefined;
}

/** The payer of one MCP session: its key, its caps and what it has spent. */
export class McpPayer {
  private readonly endpoint: URL;
  private readonly maxUnits: bigint;
  private readonly budgetUnits: bigint;
  /** Charged for sure (a report came, or the chain says so). */
  private spentUnits = 0n;
  /** Calls between the caps check and their outcome: reserved, so concurrent calls cannot overshoot. */
  private inFlightUnits = 0n;
  /**
   * Calls that ended without a report and that the chain has not settled: the service may still
   * charge them, so they count against the budget until the chain says used (spent) or expired
   * unused (freed). An API's refusal alone frees nothing.
   */
  private readonly committed = new Set<Commitment>();
  private paidCalls = 0;
  /** The last offer paid or priced: the wallet reads its network and asset. */
  private lastOffer: PaymentRequirements | undefined;

  constructor(
    private readonly options: McpOptions,
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: (line: string) => void,
  ) {
    this.endpoint = snapshotEndpoint(options.base.href);
    this.maxUnits = parseUnits(options.maxUsdc, USDC_DECIMALS);
    this.budgetUnits = parseUnits(options.budgetUsdc, USDC_DECIMALS);
  }

  /** The `snapshot` tool: a paid report, or an error result saying whether anything was charged. */
  async snapshot(url: string, cancelled: AbortSignal): Promise<CallToolResult> {
    // Asked once without paying: an invalid URL is the API's 400, before anything is signed.
    let unpaid: Answer;
    try {
      const signal = AbortSignal.any([cancelled, AbortSignal.timeout(ANSWER_TIMEOUT_S * 1000)]);
      unpaid = await ask(this.endpoint, url, {}, signal);
    } catch (err) {
      return failure(
        `The API at ${this.endpoint.href} could not be reached: ${noAnswer(err)}.`,
        NOTHING_SIGNED,
      );
    }
    const { status } = unpaid.response;
    if (status === 400) return this.snapshotError(unpaid, NOTHING_SIGNED);
    if (status !== 402) {
      return failure(
        `The API answered ${status} before any payment: ${describeBody(unpaid.body)}`,
        NOTHING_SIGNED,
      );
    }

    let offer: PaymentRequirements;
    let account: LocalAccount;
    let note: string | undefined;
    const challenge = challengeOf(unpaid);
    try {
      offer = chooseOffer(challenge, this.options.networks);
      this.lastOffer = offer;
      // Commitments the chain may have settled since are read first, only when they are in the way.
      if (this.heldUnits() + BigInt(offer.amount) > this.budgetUnits) {
        await this.readCommitments(cancelled);
      }
      this.checkCaps(BigInt(offer.amount));
      ({ account, note } = chooseAccount(this.key(), offer));
    } catch (err) {
      return failure(`Refused before signing: ${(err as Error).message}.`, NOTHING_SIGNED);
    }
    if (cancelled.aborted) return failure("Cancelled before signing.", NOTHING_SIGNED);
    if (note) this.log(note);
    this.log(
      `paying ${usdc(offer.amount)} on ${networkLabel(offer.network)} to ${offer.payTo} from ${account.address}`,
    );

    // Reserved before the first await after the check, so concurrent calls cannot overshoot;
    // the outcome is booked in the same step as the reservation is released.
    const amount = BigInt(offer.amount);
    this.inFlightUnits += amount;
    try {
      return await this.pay(url, challenge, offer, account, note, cancelled);
    } finally {
      this.inFlightUnits -= amount;
    }
  }

  /** The signed proof sent for the report; a failure says what the chain says was charged. */
  private async pay(
    url: string,
    challenge: PaymentRequired,
    offer: PaymentRequirements,
    account: LocalAccount,
    note: string | undefined,
    cancelled: AbortSignal,
  ): Promise<CallToolResult> {
    const amount = BigInt(offer.amount);
    let paid: Awaited<ReturnType<typeof signProof>>;
    try {
      paid = await signProof(challenge, offer, account);
    } catch (err) {
      return failure(`The proof could not be signed: ${(err as Error).message}.`, NOTHING_SIGNED);
    }
    const sent = await sendPaid(
      (signal) => ask(this.endpoint, url, paid.proof, signal),
      this.options.timeoutS,
      // A cancelled call stops the resends; the answer in flight is still awaited, as it tells
      // whether the proof was charged.
      { finishing: cancelled, stopping: new AbortController().signal },
      (line) => this.log(line),
      (answer) => describeBody(answer.body),
    );
    const { answer } = sent;
    if (answer?.response.status === 200) {
      this.spentUnits += amount;
      this.paidCalls++;
      const settlement = paid.settlement(answer.response);
      const paidLine =
        `Charged ${usdc(offer.amount)} on ${networkLabel(offer.network)} to ${offer.payTo} from ${account.address}` +
        (settlement
          ? ` (tx ${settlement.transaction}).`
          : " (settled: a report is sent only once settled; its settlement header was unreadable).");
      return {
        content: [
          { type: "text", text: [summary(answer.body), paidLine, note].filter(Boolean).join("\n") },
          { type: "text", text: JSON.stringify(answer.body) },
        ],
        structuredContent: answer.body as Record<string, unknown>,
        ...(settlement && { _meta: { "x402/payment-response": settlement } }),
      };
    }

    const what = answer
      ? `The API answered ${answer.response.status} to the signed proof: ${describeBody(answer.body)}`
      : `The service did not answer the signed proof after ${sent.sends} sends (${sent.lost ?? "no answer"}); resending the same proof was safe (charged at most once).`;
    // Whatever the answer says, only the chain tells whether the proof was charged: an API may
    // settle a proof and still answer 402, 409 or 400.
    const signal = AbortSignal.timeout(CHAIN_READ_S * 1000);
    const { line, reading } = await chargeOnChain(
      paid.authorization,
      offer,
      this.options.rpc,
      this.endpoint,
      this.env,
      signal,
    );
    const commitment: Commitment = { amount, offer, authorization: paid.authorization };
    const held = this.book(commitment, reading);
    const charged =
      `${line.charAt(0).toUpperCase()}${line.slice(1)}.` +
      (held
        ? ` Its ${usdc(amount)} stays committed against --budget-usdc until the chain says it was used or it expired unused.`
        : "");
    return answer?.response.status === 400
      ? this.snapshotError(answer, charged)
      : failure(what, charged);
  }

  /** What a call ended without a report costs, by the chain's reading; true: still committed. */
  private book(commitment: Commitment, reading: ChainReading | undefined): boolean {
    if (reading?.state === "used") {
      this.spentUnits += commitment.amount;
      this.paidCalls++;
      return false;
    }
    if (reading?.state === "canceled" || (reading?.state === "unused" && reading.expired)) {
      return false;
    }
    this.committed.add(commitment);
    return true;
  }

  /** The committed calls read again on chain: used ones are spent, expired unused ones freed. */
  private async readCommitments(cancelled: AbortSignal): Promise<void> {
    const signal = AbortSignal.any([cancelled, AbortSignal.timeout(CHAIN_READ_S * 1000)]);
    const readable = [...this.committed].filter((c) => c.authorization !== undefined);
    await Promise.all(
      readable.map(async (commitment) => {
        const reading = await readOfferChain(
          commitment.authorization as SignedAuthorization,
          commitment.offer,
          this.options.rpc,
          this.endpoint,
          this.env,
          signal,
        );
        // Taken out and booked again in one step: it is either committed or spent, never both;
        // a reading that another call's reading beat to it is dropped.
        if (this.committed.delete(commitment)) this.book(commitment, reading);
      }),
    );
  }

  /** Spent, in flight, and committed: what the budget is checked against. */
  private heldUnits(): bigint {
    return this.spentUnits + this.inFlightUnits + this.committedUnits();
  }

  private committedUnits(): bigint {
    let units = 0n;
    for (const c of this.committed) units += c.amount;
    return units;
  }

  /** The `wallet` tool: address, network, balance on chain, what the session spent. */
  async wallet(cancelled: AbortSignal): Promise<CallToolResult> {
    const offer = this.lastOffer;
    const network: Network =
      offer?.network ??
      (this.options.networks.find((n) => n !== MAINNET) as Network | undefined) ??
      (this.options.networks[0] as Network | undefined) ??
      DEVNET_NETWORK;
    const asset = (offer?.asset ?? getDefaultAsset(network).asset) as Address;
    let address: Address | null = null;
    let key: "SECSNAP_PRIVATE_KEY" | "devnet test account" | "none" = "none";
    const notes: string[] = [];
    const configured = this.key();
    try {
      if (configured) {
        address = privateKeyToAccount(checkedKey(configured)).address;
        key = "SECSNAP_PRIVATE_KEY";
      } else if (offer) {
        address = chooseAccount(undefined, offer).account.address;
        key = "devnet test account";
      } else {
        notes.push(
          "No SECSNAP_PRIVATE_KEY: snapshot pays only a service in devnet mode, from anvil's test account 2; the address is known after the first snapshot call.",
        );
      }
    } catch (err) {
      notes.push((err as Error).message);
    }

    await this.readCommitments(cancelled);
    let balance: string | null = null;
    const rpc = chainRpc(
      this.options.rpc,
      { network, extra: offer?.extra ?? {} },
      this.endpoint,
      this.env,
    );
    if (address && rpc) {
      try {
        const signal = AbortSignal.any([cancelled, AbortSignal.timeout(CHAIN_READ_S * 1000)]);
        const units = await readUsdcBalance(rpc, network, asset, address, signal);
        balance = formatUnits(units, USDC_DECIMALS);
      } catch (err) {
        notes.push(`The balance could not be read: ${(err as Error).message.split("\n")[0]}`);
      }
    } else if (address) {
      notes.push("No RPC known for this network (--rpc URL).");
    }
    const left = this.budgetUnits - this.heldUnits();
    const wallet = {
      address,
      key,
      network,
      asset,
      balance_usdc: balance,
      spent_usdc: formatUnits(this.spentUnits, USDC_DECIMALS),
      committed_usdc: formatUnits(this.committedUnits(), USDC_DECIMALS),
      budget_usdc: formatUnits(this.budgetUnits, USDC_DECIMALS),
      budget_left_usdc: formatUnits(left > 0n ? left : 0n, USDC_DECIMALS),
      max_usdc_per_call: formatUnits(this.maxUnits, USDC_DECIMALS),
      networks_allowed: this.options.networks,
      paid_calls: this.paidCalls,
      ...(notes.length > 0 && { note: notes.join(" ") }),
    };
    return {
      content: text(
        `${address ?? "address not known yet"} on ${networkLabel(network)}: ` +
          `balance ${balance === null ? "unknown" : `${balance} USDC`}; ` +
          `spent ${wallet.spent_usdc} of ${wallet.budget_usdc} USDC this session (${this.paidCalls} paid calls)` +
          (this.committed.size > 0
            ? `; ${wallet.committed_usdc} USDC more committed: signed for calls that got no report, until the chain says they were used or expired unused.`
            : "."),
        ...notes,
      ),
      structuredContent: wallet,
    };
  }

  /** `--max-usdc` and `--budget-usdc`, before anything is signed. */
  private checkCaps(amount: bigint): void {
    if (amount > this.maxUnits) {
      throw new PaymentRefused(`price ${usdc(amount)} exceeds --max-usdc ${this.options.maxUsdc}`);
    }
    const held = this.heldUnits();
    if (held + amount > this.budgetUnits) {
      throw new PaymentRefused(
        `price ${usdc(amount)} would exceed --budget-usdc ${this.options.budgetUsdc} (this session has ` +
          `spent or committed ${usdc(held)})`,
      );
    }
  }

  private key(): string | undefined {
    return this.env.SECSNAP_PRIVATE_KEY?.trim() || undefined;
  }

  /** The API's 400: the SnapshotError as structured content (the output schema admits it). */
  private snapshotError(answer: Answer, charged: string): CallToolResult {
    const parsed = SnapshotErrorBodySchema.safeParse(answer.body);
    const why = parsed.success
      ? `The API refused the URL (${parsed.data.error_type}): ${parsed.data.error}`
      : `The API answered 400: ${describeBody(answer.body)}`;
    return failure(why, charged, parsed.success ? parsed.data : undefined);
  }
}

/** The report in a few lines: grade, score, the worst findings. */
export function summary(body: unknown): string {
  const parsed = SnapshotResultSchema.safeParse(body);
  if (!parsed.success) return "The API's report does not match the SnapshotResult schema.";
  const report = parsed.data;
  const worst = report.findings
    .slice(0, WORST_SHOWN)
    .map((f) => `- [${f.severity}] ${f.message} Fix: ${f.recommendation}`);
  const more = report.findings.length - worst.length;
  return [
    `${report.final_url}: grade ${report.grade}, score ${report.score}/100, ${report.findings.length} findings` +
      (report.reachable ? "" : " (not reachable)") +
      (worst.length > 0 ? "; the worst:" : "."),
    ...worst,
    ...(more > 0 ? [`(${more} more in the report)`] : []),
  ].join("\n");
}
