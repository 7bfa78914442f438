/**
 * x402's offer-receipt extension end to end (docs/contract.md §7.11), over the real devnet: the
 * offers of every 402 (v2 header, v1 body, MCP) and the receipts of every settlement (v2, v1,
 * MCP) are checked with @x402/extensions' own verifiers against the service's public key, the
 * payments against the chain.
 */
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentRequired, SettleResponse } from "@x402/core/types";
import {
  OFFER_RECEIPT,
  decodeSignedOffers,
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  findAcceptsObjectFromSignedOffer,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureJWS,
  type DecodedOffer,
  type JWSSignedOffer,
  type JWSSignedReceipt,
  type SignedReceipt,
} from "@x402/extensions/offer-receipt";
import type { Network } from "@x402/core/types";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from "jose";
import { createWalletClient, decodeEventLog, http, publicActions, type Hex } from "viem";
import { baseSepolia } from "viem/chains";
import { wrapFetchWithPayment } from "x402-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI } from "../../../src/devnet/constants.js";
import { MCP_RECEIPT_META } from "../../../src/payment/doors/mcp-tool.js";
import { authorizationKey, authorizationOf } from "../../../src/payment/ledger/authorization.js";
import type { PaymentRecordStore } from "../../../src/store/index.js";
import { MCP_SNAPSHOT_RESOURCE } from "../../../src/routes.js";
import {
  PRICE_UNITS,
  challengeIn,
  devnetGate,
  loopbackScope,
  paidSnapshot,
  postSnapshot,
  postUntilAnswered,
  startGatedService,
  startPaidDevnet,
  v2Proof,
  type GatedService,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import {
  startLocalTarget,
  claimingBaseMainnet,
  type LocalTarget,
} from "../../fixtures/paid-service.js";
import type { PrivateJwk } from "../../../src/payment/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { startForwardingProxy, type ForwardingProxy } from "../../fixtures/forwarding-proxy.js";
import {
  callSnapshot,
  challengeOf,
  connectedMcpClient,
  signedProof,
} from "../../fixtures/mcp-client.js";

let devnet: PaidDevnet;
let target: LocalTarget;
let service: GatedService;
/** The service's public key, as @x402/extensions' verifiers take it. */
let publicJwk: VerificationKey;
/** The service's private key, as the gate takes it. */
let servicePrivateJwk: PrivateJwk;
let thumbprint: string;
/** The service's payment records. */
let store: PaymentRecordStore;

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startLocalTarget();
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  publicJwk = verificationKey(await exportJWK(publicKey));
  thumbprint = await calculateJwkThumbprint(publicJwk);
  servicePrivateJwk = (await exportJWK(privateKey)) as PrivateJwk;
  const gate = devnetGate(devnet);
  store = gate.store;
  service = await startGatedService({
    engine: target.engine,
    scope: loopbackScope([target.port]),
    gate: { ...gate, signingKey: { privateJwk: servicePrivateJwk } },
    fastPath: true,
    mcp: true,
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await target?.close();
  await devnet?.close();
});

type VerificationKey = Parameters<typeof verifyOfferSignatureJWS>[1] & { kty: string };

function verificationKey({ kty, crv, x }: JWK): VerificationKey {
  return { kty: kty!, crv: crv!, x: x! };
}

/** A wallet that paid for nothing here. */
const OTHER_WALLET = "0x000000000000000000000000000000000000dEaD";

const SERVICE_KID = () => `did:web:${encodeURIComponent(new URL(service.url).host)}#${thumbprint}`;

/**
 * The challenge's signed offers, each verified with the service's key and matching its own
 * `accepts` entry (terms and resource); `kid` names the service as did:web.
 */
async function verifiedOffers(
  required: { accepts: PaymentRequired["accepts"]; extensions?: Record<string, unknown> },
  resourceUrl: string,
  kid: string,
): Promise<DecodedOffer[]> {
  const signed = extractOffersFromPaymentRequired(required as PaymentRequired);
  expect(signed).toHaveLength(required.accepts.length);
  for (const offer of signed) {
    const payload = await verifyOfferSignatureJWS(offer as JWSSignedOffer, publicJwk);
    expect(payload.resourceUrl).toBe(resourceUrl);
    expect(extractJWSHeader((offer as JWSSignedOffer).signature)).toEqual({ alg: "EdDSA", kid });
    expect(payload.validUntil).toBeGreaterThan(Date.now() / 1000 + 300);
  }
  const decoded = decodeSignedOffers(signed);
  decoded.forEach((offer, i) => {
    expect(findAcceptsObjectFromSignedOffer(offer, required.accepts)).toBe(required.accepts[i]);
  });
  return decoded;
}

/** The receipt verified with the service's key and matching the offer and the payer. */
async function expectReceiptFor(
  receipt: SignedReceipt | undefined,
  offer: DecodedOffer,
  payer: string,
  transaction: string,
): Promise<void> {
  expect(receipt?.format).toBe("jws");
  const payload = await verifyReceiptSignatureJWS(receipt as JWSSignedReceipt, publicJwk);
  expect(payload).toMatchObject({ transaction, network: offer.network });
  // The address as the settlement named it: checksummed, or in lower case from the chain.
  expect(payload.payer.toLowerCase()).toBe(payer.toLowerCase());
  expect(verifyReceiptMatchesOffer(receipt!, offer, [payer])).toBe(true);
  // Another wallet's receipt it is not.
  expect(verifyReceiptMatchesOffer(receipt!, offer, [OTHER_WALLET])).toBe(false);
}

/** One USDC transfer of the price from `from` to the payee in `transaction`. */
async function expectPaid(transaction: string, from: string): Promise<void> {
  const receipt = await devnet.chain.getTransactionReceipt({ hash: transaction as Hex });
  expect(receipt.status).toBe("success");
  const transfers = receipt.logs
    .filter((log) => log.address.toLowerCase() === devnet.usdcAddress.toLowerCase())
    .map((log) => decodeEventLog({ abi: DEV_USDC_ABI, ...log }))
    .filter((event) => event.eventName === "Transfer");
  expect(transfers).toHaveLength(1);
  expect(transfers[0]?.args).toMatchObject({ from, to: devnet.payTo, value: PRICE_UNITS });
}

/** A JWS with one payload field changed, its signature kept. */
function tampered(jws: string, change: Record<string, unknown>): string {
  const [header, payload, signature] = jws.split(".");
  const changed = { ...JSON.parse(Buffer.from(payload!, "base64url").toString()), ...change };
  return `${header}.${Buffer.from(JSON.stringify(changed)).toString("base64url")}.${signature}`;
}

const resourceUrl = () => `${service.url}/v1/snapshot`;

describe("signed offers in every 402", () => {
  it("v2 PAYMENT-REQUIRED: one per accepts entry, the same from the fast path; no sign-in-with-x", async () => {
    const first = challengeIn(await postSnapshot(service.url, target.url));
    const fastBefore = service.fastAnswers;
    const again = challengeIn(await postSnapshot(service.url, target.url));
    expect(service.fastAnswers).toBe(fastBefore + 1);
    // Signed once per built challenge: the prepared one hands out the same signatures.
    expect(again.extensions?.[OFFER_RECEIPT]).toEqual(first.extensions?.[OFFER_RECEIPT]);
    const [offer] = await verifiedOffers(first, resourceUrl(), SERVICE_KID());
    expect(offer).toMatchObject({ network: devnet.network, payTo: devnet.payTo, amount: "50000" });
    // Crawlers list a paid route that offers sign-in-with-x as free.
    expect(Object.keys(first.extensions ?? {})).not.toContain("sign-in-with-x");
  });

  it("a tampered offer fails verification", async () => {
    const required = challengeIn(await postSnapshot(service.url, target.url));
    const [offer] = extractOffersFromPaymentRequired(required) as JWSSignedOffer[];
    const cheaper = { ...offer!, signature: tampered(offer!.signature, { amount: "1" }) };
    await expect(verifyOfferSignatureJWS(cheaper, publicJwk)).rejects.toThrow();
    const other = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
    const otherKey = verificationKey(await exportJWK(other.publicKey));
    await expect(verifyOfferSignatureJWS(offer!, otherKey)).rejects.toThrow();
  });

  it("v1 body: the same signed offers in `extensions`; no sign-in-with-x", async () => {
    const response = await postSnapshot(service.url, target.url);
    const body = (await response.json()) as {
      x402Version: number;
      accepts: Array<Record<string, unknown>>;
      extensions?: Record<string, unknown>;
    };
    expect(body.x402Version).toBe(1);
    const v2 = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED")!);
    expect(body.extensions?.[OFFER_RECEIPT]).toEqual(v2.extensions?.[OFFER_RECEIPT]);
    // The v1 entries are the v2 ones by another network name: the offers name them in CAIP-2.
    await verifiedOffers(
      { accepts: v2.accepts, extensions: body.extensions },
      resourceUrl(),
      SERVICE_KID(),
    );
    expect(body.accepts).toHaveLength(v2.accepts.length);
    expect(Object.keys(body.extensions ?? {})).not.toContain("sign-in-with-x");
  });

  it("MCP PaymentRequired (structuredContent)", async () => {
    const { client } = await connectedMcpClient(service.url);
    try {
      const required = challengeOf(await callSnapshot(client, target.url));
      // No request host names the tool's resource: did:web of localhost without PUBLIC_URL.
      await verifiedOffers(required, MCP_SNAPSHOT_RESOURCE, `did:web:localhost#${thumbprint}`);
    } finally {
      await client.close();
    }
  });
});

describe("signed receipts in every settlement", () => {
  it("v2 (@x402/fetch): PAYMENT-RESPONSE's receipt verifies, matches the offer; the replay carries the same", async () => {
    const account = devnet.payer(0);
    const offer = decodeSignedOffers(
      extractOffersFromPaymentRequired(challengeIn(await postSnapshot(service.url, target.url))),
    )[0]!;
    const response = await paidSnapshot(service.url, target.url, account);
    expect(response.status).toBe(200);
    await response.text();
    const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
    await expectPaid(settlement.transaction, account.address);
    const receipt = extractReceiptFromResponse(response);
    await expectReceiptFor(receipt, offer, account.address, settlement.transaction);

    // A tampered receipt (another payer) fails verification.
    const forged = {
      format: "jws" as const,
      signature: tampered((receipt as JWSSignedReceipt).signature, {
        payer: OTHER_WALLET,
      }),
    };
    await expect(verifyReceiptSignatureJWS(forged, publicJwk)).rejects.toThrow();
  });

  it("v2 replay of a proof with a payment id: the kept answer carries the same receipt", async () => {
    const account = devnet.payer(1);
    const required = challengeIn(await postSnapshot(service.url, target.url));
    const { payload, headers } = await v2Proof(account, required, `offer-receipt-${Date.now()}`);
    const first = await postSnapshot(service.url, target.url, headers);
    expect(first.status).toBe(200);
    await first.text();
    const again = await postSnapshot(service.url, target.url, headers);
    expect(again.status).toBe(200);
    await again.text();
    const receipt = extractReceiptFromResponse(first);
    expect(extractReceiptFromResponse(again)).toEqual(receipt);
    // Kept with the payment's record, not signed again for the replay.
    const auth = authorizationOf(payload, { network: devnet.network, asset: devnet.usdcAddress });
    const kept = await store.get(authorizationKey(auth!));
    const keptSettlement = kept?.settlement as SettleResponse | undefined;
    expect(keptSettlement?.extensions?.[OFFER_RECEIPT]).toEqual({ info: { receipt } });
    const settlement = decodePaymentResponseHeader(first.headers.get("PAYMENT-RESPONSE")!);
    await expectPaid(settlement.transaction, account.address);
    const [offer] = decodeSignedOffers(extractOffersFromPaymentRequired(required));
    await expectReceiptFor(receipt, offer!, account.address, settlement.transaction);
  });

  it("v1 (x402-fetch 1.x): X-PAYMENT-RESPONSE's receipt verifies and matches the v1 body's offer", async () => {
    const account = devnet.payer(2);
    const challenge = (await (await postSnapshot(service.url, target.url)).json()) as {
      extensions?: Record<string, unknown>;
    };
    const [offer] = decodeSignedOffers(extractOffersFromPaymentRequired(challenge as never));
    const wallet = createWalletClient({
      account,
      chain: baseSepolia,
      transport: http(devnet.rpcUrl),
    }).extend(publicActions);
    const paidFetch = wrapFetchWithPayment(
      fetch,
      wallet as unknown as Parameters<typeof wrapFetchWithPayment>[1],
    );
    const response = await paidFetch(`${service.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: target.url }),
    });
    expect(response.status).toBe(200);
    await response.text();
    expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
    const settlement = decodePaymentResponseHeader(response.headers.get("X-PAYMENT-RESPONSE")!);
    await expectPaid(settlement.transaction, account.address);
    await expectReceiptFor(
      extractReceiptFromResponse(response),
      offer!,
      account.address,
      settlement.transaction,
    );
  });

  it("MCP: _meta's x402/payment-response carries a receipt that verifies and matches", async () => {
    const account = devnet.payer(3);
    const { client } = await connectedMcpClient(service.url);
    try {
      const required = challengeOf(await callSnapshot(client, target.url));
      const [offer] = decodeSignedOffers(extractOffersFromPaymentRequired(required));
      const proof = await signedProof(required, account);
      const result: CallToolResult = await callSnapshot(client, target.url, {
        "x402/payment": proof,
      });
      expect(result.isError).toBeFalsy();
      const settlement = result._meta?.[MCP_RECEIPT_META] as SettleResponse;
      await expectPaid(settlement.transaction, account.address);
      const receipt = (
        settlement.extensions?.[OFFER_RECEIPT] as { info: { receipt: SignedReceipt } }
      ).info.receipt;
      await expectReceiptFor(receipt, offer!, account.address, settlement.transaction);
    } finally {
      await client.close();
    }
  });
});

describe("a settlement the reconciler found on chain", () => {
  let proxy: FacilitatorProxy;
  let lost: GatedService;
  let lostStore: PaymentRecordStore;

  beforeAll(async () => {
    proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
    const gate = devnetGate(devnet, proxy.url);
    lostStore = gate.store;
    lost = await startGatedService({
      engine: target.engine,
      scope: loopbackScope([target.port]),
      gate: {
        ...gate,
        rpcUrls: { [devnet.network]: devnet.rpcUrl },
        reconcileIntervalMs: 100,
        signingKey: { privateJwk: servicePrivateJwk },
      },
    });
  });

  afterAll(async () => {
    await lost?.close();
    await proxy?.close();
  });

  it("its retry gets a receipt, kept: the payment id's replay carries the same", async () => {
    const account = devnet.payer(5);
    const required = challengeIn(await postSnapshot(lost.url, target.url));
    const { payload, headers } = await v2Proof(account, required, `reconciled-${Date.now()}`);
    const auth = authorizationOf(payload, { network: devnet.network, asset: devnet.usdcAddress });
    const key = authorizationKey(auth!);

    proxy.failNextSettle("settle-then-drop");
    expect((await postSnapshot(lost.url, target.url, headers)).status).toBe(503);
    await expect
      .poll(async () => (await lostStore.get(key))?.state, { timeout: 10_000 })
      .toBe("settled");

    const retry = await postUntilAnswered(lost.url, target.url, headers);
    expect(retry.status).toBe(200);
    await retry.text();
    const settlement = decodePaymentResponseHeader(retry.headers.get("PAYMENT-RESPONSE")!);
    await expectPaid(settlement.transaction, account.address);
    const receipt = extractReceiptFromResponse(retry);
    const [offer] = decodeSignedOffers(extractOffersFromPaymentRequired(required));
    await expectReceiptFor(receipt, offer!, account.address, settlement.transaction);
    const kept = (await lostStore.get(key))?.settlement as SettleResponse | undefined;
    expect(kept?.extensions?.[OFFER_RECEIPT]).toEqual({ info: { receipt } });

    const again = await postSnapshot(lost.url, target.url, headers);
    expect(again.status).toBe(200);
    await again.text();
    expect(extractReceiptFromResponse(again)).toEqual(receipt);
  });
});

describe("PAYMENT-REQUIRED with both networks", () => {
  let facilitator: ForwardingProxy;
  let both: GatedService;

  beforeAll(async () => {
    facilitator = await startForwardingProxy({
      upstream: devnet.facilitatorUrl,
      rewrite: claimingBaseMainnet,
    });
    both = await startGatedService({
      engine: target.engine,
      scope: loopbackScope([target.port]),
      gate: {
        ...devnetGate(devnet, facilitator.url),
        networks: ["eip155:8453" as Network, devnet.network],
        publicUrl: "https://secsnap.example.com",
      },
    });
  });

  afterAll(async () => {
    await both?.close();
    await facilitator?.close();
  });

  it("stays under 8 KiB with a signed offer for base and base-sepolia", async () => {
    const response = await postSnapshot(both.url, target.url);
    expect(response.status).toBe(402);
    const header = response.headers.get("PAYMENT-REQUIRED")!;
    expect(`payment-required: ${header}`.length).toBeLessThan(8 * 1024);
    const required = decodePaymentRequiredHeader(header);
    // The official client echoes the extensions: its proof must stay readable (at most 8 KiB).
    const { headers } = await v2Proof(devnet.payer(4), required);
    const proof = headers["PAYMENT-SIGNATURE"]!;
    expect(proof.length).toBeLessThan(8 * 1024);
    console.log(`PAYMENT-REQUIRED: ${header.length} characters, its proof ${proof.length}`);
    expect(required.accepts.map((entry) => entry.network)).toEqual(["eip155:8453", devnet.network]);
    const offers = extractOffersFromPaymentRequired(required);
    expect(offers).toHaveLength(2);
    for (const offer of offers) {
      const { kid } = extractJWSHeader((offer as JWSSignedOffer).signature);
      expect(kid).toMatch(/^did:web:secsnap\.example\.com#[\w-]{43}$/);
    }
  });
});
