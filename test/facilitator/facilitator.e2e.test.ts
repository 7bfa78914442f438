import { x402Client } from "@x402/core/client";
import { HTTPFacilitatorClient } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import { createPublicClient, getAddress, http, parseEventLogs } from "viem";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI, startDevnet, type Devnet } from "../../src/devnet/index.js";
import { MAX_BODY_BYTES } from "../../src/facilitator/app.js";
import { startFacilitator, type RunningFacilitator } from "../../src/facilitator/index.js";
import { authorizationTypes } from "@x402/evm";
import { GAS_PAYER } from "../../src/devnet/constants.js";
import { startForwardingProxy } from "../fixtures/forwarding-proxy.js";
import { holdMining, startFacilitatorOverNode } from "../fixtures/node-proxy.js";
import { spendOwnNonce } from "../fixtures/usdc.js";

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
});
afterAll(async () => {
  await devnet?.close();
});

const chain = () => createPublicClient({ transport: http(devnet.rpcUrl) });
const balanceOf = (address: Hex) =>
  chain().readContract({
    address: devnet.usdcAddress,
    abi: DEV_USDC_ABI,
    functionName: "balanceOf",
    args: [address],
  });

function requirements(amount = "50000"): PaymentRequirements {
  return {
    scheme: "exact",
    network: devnet.network,
    asset: devnet.usdcAddress,
    amount,
    payTo: devnet.payTo,
    maxTimeoutSeconds: 300,
    extra: { name: "USDC", version: "2" },
  };
}

/** A payment payload made the way a real x402 client makes it: the official exact EVM scheme. */
async function pay(payerIndex: number, req = requirements()): Promise<PaymentPayload> {
  const key = devnet.payerPrivateKeys[payerIndex];
  if (!key) throw new Error(`no payer ${payerIndex}`);
  const client = new x402Client().register(
    devnet.network,
    new ExactEvmScheme(privateKeyToAccount(key)),
  );
  return client.createPaymentPayload({
    x402Version: 2,
    resource: {
      url: "http://127.0.0.1/v1/snapshot",
      description: "test",
      mimeType: "application/json",
    },
    accepts: [req],
  });
}

type Auth = {
  from: Hex;
  to: Hex;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
};
const authOf = (p: PaymentPayload) => (p.payload as { authorization: Auth }).authorization;
const sigOf = (p: PaymentPayload) => (p.payload as { signature: Hex }).signature;

async function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}
const verify = (p: PaymentPayload, r = requirements()) =>
  post(devnet.facilitatorUrl, "/verify", {
    x402Version: 2,
    paymentPayload: p,
    paymentRequirements: r,
  });
const settle = (p: PaymentPayload, r = requirements()) =>
  post(devnet.facilitatorUrl, "/settle", {
    x402Version: 2,
    paymentPayload: p,
    paymentRequirements: r,
  });

/** The USDC Transfer events of a mined transaction. */
async function transfersIn(hash: Hex) {
  const receipt = await chain().getTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  return parseEventLogs({ abi: DEV_USDC_ABI, eventName: "Transfer", logs: receipt.logs }).filter(
    (l) => getAddress(l.address) === devnet.usdcAddress,
  );
}

