/**
 * The paid flow end to end over the real devnet: anvil + DevUSDC + the project's facilitator +
 * the service (createApp + the payment gate + the real snapshot engine), paid by the official
 * @x402/fetch client, against a local HTTP target. Ports are all ephemeral.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from "@x402/core/types";
import { authorizationTypes } from "@x402/evm";
import { decodeEventLog, type Address, type Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI, DEVNET_ACCOUNTS } from "../../src/devnet/constants.js";
import { startFacilitator, type RunningFacilitator } from "../../src/facilitator/app.js";
import { payCommand } from "../../src/cli/pay/command.js";
import type { SnapshotEngine } from "../../src/snapshot/index.js";
import {
  PRICE_UNITS,
  challengeIn,
  devnetGate,
  localEngine,
  loopbackScope,
  paidSnapshot,
  postSnapshot as post,
  startGatedService,
  startPaidDevnet,
  v2Proof,
  type GatedService,
  type PaidDevnet,
} from "../fixtures/paid-devnet.js";
import { startPrivateRedirectSite, type PrivateRedirectSite } from "../fixtures/targets.js";

let devnet: PaidDevnet;
let target: PrivateRedirectSite;
let engine: SnapshotEngine;
let service: GatedService;
const opened: { close(): Promise<void> }[] = [];

const scope = () => loopbackScope([80, 443, target.port, target.closedPort]);

/** As `secsnap serve` wires it: repeated unpaid requests take the challenge fast path. */
function startService(
  facilitatorUrl: string,
  facilitatorHeaders?: Record<string, string>,
): Promise<GatedService> {
  return startGatedService({
    engine,
    scope: scope(),
    gate: {
      ...devnetGate(devnet, facilitatorUrl),
      devnet: true,
      ...(facilitatorHeaders && { facilitatorHeaders }),
    },
    fastPath: true,
  });
}

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startPrivateRedirectSite();
  // The https probe of an http target goes to a closed port: refused at once.
  engine = localEngine(scope(), target.closedPort);
  service = await startService(devnet.facilitatorUrl);
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
  await service?.close();
  await engine?.close();
  await target?.close();
  await devnet?.close();
});

async function challenge(base = service.url): Promise<PaymentRequired> {
  return challengeIn(await post(base, target.url));
}

/** A proof made by the official client, as the PAYMENT-SIGNATURE header. */
async function proofHeaders(account: PrivateKeyAccount, required?: PaymentRequired) {
  return v2Proof(account, required ?? (await challenge()));
}

/** An EIP-3009 proof signed here, so each field can be made wrong on purpose. */
async function handSignedHeaders(
  account: PrivateKeyAccount,
  accepted: PaymentRequirements,
  change: { value?: bigint; to?: Address; validBefore?: bigint; chainId?: number } = {},
): Promise<Record<string, string>> {
  const now = BigInt(Math.floor(Date.now() / 1000));
  const authorization = {
    from: account.address,
    to: change.to ?? (accepted.payTo as Address),
    value: change.value ?? BigInt(accepted.amount),
    validAfter: now - 600n,
    validBefore: change.validBefore ?? now + 300n,
    nonce: `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}` as Hex,
  };
  const extra = accepted.extra as { name: string; version: string };
  const signature = await account.signTypedData({
    domain: {
      name: extra.name,
      version: extra.version,
      chainId: change.chainId ?? devnet.chainId,
      verifyingContract: accepted.asset as Address,
    },
    types: authorizationTypes,
    primaryType: "TransferWithAuthorization",
    message: authorization,
  });
  const payload: PaymentPayload = {
    x402Version: 2,
    accepted,
    payload: {
      signature,
      authorization: Object.fromEntries(
        Object.entries(authorization).map(([k, v]) => [
          k,
          typeof v === "bigint" ? v.toString() : v,
        ]),
      ),
    },
  };
  return new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(payload);
}

