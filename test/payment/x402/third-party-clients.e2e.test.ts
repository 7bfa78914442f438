/**
 * Third-party HTTP x402 clients pay the service, end to end over the real devnet (anvil +
 * DevUSDC + the project's facilitator + the service as `secsnap serve` wires it): @x402/axios
 * (v2), x402-axios (v1), @faremeter/fetch, @dexterai/x402 and x402-fetch 1.2 called with a
 * `Headers` object, each used through its public API as its README shows (@faremeter/fetch with
 * its own EVM handler, @faremeter/payment-evm). Each call must answer
 * 200 with the report and the payment response header, and move exactly 0.05 USDC from its payer
 * to payTo in one Transfer. Beside them, the discovery audit of @agentcash/discovery (what
 * `agentcash discover` / `check` run) against the running service. One devnet, one service.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import {
  checkEndpointSchema,
  getWarningsForL3,
  getWarningsForLegacyWellKnown,
  probeLegacyWellKnown,
} from "@agentcash/discovery";
import { getPaymentReceipt, wrapFetch as dexterWrapFetch } from "@dexterai/x402/client";
import { wrap as faremeterWrap } from "@faremeter/fetch";
import { createPaymentHandler as createFaremeterEvmHandler } from "@faremeter/payment-evm/exact";
import { wrapAxiosWithPaymentFromConfig } from "@x402/axios";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import axios from "axios";
import {
  createWalletClient,
  decodeEventLog,
  getAddress,
  http,
  publicActions,
  type Address,
  type Hex,
} from "viem";
import { baseSepolia } from "viem/chains";
import { withPaymentInterceptor, decodeXPaymentResponse } from "x402-axios";
import { wrapFetchWithPayment as x402FetchWrap } from "x402-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI } from "../../../src/devnet/constants.js";
import { startPaidBed, type PaidBed } from "../../fixtures/paid-service.js";

const PRICE_UNITS = 50_000n;
const CHAIN_ID = 84532;

let bed: PaidBed;
/** Every request a client sent through the guarded fetch: all must be on loopback. */
const sent: { url: string; contentType: string | null; proof: boolean }[] = [];

const realFetch = globalThis.fetch;

/**
 * `fetch`, refusing anything but loopback: no client may reach a network of its own. It is also
 * the global fetch while the clients run, for what they (or viem under them) fetch on their own.
 */
const loopbackFetch: typeof fetch = (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : {}));
  sent.push({
    url,
    contentType: headers.get("content-type"),
    proof: headers.has("payment-signature") || headers.has("x-payment"),
  });
  const host = new URL(url).hostname;
  if (host !== "127.0.0.1" && host !== "localhost") {
    return Promise.reject(new Error(`a test client tried to reach ${url}`));
  }
  return realFetch(input, init);
};

beforeAll(async () => {
  bed = await startPaidBed({ operatorContact: { email: "ops@example.com" } });
}, 120_000);

afterAll(async () => {
  await bed?.close();
});

function snapshotUrl(): string {
  return `${bed.service.url}/v1/snapshot`;
}

function payerKey(i: number): Hex {
  const key = bed.devnet.payerPrivateKeys[i];
  if (!key) throw new Error(`no devnet payer ${i}`);
  return key;
}

/** What one client's paid call gave back. */
interface PaidCall {
  status: number;
  report: unknown;
  /** The settlement transaction the payment response header names. */
  transaction: string;
}

/**
 * Runs `call` as payer `i` and checks the money: payer −50000, payTo +50000, and the settlement
 * transaction holds exactly one USDC Transfer, payer → payTo, of 50000.
 */
async function expectPaidOnce(i: number, call: () => Promise<PaidCall>): Promise<PaidCall> {
  const payer = bed.payer(i).address;
  const before = [await bed.balanceOf(payer), await bed.balanceOf(bed.devnet.payTo)] as const;
  const paid = await call();
  expect(paid.status).toBe(200);
  expect(paid.report).toMatchObject({ requested_url: bed.target.url, reachable: true });
  const after = [await bed.balanceOf(payer), await bed.balanceOf(bed.devnet.payTo)] as const;
  expect(before[0] - after[0]).toBe(PRICE_UNITS);
  expect(after[1] - before[1]).toBe(PRICE_UNITS);
  expect(await transfersIn(paid.transaction as Hex)).toEqual([
    { from: payer, to: getAddress(bed.devnet.payTo), value: PRICE_UNITS },
  ]);
  return paid;
}

async function transfersIn(hash: Hex): Promise<{ from: Address; to: Address; value: bigint }[]> {
  const receipt = await bed.chain.getTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  return receipt.logs
    .filter((log) => log.address.toLowerCase() === bed.devnet.usdcAddress.toLowerCase())
    .map((log) => decodeEventLog({ abi: DEV_USDC_ABI, ...log }))
    .filter((event) => event.eventName === "Transfer")
    .map((event) => {
      const args = event.args as { from: Address; to: Address; value: bigint };
      return { from: getAddress(args.from), to: getAddress(args.to), value: args.value };
    });
}

