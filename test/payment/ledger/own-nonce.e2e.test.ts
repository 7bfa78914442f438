/**
 * Paid means paid to us (docs/contract.md §7.3): the payer signs a proof, sends it, and while
 * its snapshot runs spends the proof's EIP-3009 nonce itself with a second authorization (to
 * itself, value 0) submitted straight to the token. The nonce is then used on chain, but nothing
 * was paid to payTo: the call is a 402, the record freed, never the report — over v2, v1 and
 * MCP, in devnet mode (the service wired as `secsnap serve` wires it, its anvil the chain) and in
 * production mode (`secsnap serve` with X402_PAY_TO and an external facilitator), and when the
 * settle's answer was lost first (the retry and the reconciler read the chain). Every case reads
 * the chain: the payer's and payTo's USDC balances, and the nonce used.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { PaymentRequiredV1Schema, PaymentRequirementsV1Schema } from "@x402/core/schemas";
import type { PaymentPayload } from "@x402/core/types";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import type { Address, Hex } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningServer } from "../../../src/http/index.js";
import { authorizationKey, authorizationOf } from "../../../src/payment/ledger/authorization.js";
import { createSnapshotEngine, type SnapshotEngine } from "../../../src/snapshot/index.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { startHeldSite, type HeldSite } from "../../fixtures/held-site.js";
import { startTarget } from "../../fixtures/held-target.js";
import {
  callSnapshot,
  challengeOf,
  connectedMcpClient,
  signedProof,
} from "../../fixtures/mcp-client.js";
import {
  postSnapshot,
  startPaidDevnet,
  v2ProofFor,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { startPaidService } from "../../fixtures/paid-service.js";
import { fleetEnv, startInstance, type ServiceInstance } from "../../fixtures/service-instance.js";
import { PUBLIC_CIDRS, closedPort } from "../../fixtures/targets.js";
import { authorizationUsed, spendOwnNonce } from "../../fixtures/usdc.js";

/** The refusal's reason: the nonce was used by a transaction that paid nothing to payTo. */
const USED_ELSEWHERE = "authorization_used_elsewhere";

let devnet: PaidDevnet;
let proxy: FacilitatorProxy;
let target: Awaited<ReturnType<typeof startTarget>>;
let engine: SnapshotEngine;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  devnet = await startPaidDevnet();
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  target = await startTarget();
  engine = createSnapshotEngine({
    timeoutMs: 30_000,
    maxRedirects: 10,
    allowedPorts: new Set([target.port]),
    allowCidrs: ["127.0.0.0/8"],
    dnsServers: [],
    httpsProbePort: await closedPort("127.0.0.1"),
  });
}, 120_000);

afterAll(async () => {
  target?.release();
  for (const part of opened.reverse()) await part.close();
  await engine?.close();
  await target?.close();
  await proxy?.close();
  await devnet?.close();
});

interface DevnetService {
  url: string;
  store: MemoryPaymentRecordStore;
}

/** The service in devnet mode behind the facilitator proxy, its anvil the chain it reads. */
async function startService(reconcileIntervalMs = 0): Promise<DevnetService> {
  const store = new MemoryPaymentRecordStore();
  const service: RunningServer = await startPaidService({
    engine,
    ports: [target.port],
    payTo: devnet.payTo,
    networks: [devnet.network],
    facilitatorUrl: proxy.url,
    devnet: true,
    rpcUrl: devnet.rpcUrl,
    store,
    reconcileIntervalMs,
  });
  opened.push({ close: () => service.close(1_000) });
  return { url: service.url, store };
}

/** The payer's and payTo's USDC now. */
async function balances(payer: Address): Promise<[bigint, bigint]> {
  return [await devnet.balanceOf(payer), await devnet.balanceOf(devnet.payTo)];
}

function nonceOf(payload: PaymentPayload): Hex {
  return (payload.payload as { authorization: { nonce: Hex } }).authorization.nonce;
}