describe("challenge", () => {
  it("decodes to x402 v2 with exactly the docs/contract.md §7.1 fields and the Bazaar extension", async () => {
    const required = await challenge();
    expect(required.x402Version).toBe(2);
    expect(required.resource?.url).toBe(`${service.url}/v1/snapshot`);
    expect(required.accepts).toEqual([
      {
        scheme: "exact",
        network: "eip155:84532",
        amount: "50000",
        asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        payTo: devnet.payTo,
        maxTimeoutSeconds: 300,
        extra: expect.objectContaining({ name: "USDC", version: "2" }),
      },
    ]);
    const bazaar = required.extensions?.bazaar as { info: { input: Record<string, unknown> } };
    expect(bazaar.info.input).toMatchObject({ type: "http", method: "POST", bodyType: "json" });
  });

  it("invalid input without payment is 400 without a challenge", async () => {
    for (const bad of ["gopher://127.0.0.1/", 42, "http://user:pw@example.com/"]) {
      const response = await post(service.url, bad);
      expect(response.status).toBe(400);
      expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
      expect(((await response.json()) as { error_type: string }).error_type).toBe("invalid_url");
    }
  });
});

describe("paid snapshot", () => {
  it("moves exactly 50000 units payer → payTo and answers with PAYMENT-RESPONSE on chain", async () => {
    const account = devnet.payer(0);
    const [payerBefore, payToBefore] = await Promise.all([
      devnet.balanceOf(account.address),
      devnet.balanceOf(devnet.payTo),
    ]);
    const response = await paidSnapshot(service.url, target.url, account);
    expect(response.status).toBe(200);
    const report = await response.json();
    expect(report).toMatchObject({
      requested_url: target.url,
      reachable: true,
      final_status_code: 200,
    });

    // A browser x402 client can read the settlement: CORS survives the gate's header changes.
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("access-control-expose-headers")?.split(",")).toContain(
      "PAYMENT-RESPONSE",
    );
    const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
    expect(settlement).toMatchObject({ success: true, network: "eip155:84532" });
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = await devnet.chain.getTransactionReceipt({
      hash: settlement.transaction as Hex,
    });
    expect(receipt.status).toBe("success");
    const transfers = receipt.logs
      .filter((log) => log.address.toLowerCase() === devnet.usdcAddress.toLowerCase())
      .map((log) => decodeEventLog({ abi: DEV_USDC_ABI, ...log }))
      .filter((event) => event.eventName === "Transfer");
    expect(transfers).toHaveLength(1);
    expect(transfers[0]?.args).toMatchObject({
      from: account.address,
      to: devnet.payTo,
      value: PRICE_UNITS,
    });

    expect(await devnet.balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(payToBefore + PRICE_UNITS);
  });

  it("a paid request for a blocked or unreachable target is 400, moves nothing, and the proof still works", async () => {
    const account = devnet.payer(1);
    const before = await devnet.balanceOf(account.address);
    const { headers } = await proofHeaders(account);

    const blocked = await post(service.url, `${target.url}to-private`, headers);
    expect(blocked.status).toBe(400);
    expect(((await blocked.json()) as { error_type: string }).error_type).toBe("ssrf");
    expect(blocked.headers.get("PAYMENT-RESPONSE")).toBeNull();

    const unreachable = await post(service.url, target.closedPortUrl, headers);
    expect(unreachable.status).toBe(400);
    expect(((await unreachable.json()) as { error_type: string }).error_type).toBe("unreachable");
    expect(await devnet.balanceOf(account.address)).toBe(before);

    // Released, not burnt: the same proof buys a snapshot afterwards.
    expect((await post(service.url, target.url, headers)).status).toBe(200);
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });
});