/** x402 v1 clients' signer type (x402 bundles its own viem; the types differ only nominally). */
type V1Signer = Parameters<typeof withPaymentInterceptor>[1];

/** A payer's wallet as the x402 v1 clients take it, on the devnet's RPC. */
function v1Wallet(i: number): V1Signer {
  return createWalletClient({
    account: bed.payer(i),
    chain: baseSepolia,
    transport: http(bed.devnet.rpcUrl),
  }).extend(publicActions) as unknown as V1Signer;
}

/** The Content-Type of the one paid request a client sent since `from` (an index into `sent`). */
function paidRetryContentType(from: number): string | null {
  const proofs = sent.slice(from).filter((request) => request.proof);
  expect(proofs).toHaveLength(1);
  return proofs[0]!.contentType;
}

describe("third-party x402 clients pay POST /v1/snapshot on the devnet", () => {
  beforeAll(() => {
    globalThis.fetch = loopbackFetch;
  });
  afterAll(() => {
    globalThis.fetch = realFetch;
  });

  it("@x402/axios (v2): 200, PAYMENT-RESPONSE, exactly 50000 moved", async () => {
    await expectPaidOnce(1, async () => {
      const api = wrapAxiosWithPaymentFromConfig(axios.create(), {
        schemes: [
          {
            network: bed.devnet.network,
            // The wrapper carries its own @x402/core; the scheme is the same interface.
            client: new ExactEvmScheme(bed.payer(1)) as never,
          },
        ],
      });
      const response = await api.post(snapshotUrl(), { url: bed.target.url });
      const header = response.headers["payment-response"] as string | undefined;
      expect(header).toEqual(expect.any(String));
      const settled = decodePaymentResponseHeader(header!);
      expect(settled).toMatchObject({ success: true, network: bed.devnet.network });
      return { status: response.status, report: response.data, transaction: settled.transaction };
    });
  });

  it("x402-axios (v1): 200, X-PAYMENT-RESPONSE, exactly 50000 moved", async () => {
    await expectPaidOnce(2, async () => {
      const api = withPaymentInterceptor(axios.create(), v1Wallet(2));
      const response = await api.post(snapshotUrl(), { url: bed.target.url });
      const header = response.headers["x-payment-response"] as string | undefined;
      expect(header).toEqual(expect.any(String));
      const settled = decodeXPaymentResponse(header!);
      expect(settled).toMatchObject({ success: true, network: "base-sepolia" });
      return { status: response.status, report: response.data, transaction: settled.transaction };
    });
  });

  it("@faremeter/fetch with its own EVM handler: its authorization is valid from a minute ago, and it pays", async () => {
    // @faremeter/payment-evm's exact handler, as its README wires it: the devnet's USDC sits at
    // Base Sepolia's address, which faremeter's asset table names for chain 84532. It signs
    // validAfter = now − 60 s (the devnet's chain clock follows the wall clock, so such a proof
    // is valid at once); the signer is wrapped only to read what it signed.
    const account = bed.payer(3);
    const signed: { validAfter: bigint; signedAt: bigint }[] = [];
    const handler = createFaremeterEvmHandler({
      chain: { id: CHAIN_ID, name: "Base Sepolia" },
      address: account.address,
      account: {
        signTypedData: (params) => {
          const { validAfter } = params.message as { validAfter: bigint };
          signed.push({ validAfter, signedAt: BigInt(Math.floor(Date.now() / 1000)) });
          return account.signTypedData(params as Parameters<typeof account.signTypedData>[0]);
        },
      },
    });
    const paidFetch = faremeterWrap(loopbackFetch, { handlers: [handler], retryCount: 0 });
    const from = sent.length;
    await expectPaidOnce(3, async () => {
      const response = await paidFetch(snapshotUrl(), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: bed.target.url }),
      });
      const header = response.headers.get("PAYMENT-RESPONSE");
      expect(header).toEqual(expect.any(String));
      const settled = decodePaymentResponseHeader(header!);
      return {
        status: response.status,
        report: await response.json(),
        transaction: settled.transaction,
      };
    });
    // Called with a plain object, its paid retry keeps the caller's Content-Type.
    expect(paidRetryContentType(from)).toBe("application/json");
    expect(signed).toHaveLength(1);
    expect(signed[0]!.signedAt - signed[0]!.validAfter).toBe(60n);
  });

  it("@dexterai/x402, given a Headers object it drops on the paid retry: it pays", async () => {
    // Its retry sends no Content-Type when the caller passed `Headers`; the service reads an
    // absent Content-Type as JSON.
    const paidFetch = dexterWrapFetch(loopbackFetch, {
      evmPrivateKey: payerKey(4),
      preferredNetwork: bed.devnet.network,
      rpcUrls: { [bed.devnet.network]: bed.devnet.rpcUrl },
      facilitatorUrl: bed.devnet.facilitatorUrl,
    });
    const from = sent.length;
    await expectPaidOnce(4, async () => {
      const response = await paidFetch(snapshotUrl(), {
        method: "POST",
        headers: new Headers({ "content-type": "application/json" }),
        body: JSON.stringify({ url: bed.target.url }),
      });
      const receipt = getPaymentReceipt(response);
      expect(receipt).toMatchObject({ success: true, network: bed.devnet.network });
      const header = response.headers.get("PAYMENT-RESPONSE");
      expect(header).toEqual(expect.any(String));
      return {
        status: response.status,
        report: await response.json(),
        transaction: decodePaymentResponseHeader(header!).transaction,
      };
    });
    // The case this test is for: the paid retry went without the caller's JSON Content-Type.
    expect(paidRetryContentType(from) ?? "").not.toMatch(/application\/json/);
  });

  it("x402-fetch 1.2, given a Headers object it drops on the paid retry: it pays", async () => {
    const paidFetch = x402FetchWrap(loopbackFetch, v1Wallet(5));
    const from = sent.length;
    await expectPaidOnce(5, async () => {
      const response = await paidFetch(snapshotUrl(), {
        method: "POST",
        headers: new Headers({ "content-type": "application/json" }),
        body: JSON.stringify({ url: bed.target.url }),
      });
      const header = response.headers.get("X-PAYMENT-RESPONSE");
      expect(header).toEqual(expect.any(String));
      return {
        status: response.status,
        report: await response.json(),
        transaction: decodeXPaymentResponse(header!).transaction,
      };
    });
    expect(paidRetryContentType(from) ?? "").not.toMatch(/application\/json/);
  });

  it("no client reached anything but loopback", () => {
    expect(sent.length).toBeGreaterThan(0);
    const urls = sent.map((request) => request.url);
    expect(urls.filter((url) => !/^http:\/\/(127\.0\.0\.1|localhost)[:/]/.test(url))).toEqual([]);
  });
});

