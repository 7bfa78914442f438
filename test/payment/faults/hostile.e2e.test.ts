/**
 * Hostile targets and hostile payers over the real devnet (anvil + DevUSDC + the project's
 * facilitator + the service with the real engine), money checked on chain: refused snapshots are
 * bounded per proof and per payer without charging anyone, and a client that hangs up before
 * its report is not charged.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http, type Address, type Hex, type PublicClient } from "viem";
import { privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../../src/devnet/devnet.js";
import {
  createApp,
  createChallengeFastPath,
  type NodeFront,
  startServer,
  type RunningServer,
} from "../../../src/http/index.js";
import {
  createPaymentGate,
  type PaidRequestTimings,
  type PaymentGateOptions,
} from "../../../src/payment/index.js";
import {
  createSnapshotEngine,
  createUrlPolicy,
  type SnapshotEngine,
} from "../../../src/snapshot/index.js";
import { startTarget } from "../../fixtures/held-target.js";
import { authorizationUsed as authorizationUsedOnChain, usdcBalance } from "../../fixtures/usdc.js";
import { closedPort } from "../../fixtures/targets.js";
import { devnetGate } from "../../fixtures/paid-devnet.js";

const PRICE_UNITS = 50_000n;

/** A site that accepts connections and requests and never answers; counts the requests. */
async function startSilentTarget() {
  const sockets = new Set<Socket>();
  const held = new Set<ServerResponse>();
  const state = { requests: 0, url: "", port: 0, close: async () => {} };
  const server: Server = createServer((_req, res) => {
    state.requests++;
    held.add(res);
  });
  server.on("connection", (socket: Socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.port = (server.address() as AddressInfo).port;
  state.url = `http://127.0.0.1:${state.port}/`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return state;
}

let devnet: Devnet;
let chain: PublicClient;
let silent: Awaited<ReturnType<typeof startSilentTarget>>;
let slow: Awaited<ReturnType<typeof startTarget>>;
let probePort: number;
const opened: { close(): Promise<void> }[] = [];

interface Service {
  url: string;
  /** Resolves with the timings of the next paid request the gate finished. */
  nextPaid(): Promise<PaidRequestTimings>;
  /** Resolves when the client of the next request carrying a proof has gone. */
  nextClientGone(): Promise<void>;
}

/** The service as `secsnap serve` wires it (fast path included), on its own engine. */
async function startService(
  engineTimeoutMs: number,
  gateOptions: Partial<PaymentGateOptions> = {},
): Promise<Service> {
  const allowedPorts = new Set([80, 443, silent.port, slow.port, probePort]);
  const engine: SnapshotEngine = createSnapshotEngine({
    timeoutMs: engineTimeoutMs,
    maxRedirects: 10,
    allowedPorts,
    allowCidrs: ["127.0.0.0/8"],
    dnsServers: [],
    httpsProbePort: probePort,
  });
  let paidWaiters: ((t: PaidRequestTimings) => void)[] = [];
  let goneWaiters: (() => void)[] = [];
  const gate = createPaymentGate({
    ...devnetGate(devnet),
    onPaidRequest: (timings) => {
      const waiters = paidWaiters;
      paidWaiters = [];
      for (const resolve of waiters) resolve(timings);
    },
    ...gateOptions,
  });
  const urlPolicy = createUrlPolicy({ allowedPorts, allowCidrs: ["127.0.0.0/8"] });
  const app = createApp({ engine, urlPolicy, payment: gate.route, log: () => {} });
  const fastPath = createChallengeFastPath({ urlPolicy, unpaidChallenge: gate.unpaidChallenge });
  // Sees each request first: notes when the client of a paid request goes away.
  const front: NodeFront = (req, res) => {
    if (req.headers["payment-signature"]) {
      res.once("close", () => {
        if (res.writableFinished) return;
        const waiters = goneWaiters;
        goneWaiters = [];
        for (const resolve of waiters) resolve();
      });
    }
    return fastPath(req, res);
  };
  const server: RunningServer = await startServer({
    config: { host: "127.0.0.1", port: 0 },
    app,
    front,
  });
  opened.push({ close: () => server.close(1_000) }, engine);
  return {
    url: server.url,
    nextPaid: () => new Promise((resolve) => paidWaiters.push(resolve)),
    nextClientGone: () => new Promise((resolve) => goneWaiters.push(() => resolve())),
  };
}

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  chain = createPublicClient({ transport: http(devnet.rpcUrl) });
  silent = await startSilentTarget();
  slow = await startTarget();
  probePort = await closedPort("127.0.0.1");
  opened.push(silent, slow);
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
  await devnet?.close();
});

function balanceOf(address: Address): Promise<bigint> {
  return usdcBalance(chain, devnet.usdcAddress, address);
}

/** True once the token has executed (or cancelled) this authorization. */
function authorizationUsed(payload: PaymentPayload): Promise<boolean> {
  const { from, nonce } = (payload.payload as { authorization: { from: Address; nonce: Hex } })
    .authorization;
  return authorizationUsedOnChain(chain, devnet.usdcAddress, from, nonce);
}

function payer(i: number): PrivateKeyAccount {
  const key = devnet.payerPrivateKeys[i];
  if (!key) throw new Error(`no payer ${i}`);
  return privateKeyToAccount(key);
}

function post(
  base: string,
  url: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url }),
    ...(signal && { signal }),
  });
}

async function challenge(base: string, url: string): Promise<PaymentRequired> {
  const response = await post(base, url);
  expect(response.status).toBe(402);
  return decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED")!);
}

