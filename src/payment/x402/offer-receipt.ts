/**
 * x402's `offer-receipt` extension (docs/contract.md §7.11): a signed offer per `accepts` entry in
 * every 402, a signed receipt in every successful settlement response, JWS (EdDSA) with the
 * service's key, `kid` = `did:web:<host>#<RFC 7638 thumbprint>`. The SDK makes the payloads and
 * their JWS (@x402/extensions/offer-receipt); this file holds the key, names it, and keeps a
 * signed offer until it is half spent, so no request signs one of its own.
 */
import {
  OFFER_RECEIPT,
  convertNetworkStringToCAIP2,
  createOfferJWS,
  createOfferReceiptExtension,
  createReceiptJWS,
  declareOfferReceiptExtension,
  decodeSignedOffers,
  extractOffersFromPaymentRequired,
  type JWSSigner,
  type OfferInput,
  type OfferReceiptIssuer,
  type SignedOffer,
} from "@x402/extensions/offer-receipt";
import type { PaymentRequired, ResourceServerExtension, SettleResponse } from "@x402/core/types";
import {
  createPrivateKey,
  createPublicKey,
  sign,
  type JsonWebKey,
  type KeyObject,
} from "node:crypto";
import { base64url, calculateJwkThumbprint } from "jose";
import { didWebOf, serviceUrlOf, type PrivateJwk } from "../signing/index.js";

/** How long an offer commits to its terms. */
const OFFER_VALIDITY_SECONDS = 600;
/**
 * An offer is handed out only while this much of it is left: a client that got it has a whole
 * payment window (the route's maxTimeoutSeconds) before it expires.
 */
const OFFER_RENEWAL_SECONDS = 300;
/** Signed offers remembered at once (without PUBLIC_URL the resource carries the client's Host). */
const REMEMBERED_OFFERS = 256;

/** The route's declaration: offers last OFFER_VALIDITY_SECONDS; receipts name the transaction. */
export function offerReceiptDeclaration(): Record<string, unknown> {
  return declareOfferReceiptExtension({
    includeTxHash: true,
    offerValiditySeconds: OFFER_VALIDITY_SECONDS,
  });
}

/** The service's Ed25519 key (the reports' too), as a private JWK. */
export interface OfferReceiptKey {
  privateJwk: PrivateJwk;
}

/** The key in use and its RFC 7638 thumbprint. */
interface LoadedKey {
  privateKey: KeyObject;
  thumbprint: string;
}

async function loadKey(key: Promise<OfferReceiptKey>): Promise<LoadedKey> {
  const given = await key;
  const privateKey = createPrivateKey({ key: given.privateJwk as JsonWebKey, format: "jwk" });
  if (privateKey.asymmetricKeyType !== "ed25519") throw new Error("the signing key is not Ed25519");
  const { kty, crv, x } = createPublicKey(privateKey).export({ format: "jwk" });
  return { privateKey, thumbprint: await calculateJwkThumbprint({ kty, crv, x }) };
}

/** The did:web an artifact names the service by: its host's, or `localhost` (never a client's). */
function didWebFor(resourceUrl: string, publicUrl: string | undefined): string {
  const url = serviceUrlOf(publicUrl, resourceUrl);
  return url ? didWebOf(url) : "did:web:localhost";
}

/**
 * The service's offers and receipts. `extension` is registered with the SDK's resource server,
 * which calls it wherever it builds a 402; `withReceipt` signs a settlement once, before the
 * ledger keeps it, so a replay of the same proof carries the same receipt.
 */
export class OfferReceipts {
  readonly extension: ResourceServerExtension;
  private readonly issuer: OfferReceiptIssuer;
  private readonly key: Promise<LoadedKey>;
  private readonly offers = new Map<string, { offer: Promise<SignedOffer>; renewAt: number }>();

