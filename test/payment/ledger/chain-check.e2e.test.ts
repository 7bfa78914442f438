/**
 * The chain reader (src/payment/ledger/chain-check.ts) on the devnet's anvil and DevUSDC: a used
 * nonce is a payment only when the transaction that used it moved the offer's price from the payer
 * to its payTo — the payer can spend the same nonce on an authorization of its own, or batch it
 * with another authorization's transfer in one transaction.
 */
import { randomBytes } from "node:crypto";
import {
  createWalletClient,
  encodeFunctionData,
  http,
  parseAbi,
  toHex,
  type Hex,
  type WalletClient,
} from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI, MULTICALL3_ADDRESS } from "../../../src/devnet/constants.js";
import type { Authorization } from "../../../src/payment/ledger/authorization.js";
import { RpcChainReader, type Due } from "../../../src/payment/ledger/chain-check.js";
import { PRICE_UNITS, startPaidDevnet, type PaidDevnet } from "../../fixtures/paid-devnet.js";
import { signTransfer, spendOwnNonce, type AuthorizationArgs } from "../../fixtures/usdc.js";

const MULTICALL3_ABI = parseAbi([
  "struct Call3 { address target; bool allowFailure; bytes callData; }",
  "struct Result { bool success; bytes returnData; }",
  "function aggregate3(Call3[] calls) payable returns (Result[] returnData)",
]);

let devnet: PaidDevnet;
let reader: RpcChainReader;
/** Submits transactions as a facilitator would: another account pays the gas. */
let submitter: WalletClient;
let due: Due;

beforeAll(async () => {
  devnet = await startPaidDevnet();
  reader = new RpcChainReader({ [devnet.network]: devnet.rpcUrl });
  submitter = createWalletClient({ account: devnet.payer(7), transport: http(devnet.rpcUrl) });
  due = { payTo: devnet.payTo, amount: String(PRICE_UNITS) };
}, 120_000);

afterAll(async () => {
  await devnet?.close();
});

const freshNonce = (): Hex => toHex(randomBytes(32));

function authorization(payer: PrivateKeyAccount, nonce: Hex): Authorization {
  return {
    network: devnet.network,
    asset: devnet.usdcAddress.toLowerCase(),
    from: payer.address.toLowerCase() as Hex,
    nonce,
    validBefore: undefined,
  };
}

function sign(payer: PrivateKeyAccount, to: Hex, value: bigint, nonce: Hex) {
  return signTransfer(devnet.chain, devnet.usdcAddress, payer, { to, value, nonce });
}

/** One transaction carrying these authorizations (one: to the token; more: through Multicall3). */
async function submit(...authorizations: AuthorizationArgs[]): Promise<Hex> {
  const calls = authorizations.map((args) => ({
    target: devnet.usdcAddress,
    allowFailure: false,
    callData: encodeFunctionData({
      abi: DEV_USDC_ABI,
      functionName: "transferWithAuthorization",
      args,
    }),
  }));
  const hash = await submitter.sendTransaction({
    account: submitter.account!,
    chain: null,
    ...(calls.length === 1
      ? { to: devnet.usdcAddress, data: calls[0]!.callData }
      : {
          to: MULTICALL3_ADDRESS,
          data: encodeFunctionData({
            abi: MULTICALL3_ABI,
            functionName: "aggregate3",
            args: [calls],
          }),
        }),
  });
  expect((await devnet.chain.waitForTransactionReceipt({ hash })).status).toBe("success");
  return hash;
}

describe("what a used nonce says", () => {
  it("unused; then used by the transfer of the price to payTo: paid, by that transaction", async () => {
    const payer = devnet.payer(0);
    const nonce = freshNonce();
    const auth = authorization(payer, nonce);
    expect(await reader.read(auth, due, undefined)).toEqual({ kind: "unused" });

    const hash = await submit(await sign(payer, devnet.payTo, PRICE_UNITS, nonce));
    expect(await reader.read(auth, due, undefined)).toEqual({ kind: "used", transaction: hash });
  });

  it("the payer's own authorization of the nonce (to itself, value 0): used elsewhere, whatever transaction the record knew", async () => {
    const payer = devnet.payer(1);
    const nonce = freshNonce();
    const ours = `0x${"ab".repeat(32)}`;
    const hash = await spendOwnNonce(devnet.chain, devnet.rpcUrl, devnet.usdcAddress, payer, nonce);
    const auth = authorization(payer, nonce);
    expect(await reader.read(auth, due, undefined)).toEqual({
      kind: "used_elsewhere",
      transaction: hash,
    });
    expect(await reader.read(auth, due, ours)).toEqual({
      kind: "used_elsewhere",
      transaction: hash,
    });
  });

  it("a transfer to payTo below the price, or of the price to another address: used elsewhere", async () => {
    const payer = devnet.payer(2);
    const [short, elsewhere] = [freshNonce(), freshNonce()];
    await submit(await sign(payer, devnet.payTo, PRICE_UNITS - 1n, short));
    await submit(await sign(payer, devnet.payer(3).address, PRICE_UNITS, elsewhere));
    for (const nonce of [short, elsewhere]) {
      expect(await reader.read(authorization(payer, nonce), due, undefined)).toMatchObject({
        kind: "used_elsewhere",
      });
    }
  });

  it("two authorizations in one transaction: each nonce is paid by its own transfer only", async () => {
    const payer = devnet.payer(4);
    const [spent, paying] = [freshNonce(), freshNonce()];
    const hash = await submit(
      await sign(payer, payer.address, 0n, spent),
      await sign(payer, devnet.payTo, PRICE_UNITS, paying),
    );
    expect(await reader.read(authorization(payer, spent), due, undefined)).toEqual({
      kind: "used_elsewhere",
      transaction: hash,
    });
    expect(await reader.read(authorization(payer, paying), due, undefined)).toEqual({
      kind: "used",
      transaction: hash,
    });
  });
});
