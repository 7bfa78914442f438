/**
 * One paid call, whichever door it came in by (docs/payment.md "One paid call"): the HTTP route
 * (x402 v1 and v2), POST /mcp and `secsnap mcp`'s tool, the page's devnet form. Each door reads
 * its wire form once into a PaidCallRequest — the target parsed, the body's bytes, the proof
 * decoded — and turns the PaidCallOutcome back into its own answer. The steps between live here
 * once: facilitator ready → a proof at all → readable → matches an offer → its payment id → the
 * ledger (verify, the work, settle).
 */
import type { x402ResourceServer } from "@x402/core/server";
import type { PaymentRequired } from "@x402/core/types";
import type { KeptAnswer } from "../store/index.js";
import type { SnapshotTarget } from "../snapshot/index.js";
import type { Answer } from "./answers/answer.js";
import { CLIENT_GONE, PAYMENT_FAILED, paymentConflict } from "./answers/catalogue.js";
import type { GateAnswers } from "./answers/gate-answers.js";
import { paymentIdOf } from "./ledger/authorization.js";
import type { FacilitatorReadiness } from "./facilitator/readiness.js";
import type { PaidOutcome, PaymentLedger, WorkAdmission } from "./ledger/ledger.js";
import { matchOffer } from "./x402/offer-match.js";
import type { OfferReceipts } from "./x402/offer-receipt.js";
import type { ProofReading } from "./x402/proof.js";
import type { PaymentEvents } from "./telemetry.js";

/** A proof as a door found it: the generation of the slot it came in, and its reading. */
export interface DoorProof {
  readonly version: 1 | 2;
  readonly reading: ProofReading;
}

/** One paid call in the core's terms, whatever its wire form was. */
export interface PaidCallRequest {
  /** The target, parsed once where the request arrived; `run` works on it. */
  readonly target: SnapshotTarget;
  /** The request's own bytes: the same proof with other bytes is a 409 (a payment id's rule). */
  readonly body: Uint8Array;
  /** The proof, decoded once; none asks for the door's challenge. */
  readonly proof: DoorProof | undefined;
  /** The offers this door answers with (its 402's PaymentRequired), as the SDK builds them. */
  offers(): Promise<PaymentRequired | undefined>;
  /** The paid work on `target`: status 200 is the report; anything else is never charged. */
  run(signal: AbortSignal): Promise<KeptAnswer>;
  /** The client's connection: aborted once it has gone (its work ends, nothing is charged). */
  readonly signal: AbortSignal;
  /** The instance's slots: one is taken before the proof is verified, given back if it fails. */
  readonly admission?: WorkAdmission;
}

/** What a paid call came to: the ledger's outcomes, and the core's own before it. */
export type PaidCallOutcome =
  | PaidOutcome
  /** No proof: the door answers its challenge. */
  | { kind: "payment_required" }
  /** A proof nobody can read (or a malformed payment id): the challenge saying why. */
  | { kind: "unreadable_proof"; why: string }
  /** The SDK could not build the offers to match a proof against. */
  | { kind: "offers_failed" };

export interface PaidCallParts {
  readiness: FacilitatorReadiness;
  resourceServer: x402ResourceServer;
  ledger: PaymentLedger;
  events: PaymentEvents;
  /** Signs each settlement's receipt (x402's offer-receipt extension). */
  offerReceipts: OfferReceipts;
  log: (line: string) => void;
}

/** The reason and words of a proof matching none of the offers. */
const NO_MATCH = "No matching payment requirements";

/** The paid call's steps, shared by every door. */
export class PaidCalls {
  constructor(private readonly parts: PaidCallParts) {}

  async call(request: PaidCallRequest): Promise<PaidCallOutcome> {
    const { readiness, resourceServer, ledger, events } = this.parts;
    if (!(await readiness.check())) return { kind: "unavailable", code: "facilitator_unavailable" };
    const { proof } = request;
    if (!proof) return { kind: "payment_required" };
    const generation = proof.version === 1 ? "1" : "2";
    const { reading } = proof;
    // A proof the SDK cannot read, or that would make recursive code (the facilitator client's
    // JSON encoding) overflow, is refused here, in bounded work: a 402 saying why, never a 503.
    if (!reading.ok || reading.version !== proof.version) {
      const why = reading.ok ? `not an x402 v${proof.version} proof` : reading.why;
      events.payment(generation, "refused");
      this.parts.log(`refused an unreadable payment proof: ${why}`);
      return { kind: "unreadable_proof", why };
    }
    const offered = await request.offers();
    if (!offered) return { kind: "offers_failed" };
    const matched = matchOffer(resourceServer, proof.version, reading.payload, offered);
    if (!matched) {
      events.payment(generation, "refused");
      return { kind: "refused", reason: NO_MATCH, message: `Payment rejected: ${NO_MATCH}` };
    }
    const id = paymentIdOf(reading.payload);
    if (!id.ok) {
      events.payment(generation, "refused");
      return { kind: "unreadable_proof", why: id.why };
    }
    const { signal } = request;
    return ledger.pay({
      version: proof.version,
      payload: matched.payload,
      requirements: matched.requirements,
      paymentId: id.id,
      body: request.body,
      run: (own) => request.run(AbortSignal.any([own, signal])),
      clientGone: () => signal.aborted,
      // Signed for the resource the offers were made for, as verifyReceiptMatchesOffer reads it.
      withReceipt: (settlement) =>
        this.parts.offerReceipts.withReceipt(offered.resource.url, settlement),
      ...(request.admission && { admission: request.admission }),
    });
  }
}

/** The outcomes every door answers alike, with the catalogue's answers. */
export type CatalogueOutcome = Exclude<
  PaidCallOutcome,
  { kind: "paid" | "payment_required" | "unreadable_proof" | "refused" }
>;

/** The catalogue's answer to an outcome every door answers alike (answers/catalogue.ts). */
export function catalogueAnswer(outcome: CatalogueOutcome, answers: GateAnswers): Answer {
  switch (outcome.kind) {
    case "offers_failed":
      return PAYMENT_FAILED;
    case "unpaid":
      return outcome.answer;
    case "client_gone":
      // Nobody receives it; the status is for the log.
      return CLIENT_GONE;
    case "conflict":
      return paymentConflict(outcome.code, outcome.retryAfterSeconds);
    case "over_budget":
      return answers.overBudget(outcome.retryAfterMs);
    case "unavailable":
      return answers.unavailable(outcome.code);
    case "store_down":
      return answers.storeDown();
  }
}