  constructor(
    key: Promise<OfferReceiptKey>,
    private readonly publicUrl: string | undefined,
  ) {
    this.key = loadKey(key);
    // Not awaited here: a failure shows at the first signature, where the SDK logs it.
    this.key.catch(() => undefined);
    this.issuer = {
      // Each artifact's own kid names the host its resource is offered under (signer()).
      kid: "did:web",
      format: "jws",
      issueOffer: (resourceUrl, input) => this.offer(resourceUrl, input),
      issueReceipt: async (resourceUrl, payer, network, transaction) =>
        createReceiptJWS(
          {
            resourceUrl,
            payer,
            // v1 settlements name the network by name; the payload is always CAIP-2.
            network: convertNetworkStringToCAIP2(network),
            ...(transaction !== undefined && { transaction }),
          },
          await this.signer(resourceUrl),
        ),
    };
    this.extension = infoOnly(createOfferReceiptExtension(this.issuer));
  }

  /** The signer whose kid names the service at the host a resource is offered under. */
  private async signer(resourceUrl: string): Promise<JWSSigner> {
    const { privateKey, thumbprint } = await this.key;
    return {
      kid: `${didWebFor(resourceUrl, this.publicUrl)}#${thumbprint}`,
      format: "jws",
      algorithm: "EdDSA",
      // Node's own Ed25519, in this turn: a built challenge goes out without waiting a thread.
      sign: (input) => Promise.resolve(base64url.encode(sign(null, input, privateKey))),
    };
  }

  /** The signed offer for these terms, signed again only once half of it is spent. */
  private offer(resourceUrl: string, input: OfferInput): Promise<SignedOffer> {
    const terms = JSON.stringify([resourceUrl, input]);
    const now = Date.now();
    const kept = this.offers.get(terms);
    if (kept && now < kept.renewAt) return kept.offer;
    const validity = input.offerValiditySeconds ?? OFFER_VALIDITY_SECONDS;
    const offer = this.signer(resourceUrl).then((signer) =>
      createOfferJWS(resourceUrl, input, signer),
    );
    if (this.offers.size >= REMEMBERED_OFFERS) this.offers.clear();
    this.offers.set(terms, { offer, renewAt: now + (validity - OFFER_RENEWAL_SECONDS) * 1000 });
    offer.catch(() => this.offers.delete(terms));
    return offer;
  }

  /**
   * The settlement with its signed receipt where the extension puts it
   * (`extensions["offer-receipt"].info.receipt`); the same object when it did not succeed or
   * has its receipt already.
   */
  async withReceipt(resourceUrl: string, settlement: SettleResponse): Promise<SettleResponse> {
    const { success, payer, network, transaction } = settlement;
    if (!success || !payer || settlement.extensions?.[OFFER_RECEIPT]) return settlement;
    const receipt = await this.issuer.issueReceipt(
      resourceUrl,
      payer,
      network,
      transaction || undefined,
    );
    const extensions = { ...settlement.extensions, [OFFER_RECEIPT]: { info: { receipt } } };
    return { ...settlement, extensions };
  }
}

/**
 * The extension without the JSON schema it adds to every 402: `info.offers` is all clients read,
 * and the schema would grow every challenge and every proof echoing it (as payment-identifier's).
 */
function infoOnly(extension: ResourceServerExtension): ResourceServerExtension {
  const enrich = extension.enrichPaymentRequiredResponse;
  if (!enrich) return extension;
  return {
    ...extension,
    enrichPaymentRequiredResponse: async (declaration, context) => {
      const enriched = (await enrich(declaration, context)) as { info?: unknown } | undefined;
      return enriched && { info: enriched.info };
    },
  };
}

/**
 * Until when (ms) a built challenge may be handed out as it is: while each of its offers still
 * has a payment window left. One without offers (signing failed) is built again as soon.
 */
export function offersFreshUntil(required: PaymentRequired): number {
  const offers = decodeSignedOffers(extractOffersFromPaymentRequired(required));
  if (offers.length === 0) return Date.now() + OFFER_RENEWAL_SECONDS * 1000;
  const first = Math.min(...offers.map((offer) => offer.validUntil));
  return (first - OFFER_RENEWAL_SECONDS) * 1000;
}