describe("GET endpoints", () => {
  it("/supported lists exact on eip155:84532 (x402 v2), on base-sepolia (v1), and the gas payer", async () => {
    const supported = await new HTTPFacilitatorClient({
      url: devnet.facilitatorUrl,
    }).getSupported();
    expect(supported.kinds).toEqual([
      { x402Version: 2, scheme: "exact", network: "eip155:84532" },
      { x402Version: 1, scheme: "exact", network: "base-sepolia" },
    ]);
    expect(supported.signers["eip155:*"]).toEqual([devnet.gasPayer]);
  });

  it("/health answers ok as JSON; unknown paths get JSON 404", async () => {
    const health = await fetch(`${devnet.facilitatorUrl}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.get("content-type")).toMatch(/application\/json/);
    expect(await health.json()).toMatchObject({ status: "ok", networks: ["eip155:84532"] });
    const missing = await fetch(`${devnet.facilitatorUrl}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toHaveProperty("error");
  });
});

describe("verify and settle a real EIP-3009 payment", () => {
  it("verifies, settles on chain, and moves exactly 50000 units from payer to payTo", async () => {
    const payment = await pay(0);
    const payer = devnet.payerAddresses[0]!;
    const facilitator = new HTTPFacilitatorClient({ url: devnet.facilitatorUrl });
    const [payerBefore, payToBefore] = [await balanceOf(payer), await balanceOf(devnet.payTo)];

    const verified = await facilitator.verify(payment, requirements());
    expect(verified).toMatchObject({ isValid: true, payer });
    // Verification alone moves nothing.
    expect(await balanceOf(payer)).toBe(payerBefore);

    const settled = await facilitator.settle(payment, requirements());
    expect(settled).toMatchObject({ success: true, network: "eip155:84532", payer });
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    const transfers = await transfersIn(settled.transaction as Hex);
    expect(transfers).toHaveLength(1);
    expect(transfers[0]!.args).toEqual({ from: payer, to: devnet.payTo, value: 50000n });
    const tx = await chain().getTransaction({ hash: settled.transaction as Hex });
    expect(tx.from).toBe(devnet.gasPayer.toLowerCase());
    expect(await balanceOf(payer)).toBe(payerBefore - 50000n);
    expect(await balanceOf(devnet.payTo)).toBe(payToBefore + 50000n);
  });

  it("settles an authorization only once: the replay fails and moves nothing", async () => {
    const payment = await pay(1);
    const first = await settle(payment);
    expect(first.body).toMatchObject({ success: true });
    const payToAfterFirst = await balanceOf(devnet.payTo);

    const second = await settle(payment);
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
      transaction: "",
    });
    expect((await verify(payment)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_nonce_already_used",
    });
    expect(await balanceOf(devnet.payTo)).toBe(payToAfterFirst);
  });

  it("rejects a tampered signature", async () => {
    const payment = await pay(2);
    const sig = sigOf(payment);
    const tampered: PaymentPayload = {
      ...payment,
      payload: {
        ...payment.payload,
        signature: `${sig.slice(0, 10)}${sig[10] === "0" ? "1" : "0"}${sig.slice(11)}`,
      },
    };
    expect((await verify(tampered)).body).toMatchObject({ isValid: false });
    const before = await balanceOf(devnet.payerAddresses[2]!);
    const settled = await settle(tampered);
    expect(settled.body).toMatchObject({ success: false, transaction: "" });
    expect(await balanceOf(devnet.payerAddresses[2]!)).toBe(before);
    // The untampered original is still good.
    expect((await verify(payment)).body).toMatchObject({ isValid: true });
  });

  it("rejects a value changed after signing (signature no longer matches)", async () => {
    const payment = await pay(2);
    const auth = authOf(payment);
    const raised: PaymentPayload = {
      ...payment,
      accepted: requirements("60000"),
      payload: { ...payment.payload, authorization: { ...auth, value: "60000" } },
    };
    expect((await verify(raised, requirements("60000"))).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_signature",
    });
  });

  it("rejects an authorization for the wrong amount", async () => {
    const payment = await pay(3, requirements("40000"));
    const wrong = { ...payment, accepted: requirements() };
    expect((await verify(wrong)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_authorization_value_mismatch",
    });
    expect((await settle(wrong)).body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_payload_authorization_value_mismatch",
    });
  });

  it("rejects an expired authorization (signed with viem signTypedData)", async () => {
    const account = privateKeyToAccount(devnet.payerPrivateKeys[4]!);
    const now = Math.floor(Date.now() / 1000);
    const authorization = {
      from: account.address,
      to: devnet.payTo,
      value: "50000",
      validAfter: String(now - 600),
      validBefore: String(now - 60),
      nonce: `0x${"11".repeat(32)}` as Hex,
    };
    const signature = await account.signTypedData({
      domain: { name: "USDC", version: "2", chainId: 84532, verifyingContract: devnet.usdcAddress },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: {
        ...authorization,
        value: 50000n,
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
      },
    });
    const expired: PaymentPayload = {
      x402Version: 2,
      accepted: requirements(),
      payload: { authorization, signature },
    };
    expect((await verify(expired)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_payload_authorization_valid_before",
    });
    expect((await settle(expired)).body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_payload_authorization_valid_before",
    });
  });

  it("rejects a payment to someone other than payTo", async () => {
    const payment = await pay(5);
    const elsewhere = { ...requirements(), payTo: devnet.payerAddresses[7]! };
    expect((await verify({ ...payment, accepted: elsewhere }, elsewhere)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_evm_recipient_mismatch",
    });
  });
});

