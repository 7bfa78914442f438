/**
 * POST /mcp when money meets a fault (docs/contract.md §6.1, §7.10): the facilitator behind a
 * proxy that loses a settlement's answer, reports it pending, or holds it while the payer's funds
 * leave; and a payer over its budget of unpaid snapshots. The official MCP SDK client pays with
 * the official x402 client; every case reads the chain (`authorizationState`, balances): an
 * outcome we cannot prove keeps the report for the same proof, a refusal moves nothing.
 */
import type { PaymentPayload } from "@x402/core/types";
import {
  createPublicClient,
  createWalletClient,
  http,
  type Address,
  type Hex,
  type PublicClient,
} from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI } from "../../../src/devnet/constants.js";
import { startDevnet, type Devnet } from "../../../src/devnet/index.js";
import type { RunningServer } from "../../../src/http/index.js";
import { createSnapshotEngine, type SnapshotEngine } from "../../../src/snapshot/index.js";
import { startFaultProxy, type FaultProxy } from "../../fixtures/fault-proxy.js";
import {
  callSnapshot,
  challengeOf,
  connectedMcpClient,
  signedProof,
  textOf,
} from "../../fixtures/mcp-client.js";
import {
  startLocalTarget,
  startPaidService,
  type LocalTarget,
} from "../../fixtures/paid-service.js";
import { closedPort } from "../../fixtures/targets.js";
import { authorizationUsed as authorizationUsedOnChain, usdcBalance } from "../../fixtures/usdc.js";

const PRICE_UNITS = 50_000n;
/** Unpaid snapshots a payer may have per minute here (SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE). */
const PAYER_BUDGET = 2;

let devnet: Devnet;
let chain: PublicClient;
let proxy: FaultProxy;
let target: LocalTarget;
let engine: SnapshotEngine;
let service: RunningServer;
/** An allowed port nothing listens on: its snapshot is `unreachable`, never charged. */
let deadUrl: string;

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  proxy = await startFaultProxy(devnet.facilitatorUrl);
  target = await startLocalTarget();
  const dead = await closedPort("127.0.0.1");
  deadUrl = `http://127.0.0.1:${dead}/`;
  engine = createSnapshotEngine({
    timeoutMs: 5_000,
    maxRedirects: 10,
    allowedPorts: new Set([target.port, dead]),
    allowCidrs: ["127.0.0.0/8"],
    dnsServers: [],
    httpsProbePort: dead,
  });
  service = await startPaidService({
    engine,
    ports: [target.port, dead],
    payTo: devnet.payTo,
    networks: [devnet.network],
    facilitatorUrl: proxy.url,
    devnet: true,
    refusedPerPayerPerMinute: PAYER_BUDGET,
    rpcUrl: devnet.rpcUrl,
  });
}, 120_000);

afterEach(() => proxy.reset());

afterAll(async () => {
  await service?.close(1_000);
  await engine?.close();
  await target?.close();
  await proxy?.close();
  await devnet?.close();
});

function payer(i: number): PrivateKeyAccount {
  const key = devnet.payerPrivateKeys[i];
  if (!key) throw new Error(`no payer ${i}`);
  return privateKeyToAccount(key);
}

function balanceOf(address: Address): Promise<bigint> {
  return usdcBalance(chain, devnet.usdcAddress, address);
}