describe("replay", () => {
  it("the same proof twice: one 200, one transfer", async () => {
    const account = devnet.payer(2);
    const before = await devnet.balanceOf(account.address);
    const { headers } = await proofHeaders(account);
    expect((await post(service.url, target.url, headers)).status).toBe(200);
    const again = await post(service.url, target.url, headers);
    expect(again.status).toBe(402);
    expect(again.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });

  it("the same proof ten times at once: exactly one 200 and one transfer", async () => {
    const account = devnet.payer(3);
    const before = await devnet.balanceOf(account.address);
    const { headers } = await proofHeaders(account);
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => post(service.url, target.url, headers)),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    // The others found it in progress (409, retry) or already served (402).
    expect(statuses.filter((s) => s === 409 || s === 402)).toHaveLength(9);
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });
});

describe("bad proofs are 402 and move nothing", () => {
  let accepted: PaymentRequirements;
  let account: PrivateKeyAccount;
  let before: bigint;
  beforeAll(async () => {
    accepted = (await challenge()).accepts[0]!;
    account = devnet.payer(4);
    before = await devnet.balanceOf(account.address);
  });
  afterAll(async () => {
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });

  /** 402, with the facilitator's (or the SDK's) reason in the fresh challenge. */
  async function expect402(headers: Record<string, string>, reason: RegExp) {
    const response = await post(service.url, target.url, headers);
    expect(response.status).toBe(402);
    const header = response.headers.get("PAYMENT-REQUIRED");
    expect(header).toBeTruthy();
    expect(decodePaymentRequiredHeader(header!).error).toMatch(reason);
  }

  it("a hand-signed valid proof is accepted (the control for the cases below)", async () => {
    const control = devnet.payer(5);
    const controlBefore = await devnet.balanceOf(control.address);
    expect(
      (await post(service.url, target.url, await handSignedHeaders(control, accepted))).status,
    ).toBe(200);
    expect(await devnet.balanceOf(control.address)).toBe(controlBefore - PRICE_UNITS);
  });

  it("tampered signature", async () => {
    const { payload } = await proofHeaders(account);
    const inner = payload.payload as { signature: string };
    const last = inner.signature.slice(-4, -2);
    inner.signature =
      inner.signature.slice(0, -4) + (last === "00" ? "01" : "00") + inner.signature.slice(-2);
    await expect402(
      new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(payload),
      /signature/,
    );
  });

  it("lower amount", async () => {
    await expect402(
      await handSignedHeaders(account, accepted, { value: PRICE_UNITS - 1n }),
      /value/,
    );
  });

  it("wrong payTo", async () => {
    await expect402(
      await handSignedHeaders(account, accepted, { to: DEVNET_ACCOUNTS[9]!.address }),
      /recipient/,
    );
  });

  it("expired authorization", async () => {
    const past = BigInt(Math.floor(Date.now() / 1000) - 60);
    await expect402(
      await handSignedHeaders(account, accepted, { validBefore: past }),
      /valid_before/,
    );
  });

  it("wrong network", async () => {
    await expect402(
      await handSignedHeaders(account, { ...accepted, network: "eip155:8453" }, { chainId: 8453 }),
      /No matching payment requirements/,
    );
    // Signed for Base mainnet while claiming the devnet: the signature does not match.
    await expect402(await handSignedHeaders(account, accepted, { chainId: 8453 }), /signature/);
  });
});