/** A proof made by the official client, and its PAYMENT-SIGNATURE header. */
async function proof(account: PrivateKeyAccount, required: PaymentRequired) {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account });
  const payload = await client.createPaymentPayload(required);
  return { payload, headers: new x402HTTPClient(client).encodePaymentSignatureHeader(payload) };
}

/** Balances of the payer and of payTo. */
async function balances(account: PrivateKeyAccount): Promise<[bigint, bigint]> {
  return Promise.all([balanceOf(account.address), balanceOf(devnet.payTo)]);
}

describe("one proof and a target that never answers", () => {
  it("is released for 3 refused snapshots, then refused with a 402 that says why; nothing moves", async () => {
    const service = await startService(1_000);
    const account = payer(0);
    const before = await balances(account);
    const { payload, headers } = await proof(account, await challenge(service.url, silent.url));

    for (let attempt = 1; attempt <= 3; attempt++) {
      const refused = await post(service.url, silent.url, headers);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error_type: string }).error_type).toBe("timeout");
    }
    const requestsBefore = silent.requests;
    const fourth = await post(service.url, silent.url, headers);
    expect(fourth.status).toBe(402);
    expect(await fourth.json()).toEqual({
      error: expect.stringMatching(
        /this payment proof was already used for 3 refused snapshots; sign a new one/,
      ),
    });
    expect(decodePaymentRequiredHeader(fourth.headers.get("PAYMENT-REQUIRED")!).error).toBe(
      "payment_proof_exhausted",
    );
    // Refused before the snapshot: the target saw nothing more.
    expect(silent.requests).toBe(requestsBefore);

    expect(await balances(account)).toEqual(before);
    expect(await authorizationUsed(payload)).toBe(false);
  });
});

describe("a payer's budget of unpaid snapshots", () => {
  it("beyond it: 429 with Retry-After before any fetch, nothing settled, and that proof still pays later", async () => {
    const limited = await startService(1_000, { refusedPerPayerPerMinute: 2 });
    const account = payer(1);
    const before = await balances(account);
    const required = await challenge(limited.url, silent.url);

    // Two refused snapshots, each with its own proof: the budget is per payer, not per proof.
    for (let i = 0; i < 2; i++) {
      const refused = await post(limited.url, silent.url, (await proof(account, required)).headers);
      expect(refused.status).toBe(400);
    }
    const requestsBefore = silent.requests;
    const third = await proof(account, required);
    const over = await post(limited.url, silent.url, third.headers);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(over.headers.get("content-type")).toMatch(/^application\/json/);
    expect(over.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect(await over.json()).toEqual({
      error: expect.stringMatching(/unpaid snapshots/),
      code: "payer_over_budget",
    });
    expect(silent.requests).toBe(requestsBefore);
    expect(await balances(account)).toEqual(before);
    expect(await authorizationUsed(third.payload)).toBe(false);

    // Another payer is not affected.
    const other = payer(2);
    const otherRefused = await post(
      limited.url,
      silent.url,
      (await proof(other, required)).headers,
    );
    expect(otherRefused.status).toBe(400);

    // The refused proof was neither settled nor burnt: it buys a snapshot elsewhere.
    const service = await startService(5_000);
    const paid = await post(service.url, slow.url, third.headers);
    expect(paid.status).toBe(200);
    expect(await balances(account)).toEqual([before[0] - PRICE_UNITS, before[1] + PRICE_UNITS]);
    expect(await authorizationUsed(third.payload)).toBe(true);
  });
});

describe("a client that hangs up before its report", () => {
  it("ends the snapshot at once: the target's connection closes without waiting for its answer", async () => {
    // A deadline far beyond the test's own timeout: only the hang-up can end the snapshot.
    const service = await startService(120_000);
    const account = payer(4);
    const before = await balances(account);
    const { payload, headers } = await proof(account, await challenge(service.url, slow.url));
    const arrived = slow.hold();
    const gone = service.nextClientGone();
    const client = new AbortController();
    const request = post(service.url, slow.url, headers, client.signal).catch(
      (error: unknown) => error,
    );
    await arrived;
    const closed = slow.heldClosed();
    client.abort();
    expect(await request).toBeInstanceOf(Error);
    await gone;
    await closed; // never, on an engine that does not hear the hang-up, until the deadline
    slow.release();
    expect(await balances(account)).toEqual(before);
    expect(await authorizationUsed(payload)).toBe(false);
  });

  it("is not charged, and the same proof pays for a report afterwards (exactly 50000 units)", async () => {
    const service = await startService(5_000);
    const account = payer(3);
    const before = await balances(account);
    const { payload, headers } = await proof(account, await challenge(service.url, slow.url));

    // The target holds its answer until the client has gone, then answers: the snapshot
    // succeeds after the client left.
    const arrived = slow.hold();
    const gone = service.nextClientGone();
    const finished = service.nextPaid();
    const client = new AbortController();
    const request = post(service.url, slow.url, headers, client.signal).catch(
      (error: unknown) => error,
    );
    await arrived;
    client.abort();
    expect(await request).toBeInstanceOf(Error);
    await gone;
    slow.release();
    const timings = await finished;
    expect(timings.status).not.toBe(200);

    expect(await balances(account)).toEqual(before);
    expect(await authorizationUsed(payload)).toBe(false);

    const paid = await post(service.url, slow.url, headers);
    expect(paid.status).toBe(200);
    expect(paid.headers.get("PAYMENT-RESPONSE")).toBeTruthy();
    expect(await balances(account)).toEqual([before[0] - PRICE_UNITS, before[1] + PRICE_UNITS]);
    expect(await authorizationUsed(payload)).toBe(true);
  });
});