describe("a nonce the payer spent itself", () => {
  it("the settle of the authorization it sent fails as already used, never a success, and moves nothing", async () => {
    const payment = await pay(6);
    const account = privateKeyToAccount(devnet.payerPrivateKeys[6]!);
    await spendOwnNonce(chain(), devnet.rpcUrl, devnet.usdcAddress, account, authOf(payment).nonce);
    const [payerBefore, payToBefore] = [
      await balanceOf(account.address),
      await balanceOf(devnet.payTo),
    ];

    const settled = await settle(payment);
    expect(settled.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
      transaction: "",
    });
    expect(await balanceOf(account.address)).toBe(payerBefore);
    expect(await balanceOf(devnet.payTo)).toBe(payToBefore);
  });
});

describe("concurrent settlements from one gas wallet", () => {
  it("lands 10 simultaneous settlements, each one transfer, with distinct consecutive nonces", async () => {
    const payments = await Promise.all(Array.from({ length: 10 }, (_, i) => pay(i % 8)));
    const payToBefore = await balanceOf(devnet.payTo);

    const results = await Promise.all(payments.map((p) => settle(p)));
    for (const r of results) expect(r.body).toMatchObject({ success: true });
    const hashes = results.map((r) => r.body.transaction as Hex);
    expect(new Set(hashes).size).toBe(10);

    const nonces: number[] = [];
    for (const [i, hash] of hashes.entries()) {
      const transfers = await transfersIn(hash);
      expect(transfers).toHaveLength(1);
      expect(transfers[0]!.args).toEqual({
        from: authOf(payments[i]!).from,
        to: devnet.payTo,
        value: 50000n,
      });
      const tx = await chain().getTransaction({ hash });
      expect(tx.from).toBe(devnet.gasPayer.toLowerCase());
      nonces.push(tx.nonce);
    }
    nonces.sort((a, b) => a - b);
    expect(nonces).toEqual(Array.from({ length: 10 }, (_, i) => nonces[0]! + i));
    expect(await balanceOf(devnet.payTo)).toBe(payToBefore + 10n * 50000n);
  });

  it("settles the same authorization sent twice at once exactly once, both told the outcome", async () => {
    const payment = await pay(6);
    const payToBefore = await balanceOf(devnet.payTo);
    const results = await Promise.all([settle(payment), settle(payment)]);
    expect(results.map((r) => r.body.success)).toEqual([true, true]);
    expect(results[1]).toEqual(results[0]);
    expect(await balanceOf(devnet.payTo)).toBe(payToBefore + 50000n);
  });

  it("a settle again while the first waits for its receipt gets the first's answer, never a refusal", async () => {
    const { node, facilitator, said } = await startFacilitatorOverNode(devnet);
    try {
      const payment = await pay(5);
      const payToBefore = await balanceOf(devnet.payTo);
      const body = { x402Version: 2, paymentPayload: payment, paymentRequirements: requirements() };
      const inPool = node.watch(authOf(payment).nonce).sent;
      const mining = await holdMining(devnet.rpcUrl);
      let first, again;
      try {
        first = post(facilitator.url, "/settle", body);
        // The transfer is in the node's pool; the first settle waits for its receipt.
        await inPool;
        again = post(facilitator.url, "/settle", body);
        await Promise.race([said.next(/under way/), again]);
      } finally {
        await mining.release();
      }
      const answers = await Promise.all([first, again]);
      expect(answers[0]).toMatchObject({ status: 200, body: { success: true } });
      expect(answers[1]).toEqual(answers[0]);
      expect(await transfersIn(answers[0].body.transaction as Hex)).toHaveLength(1);
      expect(await balanceOf(devnet.payTo)).toBe(payToBefore + 50000n);
    } finally {
      await facilitator.close();
      await node.close();
    }
  });
});