describe("facilitator outage", () => {
  it("503 with Retry-After while it is stopped, free endpoints still 200, payments work again after", async () => {
    // A second facilitator on the same chain (its own gas wallet) that this test stops and restarts.
    const options = {
      rpcUrl: devnet.rpcUrl,
      privateKey: DEVNET_ACCOUNTS[9]!.privateKey,
      networks: [devnet.network],
      host: "127.0.0.1",
      pollingIntervalMs: 50,
    };
    let facilitator: RunningFacilitator = await startFacilitator({ ...options, port: 0 });
    const port = facilitator.port;
    const own = await startService(facilitator.url);
    opened.push(own, { close: () => facilitator.close() });

    const required = await challenge(own.url);
    await facilitator.close();

    const account = devnet.payer(6);
    const before = await devnet.balanceOf(account.address);
    const down = await post(own.url, target.url, (await proofHeaders(account, required)).headers);
    expect(down.status).toBe(503);
    expect(down.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(down.headers.get("access-control-allow-origin")).toBe("*");
    expect(await down.json()).toEqual({
      error: expect.any(String),
      code: "facilitator_unavailable",
    });
    expect((await fetch(`${own.url}/health`)).status).toBe(200);
    expect((await fetch(`${own.url}/demo/snapshot`)).status).toBe(200);
    expect(await devnet.balanceOf(account.address)).toBe(before);

    facilitator = await startFacilitator({ ...options, port });
    const back = await paidSnapshot(own.url, target.url, account);
    expect(back.status).toBe(200);
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });
});

describe("facilitator that requires auth", () => {
  it("the configured header is sent on verify and settle; without it the answer is 503", async () => {
    const facilitator = await startFacilitator({
      rpcUrl: devnet.rpcUrl,
      privateKey: DEVNET_ACCOUNTS[8]!.privateKey,
      networks: [devnet.network],
      host: "127.0.0.1",
      port: 0,
      pollingIntervalMs: 50,
      authToken: "s3cret-token",
    });
    const withAuth = await startService(facilitator.url, { Authorization: "Bearer s3cret-token" });
    const withoutAuth = await startService(facilitator.url);
    opened.push(withAuth, withoutAuth, { close: () => facilitator.close() });
    const account = devnet.payer(7);
    const before = await devnet.balanceOf(account.address);

    const refused = await post(
      withoutAuth.url,
      target.url,
      (await proofHeaders(account, await challenge(withoutAuth.url))).headers,
    );
    expect(refused.status).toBe(503);
    expect(await devnet.balanceOf(account.address)).toBe(before);

    const paid = await post(
      withAuth.url,
      target.url,
      (await proofHeaders(account, await challenge(withAuth.url))).headers,
    );
    expect(paid.status).toBe(200);
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });
});

describe("secsnap pay", () => {
  async function pay(args: string[], env: NodeJS.ProcessEnv = {}) {
    let out = "";
    let err = "";
    const sink = (append: (s: string) => void) =>
      ({
        write: (chunk: string) => (append(String(chunk)), true),
      }) as unknown as NodeJS.WriteStream;
    const code = await payCommand.run({
      args,
      env,
      stdout: sink((s) => (out += s)),
      stderr: sink((s) => (err += s)),
    });
    return { code, out, err };
  }

  it("pays from devnet account 2 by default and prints report, amount and an on-chain transaction", async () => {
    const account = devnet.payer(0); // anvil account 2
    const before = await devnet.balanceOf(account.address);
    const { code, out, err } = await pay([target.url, "--api", service.url]);
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ requested_url: target.url, reachable: true });
    expect(err).toContain(account.address);
    expect(err).toContain("secsnap pay: charged 0.05 USDC (50000 units");
    const hash = /settlement transaction: (0x[0-9a-f]{64})/.exec(err)?.[1];
    expect(hash).toBeDefined();
    expect((await devnet.chain.getTransactionReceipt({ hash: hash as Hex })).status).toBe(
      "success",
    );
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });

  it("pays with SECSNAP_PRIVATE_KEY when set", async () => {
    const account = devnet.payer(6);
    const before = await devnet.balanceOf(account.address);
    const { code } = await pay([target.url, "--api", service.url], {
      SECSNAP_PRIVATE_KEY: devnet.payerPrivateKeys[6],
    });
    expect(code).toBe(0);
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });

  it("a refused snapshot exits 2 with the API's answer and charges nothing", async () => {
    const account = devnet.payer(0);
    const before = await devnet.balanceOf(account.address);
    const { code, out, err } = await pay([`${target.url}to-private`, "--api", service.url]);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err).toMatch(/answered 400.*ssrf/);
    expect(await devnet.balanceOf(account.address)).toBe(before);
  });
});