const run = promisify(execFile);
const discoveryBin = join(
  dirname(createRequire(import.meta.url).resolve("@agentcash/discovery")),
  "../bin/discovery.js",
);

/** The discovery CLI (`agentcash discover` / `check`) with --json, against the service. */
async function discoveryCli(...args: string[]): Promise<{ warnings: unknown[] } & object> {
  const { stdout } = await run(process.execPath, [discoveryBin, ...args, "--json"], {
    timeout: 60_000,
  });
  return JSON.parse(stdout) as { warnings: unknown[] };
}

describe("the @agentcash/discovery audit of the service's origin", () => {
  it("discover: the paid route found from /openapi.json, and no warning", async () => {
    const out = await discoveryCli("discover", bed.service.url);
    expect(out.warnings, JSON.stringify(out.warnings, null, 2)).toEqual([]);
    expect(out).toMatchObject({
      ok: true,
      selectedStage: "openapi",
      resources: expect.arrayContaining([
        expect.objectContaining({
          method: "POST",
          path: "/v1/snapshot",
          authHint: "paid",
          protocols: ["x402"],
        }),
      ]),
    });
  });

  it("check <origin>/v1/snapshot: the route requires payment (x402), and no warning", async () => {
    const out = await discoveryCli("check", snapshotUrl());
    expect(out.warnings, JSON.stringify(out.warnings, null, 2)).toEqual([]);
    const advertised = (out as { advisories?: { method: string }[] }).advisories?.find(
      (a) => a.method === "POST",
    );
    expect(advertised).toMatchObject({
      source: "openapi",
      authMode: "paid",
      protocols: ["x402"],
    });
    // The live probe: with an input to check (a bodyless POST is a 400, checked before any
    // payment is asked for), the endpoint itself answers 402 with an x402 challenge.
    const probed = await checkEndpointSchema({
      url: snapshotUrl(),
      sampleInputBody: { url: bed.target.url },
    });
    expect(probed.found).toBe(true);
    if (!probed.found) return;
    const post = probed.advisories.find((a) => a.method === "POST");
    // The 402 names no protocol in a header of its own (x402 has none); the challenge it
    // parsed is x402 version 2, and the library's checks of that challenge find nothing.
    expect(post).toMatchObject({
      source: "probe",
      authMode: "paid",
      paymentOptions: [
        expect.objectContaining({
          protocol: "x402",
          version: 2,
          network: bed.devnet.network,
          amount: "50000",
        }),
      ],
    });
    const probeWarnings = getWarningsForL3(post!);
    expect(probeWarnings, JSON.stringify(probeWarnings, null, 2)).toEqual([]);
  });

  it("/.well-known/x402 is served, which the library reads as legacy (an info, not a warning)", async () => {
    const probe = await probeLegacyWellKnown(bed.service.url);
    expect(probe.isOk()).toBe(true);
    const notes = getWarningsForLegacyWellKnown(probe._unsafeUnwrap());
    expect(notes.map((n) => [n.code, n.severity])).toEqual([["LEGACY_WELL_KNOWN_FOUND", "info"]]);
  });
});