describe("JSON-RPC batching (the devnet's facilitator)", () => {
  /** Eight concurrent verifies through a facilitator whose RPC is a recording proxy to anvil. */
  async function verifyThroughProxy(batchRpc: boolean) {
    const proxy = await startForwardingProxy({ upstream: devnet.rpcUrl });
    const facilitator = await startFacilitator({
      rpcUrl: proxy.url,
      privateKey: GAS_PAYER.privateKey,
      networks: [devnet.network],
      host: "127.0.0.1",
      port: 0,
      batchRpc,
    });
    try {
      const payments = await Promise.all(Array.from({ length: 8 }, (_, i) => pay(i)));
      proxy.requests.length = 0; // start-up's own calls (eth_chainId) are not the verifies'
      const answers = await Promise.all(
        payments.map((p) =>
          post(facilitator.url, "/verify", {
            x402Version: 2,
            paymentPayload: p,
            paymentRequirements: requirements(),
          }),
        ),
      );
      const bodies = proxy.requests.map((r) => JSON.parse(r.body) as unknown);
      const calls = bodies.flatMap((b) => (Array.isArray(b) ? b : [b])) as { method: string }[];
      return { answers, requests: bodies.length, batches: bodies.filter(Array.isArray), calls };
    } finally {
      await facilitator.close();
      await proxy.close();
    }
  }

  it("sends the calls of concurrent verifies to the RPC in batches, and verifies each payment", async () => {
    const { answers, requests, batches, calls } = await verifyThroughProxy(true);
    for (const a of answers) expect(a.body).toMatchObject({ isValid: true });
    expect(calls.filter((c) => c.method === "eth_call").length).toBeGreaterThanOrEqual(8);
    expect(batches.length).toBeGreaterThan(0);
    expect(requests).toBeLessThan(calls.length);
  });

  it("sends one call per request when batching is off (any RPC provider takes that)", async () => {
    const { answers, requests, batches, calls } = await verifyThroughProxy(false);
    for (const a of answers) expect(a.body).toMatchObject({ isValid: true });
    expect(batches).toHaveLength(0);
    expect(requests).toBe(calls.length);
  });
});

describe("bad input", () => {
  it("answers malformed bodies with JSON 400 and never crashes", async () => {
    const base = devnet.facilitatorUrl;
    const good = await pay(7);
    const cases: [string, unknown][] = [
      ["not json", "{nope"],
      ["array", [1, 2]],
      ["empty object", {}],
      ["null payload", { paymentPayload: null, paymentRequirements: requirements() }],
      ["missing requirements", { paymentPayload: good }],
      [
        "authorization not an object",
        {
          paymentPayload: { ...good, payload: { authorization: "x", signature: "0x00" } },
          paymentRequirements: requirements(),
        },
      ],
      [
        "bad address",
        {
          paymentPayload: {
            ...good,
            payload: { ...good.payload, authorization: { ...authOf(good), from: "0x123" } },
          },
          paymentRequirements: requirements(),
        },
      ],
      [
        "numeric validBefore",
        {
          paymentPayload: {
            ...good,
            payload: { ...good.payload, authorization: { ...authOf(good), validBefore: 1 } },
          },
          paymentRequirements: requirements(),
        },
      ],
    ];
    for (const path of ["/verify", "/settle"]) {
      for (const [name, body] of cases) {
        const res = await post(base, path, body);
        expect(res.status, `${path} ${name}`).toBe(400);
        if (path === "/verify") expect(res.body, name).toMatchObject({ isValid: false });
        else expect(res.body, name).toMatchObject({ success: false, transaction: "" });
      }
    }
    // Still serving afterwards.
    expect((await verify(good)).body).toMatchObject({ isValid: true });
  });

  it("refuses other networks, schemes and protocol versions with a reason", async () => {
    const good = await pay(7);
    const onBase = { ...requirements(), network: "eip155:8453" as const };
    expect((await verify({ ...good, accepted: onBase }, onBase)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_network",
    });
    const upto = { ...requirements(), scheme: "upto" };
    expect((await verify({ ...good, accepted: upto }, upto)).body).toMatchObject({
      invalidReason: "unsupported_scheme",
    });
    // A v2 payload labelled v1 is read as v1, and is not a v1 payload.
    const v1 = await post(devnet.facilitatorUrl, "/verify", {
      x402Version: 1,
      paymentPayload: { ...good, x402Version: 1 },
      paymentRequirements: requirements(),
    });
    expect(v1).toMatchObject({ status: 400, body: { invalidReason: "invalid_payload" } });
    const v3 = await post(devnet.facilitatorUrl, "/verify", {
      x402Version: 3,
      paymentPayload: { ...good, x402Version: 3 },
      paymentRequirements: requirements(),
    });
    expect(v3).toMatchObject({ status: 400, body: { invalidReason: "invalid_x402_version" } });
  });

  it("refuses a body over the size limit with 413", async () => {
    const res = await post(devnet.facilitatorUrl, "/settle", {
      pad: "x".repeat(MAX_BODY_BYTES + 1),
    });
    expect(res.status).toBe(413);
    expect(res.body).toHaveProperty("error");
  });
});

