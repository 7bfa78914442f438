/**
 * x402 over MCP for the service's paid tool (docs/mcp.md, docs/contract.md §7.10): the sibling of
 * the HTTP gate (src/payment/gate.ts), framework-free. It reads the proof from a tool call's
 * `_meta`, hands it to the same payment ledger as POST /v1/snapshot, and turns the ledger's outcome
 * into a tool result, per the x402 MCP transport:
 *  - no proof: `isError`, the PaymentRequired (resource `mcp://tool/snapshot`) as
 *    `structuredContent`, and `{"x402/error": {code: 402, message, data}}` as the text;
 *  - `_meta["x402/payment"]` (a v2 PaymentPayload, an object or its base64): verified, run,
 *    settled; the result carries `_meta["x402/payment-response"]` (the SettleResponse);
 *  - `_meta["x402.payment"]` (a base64 v1 payment header, the x402-mcp 0.0.x form): answered in
 *    that form (`{x402Version: 1, error, accepts}`, `_meta["x402.payment-response"]`).
 * Everything else is the ledger's: a proof served once, the payment id, kept reports, the budget.
 */
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import { MCP_SNAPSHOT_RESOURCE } from "../../routes.js";
import type { SnapshotTarget } from "../../snapshot/index.js";
import type { KeptAnswer } from "../../store/index.js";
import { conflictMessage, unavailableReason } from "../answers/catalogue.js";
import type { Answer } from "../answers/answer.js";
import { describeError } from "../describe-error.js";
import type { FacilitatorReadiness } from "../facilitator/readiness.js";
import type { GateAnswers } from "../answers/gate-answers.js";
import type { WorkAdmission } from "../ledger/ledger.js";
import type { DoorProof, PaidCallOutcome, PaidCalls } from "../paid-call.js";
import { readEncodedProof } from "../x402/proof.js";
import type { ResourceOffers } from "../x402/resource-offers.js";
import type { PaymentEvents } from "../telemetry.js";
import { v1Challenge } from "../x402/v1.js";

/** The `_meta` keys of the x402 MCP transport, and of the x402-mcp 0.0.x (v1) form. */
export const MCP_PAYMENT_META = "x402/payment";
export const MCP_RECEIPT_META = "x402/payment-response";
export const MCP_V1_PAYMENT_META = "x402.payment";
export const MCP_V1_RECEIPT_META = "x402.payment-response";

/** A tool result as MCP's tools/call returns it (the SDK's CallToolResult, structurally). */
export interface McpToolResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/** One paid tool call as an MCP server hands it over (its input already checked). */
export interface McpPaidCall {
  /** `params._meta` of the call (the proof, when paid). */
  meta: Record<string, unknown> | undefined;
  readonly target: SnapshotTarget;
  /** The tool's arguments as bytes: the same proof with other arguments is a conflict. */
  readonly body: Uint8Array;
  /** Runs the tool's work: status 200 is the report; a 400 is a SnapshotError, never charged. */
  run(signal: AbortSignal): Promise<KeptAnswer>;
  /** The request's connection: aborted once the client has gone. */
  readonly signal: AbortSignal;
  /** The instance's slots: one is taken before the proof is verified, given back if it fails. */
  readonly admission?: WorkAdmission;
}

/** A tool result, and (for a paid one) what to call once it was handed over or could not be. */
export interface McpPaidAnswer {
  result: McpToolResult;
  finish?: (delivered: boolean) => void;
}

export interface McpPayment {
  /** Whether a call's `_meta` carries a proof (either form): it may run a snapshot. */
  carriesProof(meta: Record<string, unknown> | undefined): boolean;
  call(input: McpPaidCall): Promise<McpPaidAnswer>;
  /**
   * What `call` answers a call without a proof, when that is known without waiting (facilitator
   * ready, challenge built): the same object every time, for the route's unpaid fast path.
   */
  unpaidResult(): McpToolResult | undefined;
}

interface McpPaymentParts {
  offers: ResourceOffers;
  readiness: FacilitatorReadiness;
  calls: PaidCalls;
  answers: GateAnswers;
  events: PaymentEvents;
  v1OutputSchema: Record<string, unknown>;
  log: (line: string) => void;
}

/** A proof from `_meta`: which form, and its reading. */
type MetaProof = DoorProof | undefined;

/** The challenge's message to a call without a proof. */
const UNPAID_MESSAGE = "Payment required.";

/** Largest proof object re-encoded (its JSON): the header's own bound is checked after. */
const MAX_PROOF_OBJECT_CHARS = 8 * 1024;

