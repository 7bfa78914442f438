import { createHash } from "node:crypto";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { SettleError } from "@x402/core/types";
import {
  PAYMENT_IDENTIFIER,
  extractAndValidatePaymentIdentifier,
} from "@x402/extensions/payment-identifier";
import { createPublicClient, http, parseAbi, parseAbiItem, type PublicClient } from "viem";
import type { Answer } from "./answer.js";
import { describeError } from "./describe-error.js";

/**
 * Idempotent paid retries and unknown settlements (docs/payment.md, "Paying once"). Everything
 * here is keyed by the EIP-3009 authorization and the payer's payment id, never by a protocol
 * generation's types, so x402 v1 and v2 proofs follow the same rules.
 */

/** Who pays for what, as far as paying once is concerned. */
export interface PaidIdentity {
  /** The record's key: the payer's payment id when given, else the authorization. */
  readonly key: string;
  /** The authorization and the request body: a different one under the same key is a 409. */
  readonly fingerprint: string;
  /** The authorization's key (authorizationKey). */
  readonly authorizationKey: string;
  /** Carries a payment id (`payment-identifier`): a served answer is kept and served again. */
  readonly idempotent: boolean;
}

export type IdentityReading = { ok: true; identity: PaidIdentity } | { ok: false; why: string };

interface Authorization {
  network: string;
  from: string;
  nonce: string;
}

/** The EIP-3009 authorization of a decoded proof: v2 names its network in `accepted`, v1 on top. */
function authorizationOf(payload: unknown): Authorization | undefined {
  if (typeof payload !== "object" || payload === null) return undefined;
  const record = payload as {
    accepted?: { network?: unknown };
    network?: unknown;
    payload?: unknown;
  };
  const network = record.accepted?.network ?? record.network;
  const auth = (record.payload as { authorization?: unknown } | null | undefined)?.authorization;
  if (typeof network !== "string" || typeof auth !== "object" || auth === null) return undefined;
  const { from, nonce } = auth as Record<string, unknown>;
  if (typeof from !== "string" || typeof nonce !== "string") return undefined;
  return { network, from: from.toLowerCase(), nonce: nonce.toLowerCase() };
}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The key an authorization is settled under, the same for a proof and for the SDK's payload. */
export function authorizationKey(payload: unknown): string | undefined {
  const auth = authorizationOf(payload);
  return auth && sha256(`eip3009|${auth.network}|${auth.from}|${auth.nonce}`);
}

/**
 * The identity of a paid request from its decoded proof and its body. A malformed payment id
 * is refused (the client asked for idempotency and would silently not get it).
 */
export function paidIdentity(payload: unknown, body: string): IdentityReading | undefined {
  const auth = authorizationOf(payload);
  const authKey = authorizationKey(payload);
  if (!auth || !authKey) return undefined;
  // Only the id is read: a schema the client sends along is not compiled (cost is the client's).
  const declared = (payload as { extensions?: Record<string, unknown> }).extensions?.[
    PAYMENT_IDENTIFIER
  ];
  const info = (declared as { info?: unknown } | undefined)?.info;
  const { id, validation } = extractAndValidatePaymentIdentifier({
    ...(declared !== undefined && { extensions: { [PAYMENT_IDENTIFIER]: { info } } }),
  } as PaymentPayload);
  if (!validation.valid) {
    return { ok: false, why: `payment-identifier is invalid: ${validation.errors?.join("; ")}` };
  }
  // An id is the payer's: scoped by payer so nobody can block another payer's id.
  const key = id === null ? `proof|${authKey}` : `id|${sha256(`${auth.from}|${id}`)}`;
  return {
    ok: true,
    identity: {
      key,
      fingerprint: sha256(`${authKey}\n${body}`),
      authorizationKey: authKey,
      idempotent: id !== null,
    },
  };
}

/** A kept paid answer (served again for its payment id), or a report whose payment is unknown. */
export type PaidRecord =
  | { state: "served"; fingerprint: string; answer: Answer }
  | {
      state: "unsettled";
      fingerprint: string;
      /** The report, without PAYMENT-RESPONSE (not settled yet). */
      answer: Answer;
      payload: unknown;
      requirements: unknown;
    };

export function encodeRecord(record: PaidRecord): string {
  return JSON.stringify(record);
}

