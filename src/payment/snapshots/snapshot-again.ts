import { randomBytes } from "node:crypto";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import {
  SIGN_IN_WITH_X,
  buildSIWxSchema,
  declareSIWxExtension,
  parseSIWxHeader,
  validateSIWxMessage,
  type SIWxPayload,
} from "@x402/extensions/sign-in-with-x";
import type { KeptSnapshot, SnapshotStore } from "../../store/index.js";
import { jsonAnswer, type Answer } from "../answers/answer.js";
import {
  NOT_PAYER,
  SNAPSHOT_NOT_FOUND,
  hostNotAllowed,
  paymentUnavailable,
  signInMalformed,
  signInRefused,
} from "../answers/catalogue.js";
import { describeError } from "../describe-error.js";
import { serviceUrlOf } from "../signing/index.js";
import { verifySignIn } from "./payer-signature.js";

/** How long a sign-in challenge (its nonce) lives: the contract's five minutes. */
export const SIGN_IN_TTL_MS = 5 * 60_000;
/** A snapshot id as the proof makes it: 32 hex digits (128 bits). */
const SNAPSHOT_ID = /^[0-9a-f]{32}$/;
/** The kept report is served after a one-use sign-in: no cache keeps it. */
const SNAPSHOT_CACHE_CONTROL = "private, no-store";
const STATEMENT = "Sign in with the wallet that paid for this report to get it again.";

export interface SnapshotAgainOptions {
  store: SnapshotStore;
  /** SNAPSHOT_RETENTION_DAYS in ms; 0: nothing is kept, every id is unknown. */
  retentionMs: number;
  /** PUBLIC_URL: the origin sign-ins are bound to; without it, a loopback request's own. */
  publicUrl: string | undefined;
  /** The networks the service accepts (CAIP-2), offered as the sign-in's chains. */
  networks: readonly string[];
  log: (line: string) => void;
}

/** One request of GET /v1/snapshots/{snapshot_id}, without HTTP. */
export interface SnapshotRequest {
  snapshotId: string;
  /** The URL the request was made to (its origin is used only when loopback). */
  requestUrl: string;
  /** The SIGN-IN-WITH-X header, when sent. */
  signIn: string | undefined;
}

/** What the HTTP route asks of it (src/http/app.ts). */
export interface SnapshotAgainRoute {
  answer(request: SnapshotRequest): Promise<Answer>;
}

/**
 * GET /v1/snapshots/{snapshot_id} (docs/contract.md §10.4): a paid report, again, to the
 * address that paid for it. The payer proves its address with the x402 `sign-in-with-x`
 * extension: a 402 with no payment offered and a challenge (our origin, a nonce the store keeps
 * so that it is accepted once, by any instance of a fleet; five minutes to live), answered by an
 * EIP-4361 message signed (EIP-191) by the payer.
 */
export class SnapshotAgain implements SnapshotAgainRoute {
  constructor(private readonly options: SnapshotAgainOptions) {}

  async answer(request: SnapshotRequest): Promise<Answer> {
    const { retentionMs, store } = this.options;
    if (retentionMs <= 0 || !SNAPSHOT_ID.test(request.snapshotId)) return SNAPSHOT_NOT_FOUND;
    const origin = this.originOf(request.requestUrl);
    if (origin === undefined) return hostNotAllowed(new URL(request.requestUrl).host);
    try {
      const kept = await store.snapshot(request.snapshotId);
      if (kept === undefined) return SNAPSHOT_NOT_FOUND;
      const resourceUrl = `${origin.origin}${new URL(request.requestUrl).pathname}`;
      if (request.signIn === undefined) return await this.challenge(origin, resourceUrl);
      return await this.signedIn(request.signIn, origin, kept);
    } catch (error) {
      this.options.log(`snapshot store failed: ${describeError(error)}`);
      return paymentUnavailable("store_unavailable", "5");
    }
  }

  /** PUBLIC_URL's origin; without it the request's, when its host is loopback; else none. */
  private originOf(requestUrl: string): URL | undefined {
    const url = serviceUrlOf(this.options.publicUrl, requestUrl);
    return url && new URL(url.origin);
  }

  /** The 402: nothing to pay (`accepts` empty), the sign-in challenge with a nonce we keep. */
  private async challenge(origin: URL, resourceUrl: string): Promise<Answer> {
    const nonce = randomBytes(16).toString("hex");
    await this.options.store.issueNonce(nonce, SIGN_IN_TTL_MS);
    const issuedAt = new Date();
    const declared = declareSIWxExtension({
      network: [...this.options.networks],
      statement: STATEMENT,
      expirationSeconds: SIGN_IN_TTL_MS / 1000,
    })[SIGN_IN_WITH_X]!;
    const required: PaymentRequired = {
      x402Version: 2,
      error: "sign in with the wallet that paid for this report (SIGN-IN-WITH-X)",
      resource: {
        url: resourceUrl,
        description: "a paid report, again",
        mimeType: "application/json",
      },
      accepts: [],
      extensions: {
        [SIGN_IN_WITH_X]: {
          info: {
            ...declared.info,
            domain: origin.host,
            uri: resourceUrl,
            nonce,
            issuedAt: issuedAt.toISOString(),
            expirationTime: new Date(issuedAt.getTime() + SIGN_IN_TTL_MS).toISOString(),
            resources: [resourceUrl],
          },
          supportedChains: declared.supportedChains,
          schema: buildSIWxSchema(),
        },
      },
    };
    return jsonAnswer(402, required, { "payment-required": encodePaymentRequiredHeader(required) });
  }

  /** The kept report when the sign-in holds and is the payer's; else why not. */
  private async signedIn(header: string, origin: URL, kept: KeptSnapshot): Promise<Answer> {
    let message: SIWxPayload;
    try {
      message = parseSIWxHeader(header);
    } catch (error) {
      return signInMalformed(describeError(error).replace(/^Invalid SIWX header: /, ""));
    }
    const refusal = await this.refusal(message, origin);
    if (refusal !== undefined) return signInRefused(refusal);
    // Taken only once all else holds; whatever follows, it is spent.
    if (!(await this.options.store.takeNonce(message.nonce))) {
      return signInRefused("the nonce was not issued here, is used already or expired");
    }
    if (message.address.toLowerCase() !== kept.payer.toLowerCase()) return NOT_PAYER;
    return {
      ...kept.answer,
      headers: {
        ...kept.answer.headers,
        "content-type": "application/json",
        "cache-control": SNAPSHOT_CACHE_CONTROL,
      },
    };
  }

  /** Why a readable sign-in message does not hold, or undefined when it does. */
  private async refusal(message: SIWxPayload, origin: URL): Promise<string | undefined> {
    if (!this.options.networks.includes(message.chainId)) {
      return `chain ${message.chainId} is not one this service accepts`;
    }
    if (message.expirationTime === undefined) return "the message has no expirationTime";
    const lifetime = Date.parse(message.expirationTime) - Date.parse(message.issuedAt);
    if (!(lifetime <= SIGN_IN_TTL_MS)) return "the message lives longer than five minutes";
    try {
      const valid = await validateSIWxMessage(message, origin);
      if (!valid.isValid) return valid.invalidMessage;
      const signed = await verifySignIn(message);
      if (!signed.isValid) return signed.invalidMessage;
      return undefined;
    } catch (error) {
      // A message the extension cannot even check (an address or signature that is no hex).
      return describeError(error);
    }
  }
}