export function readMetaProof(meta: Record<string, unknown> | undefined): MetaProof {
  const v2 = meta?.[MCP_PAYMENT_META];
  if (v2 !== undefined && v2 !== null) {
    if (typeof v2 === "string") {
      return { version: 2, reading: readEncodedProof(v2, MCP_PAYMENT_META, 2) };
    }
    let text: string;
    try {
      text = JSON.stringify(v2);
    } catch {
      return { version: 2, reading: { ok: false, why: `${MCP_PAYMENT_META} is not JSON` } };
    }
    if (text.length > MAX_PROOF_OBJECT_CHARS) {
      const why = `${MCP_PAYMENT_META} is ${text.length} characters; at most ${MAX_PROOF_OBJECT_CHARS} are read`;
      return { version: 2, reading: { ok: false, why } };
    }
    const encoded = Buffer.from(text, "utf8").toString("base64");
    return { version: 2, reading: readEncodedProof(encoded, MCP_PAYMENT_META, 2) };
  }
  const v1 = meta?.[MCP_V1_PAYMENT_META];
  if (v1 !== undefined && v1 !== null) {
    if (typeof v1 !== "string") {
      const why = `${MCP_V1_PAYMENT_META} must be a base64 x402 v1 payment header`;
      return { version: 1, reading: { ok: false, why } };
    }
    return { version: 1, reading: readEncodedProof(v1, MCP_V1_PAYMENT_META, 1) };
  }
  return undefined;
}

export function createMcpPayment(parts: McpPaymentParts): McpPayment {
  const required = () => parts.offers.for(MCP_SNAPSHOT_RESOURCE);

  /** The answer to a call without a proof, made once per built challenge. */
  let unpaid: { challenge: PaymentRequired; result: McpToolResult } | undefined;

  return {
    carriesProof: (meta) => readMetaProof(meta) !== undefined,
    unpaidResult() {
      const challenge = parts.offers.known(MCP_SNAPSHOT_RESOURCE);
      if (!challenge || !parts.readiness.readyNow) return undefined;
      // Built again once its signed offers were renewed (ResourceOffers).
      if (unpaid?.challenge !== challenge) {
        unpaid = { challenge, result: paymentRequired(challenge, 2, UNPAID_MESSAGE, parts) };
      }
      return unpaid.result;
    },
    async call(input) {
      const proof = readMetaProof(input.meta);
      const outcome = await parts.calls.call({
        target: input.target,
        body: input.body,
        proof,
        offers: required,
        run: input.run,
        signal: input.signal,
        ...(input.admission && { admission: input.admission }),
      });
      return outcomeResult(outcome, proof?.version ?? 2, parts, required);
    },
  };
}

type Outcome<K extends PaidCallOutcome["kind"]> = Extract<PaidCallOutcome, { kind: K }>;

/** The paid call's outcome as a tool result; the offers are built only for a challenge. */
async function outcomeResult(
  outcome: PaidCallOutcome,
  version: 1 | 2,
  parts: McpPaymentParts,
  offers: () => Promise<PaymentRequired | undefined>,
): Promise<McpPaidAnswer> {
  switch (outcome.kind) {
    case "paid":
      return paidResult(outcome, version, parts);
    case "payment_required":
    case "unreadable_proof":
    case "refused": {
      const offered = await offers();
      if (!offered) return { result: failure(PAYMENT_FAILED_WORDS) };
      return { result: challengeResult(outcome, offered, version, parts) };
    }
    default:
      return { result: refusalResult(outcome, parts) };
  }
}

const PAYMENT_FAILED_WORDS = "Payment processing failed; retry later.";

/** The report, its receipt in `_meta` in the proof's form, and the delivery callback. */
function paidResult(outcome: Outcome<"paid">, version: 1 | 2, parts: McpPaymentParts) {
  const report = JSON.parse(outcome.report.body) as Record<string, unknown>;
  const receipt = version === 1 ? v1Receipt(outcome.settlement) : outcome.settlement;
  return {
    result: {
      content: [text(outcome.report.body)],
      structuredContent: report,
      _meta: { [version === 1 ? MCP_V1_RECEIPT_META : MCP_RECEIPT_META]: receipt },
    },
    finish: (delivered: boolean) => {
      outcome.finish(delivered).catch((error: unknown) => {
        parts.log(`payment record store failed: ${describeError(error)}`);
      });
    },
  };
}