describe("bearer token", () => {
  let guarded: RunningFacilitator;
  beforeAll(async () => {
    guarded = await startFacilitator({
      rpcUrl: devnet.rpcUrl,
      privateKey: "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d", // account 1
      networks: [devnet.network],
      host: "127.0.0.1",
      port: 0,
      authToken: "s3cret-token-0123456789",
      pollingIntervalMs: 50,
    });
  });
  afterAll(async () => {
    await guarded?.close();
  });

  it("requires it on /verify and /settle, not on /supported", async () => {
    const payment = await pay(7);
    const body = { x402Version: 2, paymentPayload: payment, paymentRequirements: requirements() };
    expect((await post(guarded.url, "/verify", body)).status).toBe(401);
    expect(
      (await post(guarded.url, "/settle", body, { authorization: "Bearer wrong" })).status,
    ).toBe(401);
    expect((await fetch(`${guarded.url}/supported`)).status).toBe(200);
    const ok = await post(guarded.url, "/verify", body, {
      authorization: "Bearer s3cret-token-0123456789",
    });
    expect(ok).toMatchObject({ status: 200, body: { isValid: true } });
  });

  it("refuses to start against an RPC of another chain", async () => {
    await expect(
      startFacilitator({
        rpcUrl: devnet.rpcUrl,
        privateKey: devnet.payerPrivateKeys[0]!,
        networks: ["eip155:8453"],
        host: "127.0.0.1",
        port: 0,
      }),
    ).rejects.toThrow(/is chain 84532, but the networks are eip155:8453/);
  });
});

describe("x402 v1", () => {
  /** The v1 form of requirements(): named network, `maxAmountRequired`, resource inline. */
  const requirementsV1 = (network = "base-sepolia") => ({
    scheme: "exact",
    network,
    maxAmountRequired: "50000",
    resource: "http://127.0.0.1/v1/snapshot",
    description: "test",
    mimeType: "application/json",
    payTo: devnet.payTo,
    maxTimeoutSeconds: 300,
    asset: devnet.usdcAddress,
    extra: { name: "USDC", version: "2" },
  });

  it("verifies and settles a v1 payment exactly once, on its v1 path", async () => {
    const key = devnet.payerPrivateKeys[4]!;
    const from = privateKeyToAccount(key).address;
    const before = await balanceOf(from);
    const required = requirementsV1();
    const payload = await new ExactEvmSchemeV1(privateKeyToAccount(key)).createPaymentPayload(
      1,
      required as never,
    );
    const body = { x402Version: 1, paymentPayload: payload, paymentRequirements: required };
    expect(await post(devnet.facilitatorUrl, "/verify", body)).toMatchObject({
      status: 200,
      body: { isValid: true, payer: from },
    });
    const settled = await post(devnet.facilitatorUrl, "/settle", body);
    expect(settled).toMatchObject({
      status: 200,
      body: { success: true, network: "base-sepolia", payer: from },
    });
    const transfers = await transfersIn(settled.body.transaction as Hex);
    expect(transfers).toHaveLength(1);
    expect(transfers[0]?.args).toMatchObject({ from, to: devnet.payTo, value: 50000n });
    expect(await balanceOf(from)).toBe(before - 50000n);

    // The same authorization again: refused, nothing more moves.
    const again = await post(devnet.facilitatorUrl, "/settle", body);
    expect(again.body).toMatchObject({ success: false });
    expect(await balanceOf(from)).toBe(before - 50000n);
  });

  it("refuses a v1 network other than its chain's", async () => {
    const required = requirementsV1("base");
    const payload = await new ExactEvmSchemeV1(
      privateKeyToAccount(devnet.payerPrivateKeys[4]!),
    ).createPaymentPayload(1, required as never);
    const res = await post(devnet.facilitatorUrl, "/verify", {
      x402Version: 1,
      paymentPayload: payload,
      paymentRequirements: required,
    });
    expect(res).toMatchObject({ status: 400, body: { invalidReason: "invalid_network" } });
  });
});
