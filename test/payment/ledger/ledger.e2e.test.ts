/**
 * The payment ledger end to end (issue 18): a real devnet (anvil + DevUSDC + the project's
 * facilitator) behind a real proxy that loses, delays or blurs settle answers, paid by the
 * official x402 clients (v2, and the SDK's v1 scheme). Each case checks the chain: exactly one
 * transfer, the authorization used, and the report obtainable by a retry of the same proof.
 */
import { decodePaymentResponseHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import {
  PaymentRequiredV1Schema,
  PaymentRequirementsV1Schema,
  type PaymentPayloadV1,
} from "@x402/core/schemas";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import { PAYMENT_IDENTIFIER, generatePaymentId } from "@x402/extensions/payment-identifier";
import type { Address, Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authorizationKey, authorizationOf } from "../../../src/payment/ledger/authorization.js";
import type { PaymentGateOptions } from "../../../src/payment/index.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import {
  PRICE_UNITS,
  devnetGate,
  postSnapshot,
  postUntilAnswered,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  v2ProofFor,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { authorizationUsed } from "../../fixtures/usdc.js";

let devnet: PaidDevnet;
let proxy: FacilitatorProxy;
let target: CountingTarget;
const opened: { close(): Promise<void> }[] = [];

interface Service {
  url: string;
  store: MemoryPaymentRecordStore;
}

async function startService(options: Partial<PaymentGateOptions> = {}): Promise<Service> {
  const store = new MemoryPaymentRecordStore();
  const service = await startGatedService({
    engine: target.engine,
    scope: target.scope,
    gate: {
      ...devnetGate(devnet, proxy.url),
      store,
      rpcUrls: { [devnet.network]: devnet.rpcUrl },
      ...options,
    },
  });
  opened.push(service);
  return { url: service.url, store };
}

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
  await proxy?.close();
  await target?.close();
  await devnet?.close();
});

function post(base: string, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return postSnapshot(base, target.url, headers, signal);
}

/** A v2 proof by the official client. */
function v2Proof(base: string, account: PrivateKeyAccount) {
  return v2ProofFor(base, target.url, account);
}

/** A v1 proof by the SDK's v1 scheme (as X-PAYMENT), carrying a payment id when given. */
async function v1Proof(base: string, account: PrivateKeyAccount, paymentId?: string) {
  const response = await post(base);
  expect(response.status).toBe(402);
  const accepted = PaymentRequiredV1Schema.parse(await response.json()).accepts[0];
  const requirements = PaymentRequirementsV1Schema.parse(accepted);
  const payload = (await new ExactEvmSchemeV1(account).createPaymentPayload(
    1,
    requirements as never,
  )) as unknown as PaymentPayloadV1 & { extensions?: Record<string, unknown> };
  if (paymentId !== undefined) {
    payload.extensions = { [PAYMENT_IDENTIFIER]: { info: { required: false, id: paymentId } } };
  }
  const header = Buffer.from(JSON.stringify(payload)).toString("base64");
  return { "X-PAYMENT": header };
}

/** The authorization a proof header carries. */
function authorizationIn(headers: Record<string, string>): { from: Address; nonce: Hex } {
  const value = headers["PAYMENT-SIGNATURE"] ?? headers["X-PAYMENT"]!;
  const decoded = decodePaymentSignatureHeader(value) as unknown as {
    payload: { authorization: { from: Address; nonce: Hex } };
  };
  return decoded.payload.authorization;
}

/** Whether the authorization a proof header carries is used on chain. */
function authorizationUsedIn(headers: Record<string, string>): Promise<boolean> {
  const { from, nonce } = authorizationIn(headers);
  return authorizationUsed(devnet.chain, devnet.usdcAddress, from, nonce);
}

/** The record key of a proof, as the ledger computes it. */
function recordKey(headers: Record<string, string>): string {
  const value = headers["PAYMENT-SIGNATURE"] ?? headers["X-PAYMENT"]!;
  const payload = decodePaymentSignatureHeader(value);
  return authorizationKey(
    authorizationOf(payload, { network: devnet.network, asset: devnet.usdcAddress })!,
  );
}

describe("x402 v1: a lost settle answer", () => {
  it("503, then the retry with the same X-PAYMENT gets the report and its receipt; one transfer", async () => {
    const service = await startService();
    const account = devnet.payer(0);
    const before = await devnet.balanceOf(account.address);
    const headers = await v1Proof(service.url, account);
    const hitsBefore = target.hits();

    proxy.failNextSettle("settle-then-drop");
    const lost = await post(service.url, headers);
    expect(lost.status).toBe(503);
    expect(Number(lost.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await authorizationUsedIn(headers)).toBe(true);

    const settlesBefore = proxy.settles.seen;
    const retry = await post(service.url, headers);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ requested_url: target.url, reachable: true });
    const receipt = decodePaymentResponseHeader(retry.headers.get("X-PAYMENT-RESPONSE")!);
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(retry.headers.get("PAYMENT-RESPONSE")).toBeNull();
    // From the chain: no second settle, no second snapshot.
    expect(proxy.settles.seen).toBe(settlesBefore);
    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });
});