/** The PaymentRequired as an error result: no proof, an unreadable one, or a refused one. */
function challengeResult(
  outcome: Outcome<"payment_required" | "unreadable_proof" | "refused">,
  offered: PaymentRequired,
  version: 1 | 2,
  parts: McpPaymentParts,
): McpToolResult {
  if (outcome.kind === "payment_required") {
    return paymentRequired(offered, 2, UNPAID_MESSAGE, parts);
  }
  if (outcome.kind === "unreadable_proof") {
    return paymentRequired(offered, version, `Unreadable payment proof: ${outcome.why}.`, parts);
  }
  const result = paymentRequired(offered, version, outcome.message, parts, outcome.reason);
  if (outcome.settlement && version === 2 && result.structuredContent) {
    // The x402 MCP transport's settlement failure: the PaymentRequired and the failure.
    result.structuredContent = {
      ...result.structuredContent,
      [MCP_RECEIPT_META]: {
        success: false,
        errorReason: outcome.reason,
        transaction: "",
        network: outcome.settlement.network,
      },
    };
  }
  return result;
}

/** Every other outcome: an error result in words, saying when to retry. */
function refusalResult(
  outcome: Outcome<
    | "offers_failed"
    | "unpaid"
    | "client_gone"
    | "conflict"
    | "over_budget"
    | "unavailable"
    | "store_down"
  >,
  parts: McpPaymentParts,
): McpToolResult {
  switch (outcome.kind) {
    case "offers_failed":
      return failure(PAYMENT_FAILED_WORDS);
    case "unpaid":
      return keptResult(outcome.answer);
    case "client_gone":
      return failure("The client closed the connection; nothing was charged.");
    case "conflict": {
      const retry =
        outcome.retryAfterSeconds !== undefined ? ` Retry in ${outcome.retryAfterSeconds} s.` : "";
      return failure(`${conflictMessage(outcome.code)}${retry}`);
    }
    case "over_budget":
      return answerResult(parts.answers.overBudget(outcome.retryAfterMs));
    case "unavailable":
      return failure(
        `Payment could not be completed now (${unavailableReason(outcome.code)}): retry with the same payment ` +
          "in a few seconds; it is charged at most once and its report is kept.",
      );
    case "store_down":
      return answerResult(parts.answers.storeDown());
  }
}

/** The receipt in the x402-mcp 0.0.x form, with the signed receipt (offer-receipt) if any. */
function v1Receipt(settlement: SettleResponse): Record<string, unknown> {
  return {
    success: settlement.success,
    transaction: settlement.transaction,
    network: settlement.network,
    payer: settlement.payer,
    ...(settlement.extensions && { extensions: settlement.extensions }),
  };
}

/**
 * The challenge as an error result: v2 per the x402 MCP transport (PaymentRequired as
 * `structuredContent`, `x402/error` in the text); v1 in the x402-mcp form.
 */
function paymentRequired(
  offered: PaymentRequired,
  version: 1 | 2,
  message: string,
  parts: McpPaymentParts,
  reason?: string,
): McpToolResult {
  const required: PaymentRequired = { ...offered, error: reason ?? message };
  if (version === 1) {
    const v1 = v1Challenge(encodePaymentRequiredHeader(required), message, parts.v1OutputSchema);
    if (v1) {
      const body = v1 as unknown as Record<string, unknown>;
      return { isError: true, structuredContent: body, content: [text(JSON.stringify(body))] };
    }
  }
  const data = required as unknown as Record<string, unknown>;
  const error = { "x402/error": { code: 402, message, data } };
  return { isError: true, structuredContent: data, content: [text(JSON.stringify(error))] };
}

/** A kept answer that is not the report (a SnapshotError, a 503): an error result carrying it. */
function keptResult(answer: KeptAnswer): McpToolResult {
  let body: Record<string, unknown> | undefined;
  try {
    body = JSON.parse(answer.body) as Record<string, unknown>;
  } catch {
    body = undefined;
  }
  if (body && typeof body.error_type === "string") {
    return { isError: true, structuredContent: body, content: [text(answer.body)] };
  }
  // Another refusal of the work (the instance busy or draining): its words, when to retry.
  return answerResult(answer);
}

/** An HTTP answer of the gate (503, 429) as an error result saying what to do. */
function answerResult(answer: Answer): McpToolResult {
  let message = answer.body;
  try {
    const { error } = JSON.parse(answer.body) as { error?: unknown };
    if (typeof error === "string") message = error;
  } catch {
    // Not JSON: the body as it is.
  }
  const retry = answer.headers["retry-after"];
  return failure(retry ? `${message} (retry after ${retry} s)` : message);
}

function failure(message: string): McpToolResult {
  return { isError: true, content: [text(message)] };
}

function text(value: string): { type: "text"; text: string } {
  return { type: "text", text: value };
}