function payloadIn(headers: Record<string, string>): PaymentPayload {
  return decodePaymentSignatureHeader(headers["PAYMENT-SIGNATURE"] ?? headers["X-PAYMENT"]!);
}

/** The record key of a proof, as the ledger computes it. */
function recordKey(payload: PaymentPayload): string {
  return authorizationKey(
    authorizationOf(payload, { network: devnet.network, asset: devnet.usdcAddress })!,
  );
}

/** Freed: a free record, or none left (a free record with no releases is forgotten). */
async function expectFreed(store: MemoryPaymentRecordStore, payload: PaymentPayload) {
  const record = await store.get(recordKey(payload));
  expect(record?.state ?? "free").toBe("free");
}

/** The payer spends the proof's nonce on an authorization of its own (to itself, value 0). */
async function spend(account: PrivateKeyAccount, payload: PaymentPayload): Promise<Hex> {
  const nonce = nonceOf(payload);
  const hash = await spendOwnNonce(devnet.chain, devnet.rpcUrl, devnet.usdcAddress, account, nonce);
  expect(await authorizationUsed(devnet.chain, devnet.usdcAddress, account.address, nonce)).toBe(
    true,
  );
  return hash;
}

/** A v1 proof by the SDK's v1 scheme (X-PAYMENT) for the challenge `base` answers for `url`. */
async function v1ProofFor(base: string, url: string, account: PrivateKeyAccount) {
  const response = await postSnapshot(base, url);
  expect(response.status).toBe(402);
  const offer = PaymentRequiredV1Schema.parse(await response.json());
  const requirements = PaymentRequirementsV1Schema.parse(offer.accepts[0]);
  const payload = await new ExactEvmSchemeV1(account).createPaymentPayload(
    1,
    requirements as never,
  );
  return { "X-PAYMENT": Buffer.from(JSON.stringify(payload)).toString("base64") };
}

/** A refusal (for `reason`, when given) that carries no report and names no settlement. */
async function expectRefusedWithoutReport(response: Response, reason?: string) {
  const body = await response.text();
  expect(response.status, body.slice(0, 300)).toBe(402);
  const answer = JSON.parse(body) as { error?: string };
  expect(answer).not.toHaveProperty("requested_url");
  if (reason !== undefined) expect(answer.error).toContain(reason);
  expect(response.headers.get("payment-response")).toBeNull();
  expect(response.headers.get("x-payment-response")).toBeNull();
}

type Hold = { hold(): Promise<void>; release(): void };

/**
 * Sends the paid call while `site` holds the snapshot, spends the nonce meanwhile, then lets
 * the snapshot finish: resolves with the call's answer.
 */
async function spentMidSnapshot<T>(
  site: Hold,
  account: PrivateKeyAccount,
  payload: PaymentPayload,
  send: () => Promise<T>,
): Promise<T> {
  const arrived = site.hold();
  const answer = send();
  await arrived;
  await spend(account, payload);
  site.release();
  return answer;
}

/** An MCP tool result that is the refusal, without the report or a settlement. */
function expectMcpRefused(result: Awaited<ReturnType<typeof callSnapshot>>) {
  expect(result.isError).toBe(true);
  expect(result.structuredContent).not.toHaveProperty("requested_url");
  expect(result.structuredContent).toHaveProperty("accepts");
  expect(result._meta?.["x402/payment-response"]).toBeUndefined();
  expect(JSON.stringify(result.structuredContent)).toContain(USED_ELSEWHERE);
}