describe("the facilitator answers settlement_pending with the transaction", () => {
  it("503 and the report kept; once mined, the retry gets it with that transaction; one transfer", async () => {
    const service = await startService();
    const account = devnet.payer(1);
    const before = await devnet.balanceOf(account.address);
    const headers = await v2Proof(service.url, account);

    proxy.failNextSettle("pending");
    const pending = await post(service.url, headers);
    expect(pending.status).toBe(503);
    expect(pending.headers.get("retry-after")).toBeTruthy();
    expect(await pending.json()).not.toHaveProperty("requested_url");
    const kept = await service.store.get(recordKey(headers));
    expect(kept).toMatchObject({ state: "settling", transaction: expect.stringMatching(/^0x/) });
    // The devnet mines at once: the transfer is on chain.
    expect(await authorizationUsedIn(headers)).toBe(true);

    const retry = await post(service.url, headers);
    expect(retry.status).toBe(200);
    const receipt = decodePaymentResponseHeader(retry.headers.get("PAYMENT-RESPONSE")!);
    expect(receipt.transaction).toBe(kept?.transaction);
    const onChain = await devnet.chain.getTransactionReceipt({ hash: receipt.transaction as Hex });
    expect(onChain.status).toBe("success");
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });
});

describe("a client that hangs up while settle runs", () => {
  it("the retry gets the report; one settlement, one transfer", async () => {
    const service = await startService();
    const account = devnet.payer(2);
    const before = await devnet.balanceOf(account.address);
    const headers = await v2Proof(service.url, account);
    const hitsBefore = target.hits();

    const held = proxy.holdNextSettle();
    const hangUp = new AbortController();
    const first = post(service.url, headers, hangUp.signal).catch((error: unknown) => error);
    await held.settled;
    hangUp.abort();
    expect(await first).toBeInstanceOf(Error);
    held.release();

    const settlesBefore = proxy.settles.seen;
    const retry = await postUntilAnswered(service.url, target.url, headers);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ requested_url: target.url });
    expect(decodePaymentResponseHeader(retry.headers.get("PAYMENT-RESPONSE")!).success).toBe(true);
    expect(proxy.settles.seen).toBe(settlesBefore);
    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
    // Delivered now: the proof is served once.
    expect((await post(service.url, headers)).status).toBe(402);
  });
});

describe("the same proof twice at once", () => {
  it("one is served, the other is told it is in progress or used; one transfer", async () => {
    const service = await startService();
    const account = devnet.payer(3);
    const before = await devnet.balanceOf(account.address);
    const headers = await v2Proof(service.url, account);
    const statuses = (
      await Promise.all([post(service.url, headers), post(service.url, headers)])
    ).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect([402, 409]).toContain(statuses.find((s) => s !== 200));
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });
});

describe("x402 v1 with a payment-identifier", () => {
  it("the same answer again, byte for byte, with the same receipt; one snapshot, one transfer", async () => {
    const service = await startService();
    const account = devnet.payer(4);
    const before = await devnet.balanceOf(account.address);
    const headers = await v1Proof(service.url, account, generatePaymentId());
    const hitsBefore = target.hits();

    const first = await post(service.url, headers);
    expect(first.status).toBe(200);
    const body = await first.text();
    const receipt = first.headers.get("X-PAYMENT-RESPONSE");
    expect(receipt).toBeTruthy();

    const second = await post(service.url, headers);
    expect(second.status).toBe(200);
    expect(await second.text()).toBe(body);
    expect(second.headers.get("X-PAYMENT-RESPONSE")).toBe(receipt);
    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });
});

describe("the reconciler", () => {
  it("moves a settlement whose answer was lost to settled without any retry; the retry is served from it", async () => {
    const service = await startService({ reconcileIntervalMs: 100 });
    const account = devnet.payer(5);
    const before = await devnet.balanceOf(account.address);
    const headers = await v2Proof(service.url, account);

    proxy.failNextSettle("settle-then-drop");
    expect((await post(service.url, headers)).status).toBe(503);
    const key = recordKey(headers);
    await expect
      .poll(async () => (await service.store.get(key))?.state, { timeout: 10_000 })
      .toBe("settled");
    const settled = await service.store.get(key);
    expect(settled?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(settled?.delivered).toBe(false);

    const settlesBefore = proxy.settles.seen;
    const retry = await postUntilAnswered(service.url, target.url, headers);
    expect(retry.status).toBe(200);
    expect(decodePaymentResponseHeader(retry.headers.get("PAYMENT-RESPONSE")!).transaction).toBe(
      settled?.transaction,
    );
    expect(proxy.settles.seen).toBe(settlesBefore);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });
});