/** A stored record, or undefined for none (or one this version cannot read). */
export function decodeRecord(text: string | undefined): PaidRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const record = JSON.parse(text) as PaidRecord;
    return record.state === "served" || record.state === "unsettled" ? record : undefined;
  } catch {
    return undefined;
  }
}

export type Recovery =
  | { kind: "paid"; settlement: SettleResponse }
  | { kind: "refused"; reason: string }
  | { kind: "unknown"; why: string };

/** The exact scheme's reason for an authorization the token already used. */
const NONCE_ALREADY_USED = /nonce_already_used|authorization.*used/i;

const EIP3009_ABI = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
]);
const EIP3009_EVENTS = [
  parseAbiItem("event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)"),
  parseAbiItem("event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)"),
] as const;
/** Blocks searched back for the transaction that used an authorization (hours on Base). */
const LOG_LOOKBACK_BLOCKS = 10_000n;

/**
 * Finds out whether an unsettled payment was made: on chain first (EIP-3009
 * `authorizationState`: a signed authorization can only move exactly our price to our payTo,
 * so "used" means "paid", unless the payer canceled it), else by settling it again, where the
 * facilitator's "authorization already used" also means paid.
 */
export class SettlementRecovery {
  private readonly chains = new Map<string, PublicClient>();

  constructor(
    private readonly facilitator: FacilitatorClient,
    rpcUrls: Readonly<Record<string, string>>,
    private readonly log: (line: string) => void,
  ) {
    for (const [network, url] of Object.entries(rpcUrls)) {
      this.chains.set(network, createPublicClient({ transport: http(url, { timeout: 10_000 }) }));
    }
  }

  async recover(payload: unknown, requirements: unknown): Promise<Recovery> {
    const onChain = await this.onChain(payload, requirements);
    if (onChain) return onChain;
    const paymentRequirements = requirements as PaymentRequirements;
    const network = paymentRequirements.network;
    let settlement: SettleResponse;
    try {
      settlement = await this.facilitator.settle(payload as PaymentPayload, paymentRequirements);
    } catch (error) {
      if (!(error instanceof SettleError)) return { kind: "unknown", why: describeError(error) };
      settlement = {
        success: false,
        errorReason: error.errorReason ?? error.message,
        transaction: error.transaction ?? "",
        network,
      };
    }
    if (settlement.success) return { kind: "paid", settlement };
    const reason = settlement.errorReason ?? "settlement failed";
    if (NONCE_ALREADY_USED.test(`${reason} ${settlement.errorMessage ?? ""}`)) {
      const payer = authorizationOf(payload)?.from;
      return {
        kind: "paid",
        settlement: { success: true, transaction: "", network, ...(payer && { payer }) },
      };
    }
    return { kind: "refused", reason };
  }

  /** The chain's answer, when an RPC URL is configured for the network and it answers. */
  private async onChain(payload: unknown, requirements: unknown): Promise<Recovery | undefined> {
    const auth = authorizationOf(payload);
    const { network, asset } = requirements as PaymentRequirements;
    const chain = this.chains.get(network);
    if (!auth || !chain) return undefined;
    const token = asset as `0x${string}`;
    const from = auth.from as `0x${string}`;
    const nonce = auth.nonce as `0x${string}`;
    try {
      const used = await chain.readContract({
        address: token,
        abi: EIP3009_ABI,
        functionName: "authorizationState",
        args: [from, nonce],
      });
      if (!used) return undefined;
      const latest = await chain.getBlockNumber();
      const fromBlock = latest > LOG_LOOKBACK_BLOCKS ? latest - LOG_LOOKBACK_BLOCKS : 0n;
      const [usedEvent, canceledEvent] = EIP3009_EVENTS;
      const [usedLogs, canceledLogs] = await Promise.all(
        [usedEvent, canceledEvent].map((event) =>
          chain.getLogs({ address: token, event, args: { authorizer: from, nonce }, fromBlock }),
        ),
      );
      if (canceledLogs?.length) return { kind: "refused", reason: "authorization_canceled" };
      const transaction = usedLogs?.[0];
      return {
        kind: "paid",
        settlement: {
          success: true,
          transaction: transaction?.transactionHash ?? "",
          network,
          payer: from,
        },
      };
    } catch (error) {
      this.log(`chain read for an unsettled payment failed: ${describeError(error)}`);
      return undefined;
    }
  }
}