describe("devnet mode: the payer spends its own nonce while the snapshot runs", () => {
  let service: DevnetService;
  beforeAll(async () => {
    service = await startService();
  });

  it("x402 v2: 402, no report, the record freed; payer −0, payTo +0", async () => {
    const account = devnet.payer(0);
    const before = await balances(account.address);
    const headers = await v2ProofFor(service.url, target.url, account);
    const payload = payloadIn(headers);

    const response = await spentMidSnapshot(target, account, payload, () =>
      postSnapshot(service.url, target.url, headers),
    );
    await expectRefusedWithoutReport(response, USED_ELSEWHERE);
    await expectFreed(service.store, payload);
    expect(await balances(account.address)).toEqual(before);
    // The same proof again: refused, never the kept report.
    await expectRefusedWithoutReport(await postSnapshot(service.url, target.url, headers));
    expect(await balances(account.address)).toEqual(before);
  });

  it("x402 v1: 402, no report, the record freed; payer −0, payTo +0", async () => {
    const account = devnet.payer(1);
    const before = await balances(account.address);
    const headers = await v1ProofFor(service.url, target.url, account);
    const payload = payloadIn(headers);

    const response = await spentMidSnapshot(target, account, payload, () =>
      postSnapshot(service.url, target.url, headers),
    );
    await expectRefusedWithoutReport(response, USED_ELSEWHERE);
    await expectFreed(service.store, payload);
    expect(await balances(account.address)).toEqual(before);
  });

  it("MCP: the tool's 402, no report, the record freed; payer −0, payTo +0", async () => {
    const account = devnet.payer(2);
    const before = await balances(account.address);
    const { client } = await connectedMcpClient(service.url);
    const payload = await signedProof(challengeOf(await callSnapshot(client, target.url)), account);

    const result = await spentMidSnapshot(target, account, payload, () =>
      callSnapshot(client, target.url, { "x402/payment": payload }),
    );
    expectMcpRefused(result);
    await expectFreed(service.store, payload);
    expect(await balances(account.address)).toEqual(before);
    await client.close();
  });
});

describe("a settle answer lost, then the payer spends its nonce", () => {
  it("the retry reads the chain: 402, no report, the record freed; payer −0, payTo +0", async () => {
    const service = await startService();
    const account = devnet.payer(3);
    const before = await balances(account.address);
    const headers = await v2ProofFor(service.url, target.url, account);
    const payload = payloadIn(headers);

    proxy.failNextSettle("drop-unforwarded");
    const lost = await postSnapshot(service.url, target.url, headers);
    expect(lost.status).toBe(503);
    expect(await service.store.get(recordKey(payload))).toMatchObject({ state: "settling" });
    await spend(account, payload);

    await expectRefusedWithoutReport(
      await postSnapshot(service.url, target.url, headers),
      USED_ELSEWHERE,
    );
    await expectFreed(service.store, payload);
    expect(await balances(account.address)).toEqual(before);
  });

  it("the reconciler reads the chain and frees the record, never settled; the retry is refused", async () => {
    const service = await startService(100);
    const account = devnet.payer(4);
    const before = await balances(account.address);
    const headers = await v1ProofFor(service.url, target.url, account);
    const payload = payloadIn(headers);

    proxy.failNextSettle("drop-unforwarded");
    expect((await postSnapshot(service.url, target.url, headers)).status).toBe(503);
    await spend(account, payload);

    const key = recordKey(payload);
    await expect
      .poll(async () => (await service.store.get(key))?.state ?? "free", { timeout: 10_000 })
      .not.toMatch(/settling|report_kept/);
    await expectFreed(service.store, payload);
    await expectRefusedWithoutReport(await postSnapshot(service.url, target.url, headers));
    expect(await balances(account.address)).toEqual(before);
  });
});