/** The signed authorization's nonce (the fault proxy strikes by it) and EIP-3009 state. */
function nonceOf(payload: PaymentPayload): Hex {
  return (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
}

function authorizationUsed(from: Address, nonce: Hex): Promise<boolean> {
  return authorizationUsedOnChain(chain, devnet.usdcAddress, from, nonce);
}

/** A fresh client's signed proof for a snapshot of `url`. */
async function proofFor(account: PrivateKeyAccount, url: string) {
  const { client } = await connectedMcpClient(service.url);
  const payload = await signedProof(challengeOf(await callSnapshot(client, url)), account);
  return { client, payload, nonce: nonceOf(payload) };
}

describe("POST /mcp under faults (the chain decides)", () => {
  for (const fault of ["settle-then-drop", "settlement-pending"] as const) {
    it(`${fault}: an error result saying to retry, one transfer; the same proof then gets the report, no second`, async () => {
      const account = payer(0 + (fault === "settle-then-drop" ? 0 : 1));
      const [payerBefore, payeeBefore] = [
        await balanceOf(account.address),
        await balanceOf(devnet.payTo),
      ];
      const { client, payload, nonce } = await proofFor(account, target.url);
      const armed = proxy.arm(nonce, fault);
      const first = await callSnapshot(client, target.url, { "x402/payment": payload });
      await armed.finished;
      // Unknown to the service, never a refusal: no PaymentRequired, the retry named.
      expect(first.isError).toBe(true);
      expect(first.structuredContent ?? {}).not.toHaveProperty("accepts");
      expect(textOf(first)).toMatch(/retry with the same payment/);
      expect(await authorizationUsed(account.address, nonce)).toBe(true);
      expect(await balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);

      const retried = await callSnapshot(client, target.url, { "x402/payment": payload });
      expect(retried.isError, textOf(retried)).toBeFalsy();
      expect(retried.structuredContent).toMatchObject({ requested_url: target.url });
      expect(retried._meta?.["x402/payment-response"]).toMatchObject({
        success: true,
        transaction: await armed.settled,
      });
      expect(await balanceOf(account.address)).toBe(payerBefore - PRICE_UNITS);
      expect(await balanceOf(devnet.payTo)).toBe(payeeBefore + PRICE_UNITS);
      expect(proxy.calls(nonce).forwarded).toBe(1);
      await client.close();
    });
  }

  it("a settlement that fails (the funds left while it was held): the PaymentRequired and the failure, no report, nothing moved", async () => {
    const account = payer(2);
    const payeeBefore = await balanceOf(devnet.payTo);
    const { client, payload, nonce } = await proofFor(account, target.url);
    const armed = proxy.arm(nonce, "hold-settle");
    const answer = callSnapshot(client, target.url, { "x402/payment": payload });
    await armed.arrived;
    // Verified, the report made; now the payer spends everything elsewhere.
    const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) });
    const hash = await wallet.writeContract({
      chain: null,
      address: devnet.usdcAddress,
      abi: DEV_USDC_ABI,
      functionName: "transfer",
      args: [payer(3).address, await balanceOf(account.address)],
    });
    expect((await chain.waitForTransactionReceipt({ hash })).status).toBe("success");
    armed.release();
    const result = await answer;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ x402Version: 2, accepts: expect.any(Array) });
    expect(result.structuredContent).not.toHaveProperty("requested_url");
    expect(result.structuredContent?.["x402/payment-response"]).toMatchObject({ success: false });
    expect(result._meta?.["x402/payment-response"]).toBeUndefined();
    expect(await authorizationUsed(account.address, nonce)).toBe(false);
    expect(await balanceOf(devnet.payTo)).toBe(payeeBefore);
    await client.close();
  });

  it("2026-07-28: a client that left while its payment settled gets the report for the same proof at once, one transfer", async () => {
    const account = payer(6);
    const before = await balanceOf(account.address);
    const { client, payload, nonce } = await proofFor(account, target.url);
    const armed = proxy.arm(nonce, "settle-then-hold");
    const left = new AbortController();
    const first = modernCall(payload, left.signal).catch((error: unknown) => error);
    await armed.settled; // the transfer is on chain; its answer held
    left.abort();
    expect(await first).toBeInstanceOf(Error);
    armed.release();
    await armed.finished;
    expect(await balanceOf(account.address)).toBe(before - PRICE_UNITS);
    // The call's answer could not be sent: the ledger is told so as the tool ends, and keeps the
    // report for the same proof (without that word it waits for its lease to end, ≥ 60 s).
    const answerOf = async () => (await (await modernCall(payload)).json()) as McpAnswer;
    let retried = await answerOf();
    for (let i = 0; i < 20 && isInProgress(retried); i++) retried = await answerOf();
    expect(retried.result).toMatchObject({
      resultType: "complete",
      structuredContent: { requested_url: target.url },
      _meta: { "x402/payment-response": { success: true, transaction: await armed.settled } },
    });
    expect(await balanceOf(account.address)).toBe(before - PRICE_UNITS);
    expect(proxy.calls(nonce).forwarded).toBe(1);
    await client.close();
  });

  it(`a payer over its budget of ${PAYER_BUDGET} unpaid snapshots is told to wait before any work, and charged nothing`, async () => {
    const account = payer(4);
    const before = await balanceOf(account.address);
    const { client } = await connectedMcpClient(service.url);
    const required = challengeOf(await callSnapshot(client, deadUrl));
    for (let i = 0; i < PAYER_BUDGET; i++) {
      const unreachable = await callSnapshot(client, deadUrl, {
        "x402/payment": await signedProof(required, account),
      });
      expect(unreachable.isError).toBe(true);
      expect(unreachable.structuredContent).toMatchObject({ error_type: "unreachable" });
    }
    const payload = await signedProof(required, account);
    const over = await callSnapshot(client, target.url, { "x402/payment": payload });
    expect(over.isError).toBe(true);
    expect(over.structuredContent ?? {}).not.toHaveProperty("requested_url");
    expect(textOf(over)).toMatch(/retry/i);
    expect(proxy.calls(nonceOf(payload)).settles).toBe(0);
    expect(await balanceOf(account.address)).toBe(before);
    // Another payer is not held to this one's budget.
    const other = payer(5);
    const { payload: paid } = await proofFor(other, target.url);
    const served = await callSnapshot(client, target.url, { "x402/payment": paid });
    expect(served.isError, textOf(served)).toBeFalsy();
    await client.close();
  });
});

/** A paid `snapshot` call in MCP's 2026-07-28 revision, as a raw request (its envelope, headers). */
function modernCall(payload: PaymentPayload, signal?: AbortSignal): Promise<Response> {
  const _meta = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "x402/payment": payload,
  };
  return fetch(`${service.url}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "snapshot",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "snapshot", arguments: { url: target.url }, _meta },
    }),
    ...(signal && { signal }),
  });
}

interface McpAnswer {
  result?: { content?: { text?: string }[] };
}

/** An answer saying a request with this payment is still in progress. */
function isInProgress(answer: McpAnswer): boolean {
  return answer.result?.content?.[0]?.text?.includes("in progress") ?? false;
}
