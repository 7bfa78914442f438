/**
 * The prepared unpaid challenge is handed out only while its signed offers leave a client a whole
 * payment window (docs/contract.md §7.11): after that the route builds and signs it again.
 */
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { OFFER_RECEIPT, createOfferJWS, type JWSSigner } from "@x402/extensions/offer-receipt";
import { base64url, generateKeyPair } from "jose";
import { describe, expect, it } from "vitest";
import type { Answer } from "../../../src/payment/index.js";
import { PreparedChallenges } from "../../../src/payment/x402/challenge.js";

const URL_ = "http://127.0.0.1:4021/v1/snapshot";
const ACCEPTED = {
  scheme: "exact",
  network: "eip155:84532",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "50000",
  maxTimeoutSeconds: 300,
  extra: {},
} as const;

async function signer(): Promise<JWSSigner> {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519" });
  return {
    kid: "did:web:127.0.0.1%3A4021#test",
    format: "jws",
    algorithm: "EdDSA",
    sign: async (input) =>
      base64url.encode(new Uint8Array(await crypto.subtle.sign("Ed25519", privateKey, input))),
  };
}

/** A 402 answer whose one offer is valid for `seconds` from now. */
async function challengeValidFor(seconds: number): Promise<Answer> {
  const offer = await createOfferJWS(
    URL_,
    { acceptIndex: 0, ...ACCEPTED, offerValiditySeconds: seconds },
    await signer(),
  );
  const required: PaymentRequired = {
    x402Version: 2,
    resource: { url: URL_ },
    accepts: [{ ...ACCEPTED }],
    extensions: { [OFFER_RECEIPT]: { info: { offers: [offer] } } },
  };
  return {
    status: 402,
    headers: { "payment-required": encodePaymentRequiredHeader(required) },
    body: "{}",
  };
}

const noHeader = () => undefined;

describe("PreparedChallenges", () => {
  it("hands out a challenge whose offers leave a payment window", async () => {
    const challenges = new PreparedChallenges();
    const answer = await challengeValidFor(600);
    challenges.keep(URL_, noHeader, answer);
    expect(challenges.get(URL_, noHeader)).toBe(answer);
  });

  it("not one whose offers expire within the payment window: it is built and signed again", async () => {
    const challenges = new PreparedChallenges();
    challenges.keep(URL_, noHeader, await challengeValidFor(120));
    expect(challenges.get(URL_, noHeader)).toBeUndefined();
  });
});
