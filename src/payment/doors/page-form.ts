/**
 * The page's devnet form as a door of the paid call (src/payment/paid-call.ts): the form signs a
 * proof for the offers this door shows (the paid route's, for its URL) from the funded devnet
 * account, and hands it over with the parsed target and the body's bytes. No HTTP round trip
 * through the service itself: the same core, ledger and chain as every other door.
 */
import type { PaymentPayload, PaymentRequired, SettleResponse } from "@x402/core/types";
import type { SnapshotTarget } from "../../snapshot/index.js";
import type { KeptAnswer } from "../../store/index.js";
import { errorAnswer, type Answer } from "../answers/answer.js";
import type { GateAnswers } from "../answers/gate-answers.js";
import type { WorkAdmission } from "../ledger/ledger.js";
import type { ResourceOffers } from "../x402/resource-offers.js";
import { catalogueAnswer, type PaidCalls } from "../paid-call.js";
import { readEncodedProof } from "../x402/proof.js";

/** One paid call of the form. */
export interface FormCall {
  /** The paid route's URL: the resource the offers were made for. */
  readonly resourceUrl: string;
  readonly target: SnapshotTarget;
  readonly body: Uint8Array;
  /** The PaymentPayload the form signed for this door's offers. */
  readonly payload: PaymentPayload;
  run(signal: AbortSignal): Promise<KeptAnswer>;
  readonly signal: AbortSignal;
  readonly admission?: WorkAdmission;
}

/** The form's outcome: the report and its settlement, or the answer saying why not. */
export type FormOutcome =
  | {
      kind: "paid";
      report: KeptAnswer;
      settlement: SettleResponse;
      /** Once the page was sent (`delivered`) or could not be: as every paid answer. */
      finish(delivered: boolean): Promise<void>;
    }
  | { kind: "not_paid"; answer: Answer };

export interface FormPayment {
  /** The offers of the paid route at `resourceUrl`, as the form shows and pays them. */
  offers(resourceUrl: string): Promise<PaymentRequired | undefined>;
  call(call: FormCall): Promise<FormOutcome>;
}

const PROOF_NAME = "the form's payment";

export function createFormPayment(
  calls: PaidCalls,
  offers: ResourceOffers,
  answers: GateAnswers,
): FormPayment {
  return {
    offers: (resourceUrl) => offers.for(resourceUrl),
    async call(call) {
      // Decoded as any proof is: the form's own is read with the same bounds and schema.
      const encoded = Buffer.from(JSON.stringify(call.payload), "utf8").toString("base64");
      const outcome = await calls.call({
        target: call.target,
        body: call.body,
        proof: { version: 2, reading: readEncodedProof(encoded, PROOF_NAME, 2) },
        offers: () => offers.for(call.resourceUrl),
        run: call.run,
        signal: call.signal,
        ...(call.admission && { admission: call.admission }),
      });
      switch (outcome.kind) {
        case "paid":
          return outcome;
        case "payment_required":
        case "refused":
          return { kind: "not_paid", answer: errorAnswer(402, refusalWords(outcome)) };
        case "unreadable_proof":
          return {
            kind: "not_paid",
            answer: errorAnswer(402, `Unreadable payment proof: ${outcome.why}.`),
          };
        default:
          return { kind: "not_paid", answer: catalogueAnswer(outcome, answers) };
      }
    },
  };
}

function refusalWords(outcome: { kind: "payment_required" } | { message: string }): string {
  return "message" in outcome ? outcome.message : "Payment required.";
}