describe("production mode (`secsnap serve`, X402_PAY_TO, an external facilitator)", () => {
  let site: HeldSite;
  let instance: ServiceInstance;
  let dataDir: string;

  beforeAll(async () => {
    site = await startHeldSite();
    dataDir = mkdtempSync(join(tmpdir(), "secsnap-own-nonce-"));
    instance = await startInstance({
      name: "solo",
      env: {
        ...fleetEnv({
          payTo: devnet.payTo,
          facilitatorUrl: proxy.url,
          rpcUrl: devnet.rpcUrl,
          targetPorts: [site.port],
          allowCidrs: PUBLIC_CIDRS,
          extra: { SNAPSHOT_TIMEOUT_MS: "30000", LOG_LEVEL: "warn" },
        }),
        DATA_DIR: dataDir,
      },
    });
    await instance.start();
  }, 120_000);

  afterAll(async () => {
    site?.release();
    await instance?.close();
    await site?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** secsnap_payments_total for one generation and outcome. */
  async function payments(version: "1" | "2", outcome: string): Promise<number> {
    const text = await (await fetch(instance.metricsUrl)).text();
    const line = text
      .split("\n")
      .find((l) =>
        l.startsWith(`secsnap_payments_total{version="${version}",outcome="${outcome}"}`),
      );
    return Number(line?.split(" ").at(-1) ?? 0);
  }

  async function expectCounted(version: "1" | "2", run: () => Promise<void>) {
    const [settled, refused] = [
      await payments(version, "settled"),
      await payments(version, "refused"),
    ];
    await run();
    expect(await payments(version, "settled")).toBe(settled);
    expect(await payments(version, "refused")).toBeGreaterThan(refused);
  }

  it("x402 v2: 402, no report; payer −0, payTo +0; counted refused, not settled", async () => {
    const account = devnet.payer(5);
    const before = await balances(account.address);
    const headers = await v2ProofFor(instance.url, site.url, account);
    await expectCounted("2", async () => {
      const response = await spentMidSnapshot(site, account, payloadIn(headers), () =>
        site.post(instance.url, headers),
      );
      await expectRefusedWithoutReport(response, USED_ELSEWHERE);
    });
    expect(await balances(account.address)).toEqual(before);
    await expectRefusedWithoutReport(await site.post(instance.url, headers));
  });

  it("x402 v1: 402, no report; payer −0, payTo +0; counted refused, not settled", async () => {
    const account = devnet.payer(6);
    const before = await balances(account.address);
    const headers = await v1ProofFor(instance.url, site.url, account);
    await expectCounted("1", async () => {
      const response = await spentMidSnapshot(site, account, payloadIn(headers), () =>
        site.post(instance.url, headers),
      );
      await expectRefusedWithoutReport(response, USED_ELSEWHERE);
    });
    expect(await balances(account.address)).toEqual(before);
  });

  it("MCP: the tool's 402, no report; payer −0, payTo +0; counted refused, not settled", async () => {
    const account = devnet.payer(7);
    const before = await balances(account.address);
    const { client } = await connectedMcpClient(instance.url);
    const payload = await signedProof(challengeOf(await callSnapshot(client, site.url)), account);
    await expectCounted("2", async () => {
      const result = await spentMidSnapshot(site, account, payload, () =>
        callSnapshot(client, site.url, { "x402/payment": payload }),
      );
      expectMcpRefused(result);
    });
    expect(await balances(account.address)).toEqual(before);
    await client.close();
  });

  it("a settle answer lost, then the nonce spent: the retry is 402, no report; payer −0, payTo +0; never counted settled", async () => {
    const account = devnet.payer(3);
    const before = await balances(account.address);
    const headers = await v2ProofFor(instance.url, site.url, account);
    const settled = await payments("2", "settled");

    proxy.failNextSettle("drop-unforwarded");
    const lost = await site.post(instance.url, headers);
    expect(lost.status).toBe(503);
    expect(lost.headers.get("retry-after")).toMatch(/^\d+$/);
    await spend(account, payloadIn(headers));

    // The retry reads the chain (or finds the record the reconciler freed): refused either way.
    await expectRefusedWithoutReport(await site.post(instance.url, headers));
    expect(await payments("2", "settled")).toBe(settled);
    expect(await balances(account.address)).toEqual(before);
  });
});
