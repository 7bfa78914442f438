/**
 * Paying once, end to end over the real devnet (anvil + DevUSDC + the project's facilitator,
 * behind a real proxy that can lose settle answers) with the official v2 client's proofs: a
 * payment id replays its answer without a second snapshot or transfer, and a settlement with no
 * known outcome keeps the report until the retry learns the payment was made. Money on chain.
 */
import { decodePaymentResponseHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import { PAYMENT_IDENTIFIER, generatePaymentId } from "@x402/extensions/payment-identifier";
import { createWalletClient, http, parseAbi, parseSignature, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PaymentGateOptions } from "../../../src/payment/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import {
  PRICE_UNITS,
  challengeIn,
  devnetGate,
  postSnapshot as post,
  postUntilAnswered,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  v2ProofFor,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";

let devnet: PaidDevnet;
let proxy: FacilitatorProxy;
let target: CountingTarget;
const opened: { close(): Promise<void> }[] = [];

async function startService(options: Partial<PaymentGateOptions> = {}): Promise<string> {
  const service = await startGatedService({
    engine: target.engine,
    scope: target.scope,
    gate: { ...devnetGate(devnet, proxy.url), ...options },
  });
  opened.push(service);
  return service.url;
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

/** A proof by the official client, carrying `paymentId` when given. */
function proof(base: string, account: PrivateKeyAccount, paymentId?: string) {
  return v2ProofFor(base, target.url, account, paymentId);
}

describe("payment-identifier", () => {
  it("declares the extension, optional for clients, in the v2 challenge", async () => {
    const base = await startService();
    const required = challengeIn(await post(base, target.url));
    expect(required.extensions?.[PAYMENT_IDENTIFIER]).toEqual({ info: { required: false } });
  });

  it("the same id and proof twice: the same report and PAYMENT-RESPONSE, one snapshot, one transfer", async () => {
    const base = await startService();
    const account = devnet.payer(0);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account, generatePaymentId());
    const hitsBefore = target.hits();

    const first = await post(base, target.url, headers);
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const firstReceipt = first.headers.get("payment-response");
    expect(firstReceipt).toBeTruthy();
    expect(decodePaymentResponseHeader(firstReceipt!).success).toBe(true);

    const second = await post(base, target.url, headers);
    expect(second.status).toBe(200);
    expect(await second.text()).toBe(firstBody);
    expect(second.headers.get("payment-response")).toBe(firstReceipt);

    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("the same id and proof ten times at once: one snapshot, one transfer, the same report for all", async () => {
    const base = await startService();
    const account = devnet.payer(1);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account, generatePaymentId());
    const hitsBefore = target.hits();

    const answers = await Promise.all(
      Array.from({ length: 10 }, () => postUntilAnswered(base, target.url, headers)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    const bodies = new Set(await Promise.all(answers.map((a) => a.text())));
    const receipts = new Set(answers.map((a) => a.headers.get("payment-response")));
    expect(bodies.size).toBe(1);
    expect(receipts.size).toBe(1);

    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("the same id with another body or another proof is 409, and nothing more is charged", async () => {
    const base = await startService();
    const account = devnet.payer(2);
    const before = await devnet.balanceOf(account.address);
    const id = generatePaymentId();
    const headers = await proof(base, account, id);
    expect((await post(base, target.url, headers)).status).toBe(200);

    const otherBody = await post(base, `${target.url}?other`, headers);
    expect(otherBody.status).toBe(409);
    expect(otherBody.headers.get("content-type")).toContain("application/json");
    expect(((await otherBody.json()) as { error: string }).error).toMatch(/payment id/);

    const otherProof = await post(base, target.url, await proof(base, account, id));
    expect(otherProof.status).toBe(409);

    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });
});

describe("a malformed payment id", () => {
  it("is a 402 saying why, before verify, and nothing moves", async () => {
    const base = await startService();
    const account = devnet.payer(7);
    const before = await devnet.balanceOf(account.address);
    const refused = await post(base, target.url, await proof(base, account, "short id!"));
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: string }).error).toMatch(
      /Unreadable payment proof: payment-identifier is invalid/,
    );
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });
});

describe("settlement with no known outcome", () => {
  it("settled, then the connection dropped: 503 with Retry-After; the retry gets the kept report from the chain, one transfer", async () => {
    const base = await startService({ rpcUrls: { [devnet.network]: devnet.rpcUrl } });
    const account = devnet.payer(3);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account);
    const hitsBefore = target.hits();

    proxy.failNextSettle("settle-then-drop");
    const lost = await post(base, target.url, headers);
    expect(lost.status).toBe(503);
    expect(Number(lost.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await lost.json()) as { error: string }).error).toMatch(/same payment proof/);
    // The transfer landed although the answer was lost.
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);

    const settlesBefore = proxy.settles.seen;
    const retry = await post(base, target.url, headers);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ requested_url: target.url, reachable: true });
    const receipt = decodePaymentResponseHeader(retry.headers.get("payment-response")!);
    expect(receipt.success).toBe(true);
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const onChain = await devnet.chain.getTransactionReceipt({
      hash: receipt.transaction as `0x${string}`,
    });
    expect(onChain.status).toBe("success");
    // Known from the chain: no second settle, no second snapshot, still one transfer.
    expect(proxy.settles.seen).toBe(settlesBefore);
    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);

    // Served once: the proof now buys nothing more.
    const again = await post(base, target.url, headers);
    expect(again.status).toBe(402);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("without an RPC URL, 'authorization already used' after a lost answer is never taken as paid: 503 again, no report", async () => {
    const base = await startService();
    const account = devnet.payer(4);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account, generatePaymentId());
    const hitsBefore = target.hits();

    proxy.failNextSettle("settle-then-drop");
    expect((await post(base, target.url, headers)).status).toBe(503);
    // Our settlement or the payer's own use of the nonce: "already used" cannot tell them apart.
    const settlesBefore = proxy.settles.seen;
    const retry = await post(base, target.url, headers);
    expect(retry.status).toBe(503);
    expect(Number(retry.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await retry.json()).not.toHaveProperty("requested_url");
    expect(proxy.settles.seen).toBe(settlesBefore + 1);

    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("without an RPC URL, a refusal of the retry's settle after a lost answer is no proof: 503 again, never freed", async () => {
    const base = await startService();
    const account = devnet.payer(3);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account);
    const hitsBefore = target.hits();

    proxy.failNextSettle("settle-then-drop");
    expect((await post(base, target.url, headers)).status).toBe(503);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
    // What @x402/evm's settle answers to any retry within 6 s of validBefore or after it: it
    // checks the time before it looks at the nonce, so it refuses a proof it already settled.
    proxy.failNextSettle("refuse", "invalid_exact_evm_payload_authorization_valid_before");
    const retry = await post(base, target.url, headers);
    expect(retry.status).toBe(503);
    expect(Number(retry.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await retry.json()).not.toHaveProperty("requested_url");

    // Still settling, the report kept: the next retry settles again (a freed record would be
    // verified again instead, and refused as already used by its verify).
    const settlesBefore = proxy.settles.seen;
    const verifiesBefore = proxy.verifies.seen;
    expect((await post(base, target.url, headers)).status).toBe(503);
    expect(proxy.settles.seen).toBe(settlesBefore + 1);
    expect(proxy.verifies.seen).toBe(verifiesBefore);
    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("the settle never reached the facilitator: 503, nothing moved; the retry settles, one transfer", async () => {
    const base = await startService({ rpcUrls: { [devnet.network]: devnet.rpcUrl } });
    const account = devnet.payer(5);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account);
    const hitsBefore = target.hits();

    proxy.failNextSettle("drop-unforwarded");
    const lost = await post(base, target.url, headers);
    expect(lost.status).toBe(503);
    expect(lost.headers.get("retry-after")).toBeTruthy();
    expect(await devnet.balanceOf(account.address)).toBe(before);

    const forwardedBefore = proxy.settles.forwarded;
    const retry = await post(base, target.url, headers);
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ requested_url: target.url, reachable: true });
    const receipt = decodePaymentResponseHeader(retry.headers.get("payment-response")!);
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(proxy.settles.forwarded).toBe(forwardedBefore + 1);
    expect(target.hits() - hitsBefore).toBe(1);
    expect(before - (await devnet.balanceOf(account.address))).toBe(PRICE_UNITS);
  });

  it("an authorization the payer canceled on chain meanwhile is not taken as paid: 402, no report", async () => {
    const base = await startService({ rpcUrls: { [devnet.network]: devnet.rpcUrl } });
    const account = devnet.payer(7);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account);
    const { nonce } = (
      decodePaymentSignatureHeader(headers["PAYMENT-SIGNATURE"]!).payload as {
        authorization: { nonce: Hex };
      }
    ).authorization;

    proxy.failNextSettle("drop-unforwarded");
    expect((await post(base, target.url, headers)).status).toBe(503);

    const signature = parseSignature(
      await account.signTypedData({
        domain: {
          name: "USDC",
          version: "2",
          chainId: devnet.chainId,
          verifyingContract: devnet.usdcAddress,
        },
        types: {
          CancelAuthorization: [
            { name: "authorizer", type: "address" },
            { name: "nonce", type: "bytes32" },
          ],
        },
        primaryType: "CancelAuthorization",
        message: { authorizer: account.address, nonce },
      }),
    );
    const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) });
    const hash = await wallet.writeContract({
      chain: null,
      address: devnet.usdcAddress,
      abi: parseAbi([
        "function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
      ]),
      functionName: "cancelAuthorization",
      args: [
        account.address,
        nonce,
        Number(signature.v ?? 27n + BigInt(signature.yParity)),
        signature.r,
        signature.s,
      ],
    });
    expect((await devnet.chain.waitForTransactionReceipt({ hash })).status).toBe("success");

    const retry = await post(base, target.url, headers);
    expect(retry.status).toBe(402);
    const body = (await retry.json()) as Record<string, unknown>;
    expect(body.error).toContain("authorization_canceled");
    expect(body).not.toHaveProperty("requested_url");
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });

  it("a settlement the facilitator refuses (success: false) is 402 with the reason, nothing moved", async () => {
    const base = await startService();
    const account = devnet.payer(6);
    const before = await devnet.balanceOf(account.address);
    const headers = await proof(base, account);

    proxy.failNextSettle("refuse", "invalid_exact_evm_insufficient_balance");
    const refused = await post(base, target.url, headers);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: string }).error).toContain(
      "invalid_exact_evm_insufficient_balance",
    );
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });
});
