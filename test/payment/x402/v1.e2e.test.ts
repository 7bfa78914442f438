/**
 * x402 v1 beside v2, end to end over the real devnet: anvil + DevUSDC + the project's facilitator
 * (serving v1 too) + the service, paid by the legacy client `x402-fetch` 1.x and by v1 proofs
 * made with the official SDK's v1 client scheme. The v2 path is paid again here by the official @x402/fetch, to
 * show it is unaffected by the v1 body.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { PaymentRequiredV1Schema, PaymentRequirementsV1Schema } from "@x402/core/schemas";
import type { PaymentRequiredV1 } from "@x402/core/schemas";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import {
  createWalletClient,
  decodeEventLog,
  http,
  publicActions,
  type Address,
  type Hex,
} from "viem";
import { baseSepolia } from "viem/chains";
import { Ajv2020 } from "ajv/dist/2020.js";
import { decodeXPaymentResponse, wrapFetchWithPayment } from "x402-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI } from "../../../src/devnet/constants.js";
import { payCommand } from "../../../src/cli/pay/command.js";
import type { SnapshotEngine } from "../../../src/snapshot/index.js";
import {
  PRICE_UNITS,
  devnetGate,
  localEngine,
  loopbackScope,
  paidSnapshot,
  postSnapshot,
  startGatedService,
  startPaidDevnet,
  type GatedService,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { startPrivateRedirectSite, type PrivateRedirectSite } from "../../fixtures/targets.js";

let devnet: PaidDevnet;
let target: PrivateRedirectSite;
let engine: SnapshotEngine;
let service: GatedService;
/** The proof header names of every paid request the service received, in order. */
const proofHeadersSeen: string[] = [];

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startPrivateRedirectSite();
  const scope = loopbackScope([80, 443, target.port, target.closedPort]);
  engine = localEngine(scope, target.closedPort);
  service = await startGatedService({
    engine,
    scope,
    gate: devnetGate(devnet),
    fastPath: true,
    onRequest: (req) => {
      for (const name of ["payment-signature", "x-payment"]) {
        if (req.headers[name] !== undefined) proofHeadersSeen.push(name);
      }
    },
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await engine?.close();
  await target?.close();
  await devnet?.close();
});

/** x402-fetch's signer type; x402 bundles its own viem, whose types differ from ours only nominally. */
type V1Signer = Parameters<typeof wrapFetchWithPayment>[1];

/**
 * A payer's wallet as x402 v1 clients take it: what x402's createSigner builds, on the devnet's
 * RPC rather than a public one.
 */
function wallet(i: number): { signer: V1Signer; address: Address } {
  const account = devnet.payer(i);
  const client = createWalletClient({
    account,
    chain: baseSepolia,
    transport: http(devnet.rpcUrl),
  }).extend(publicActions);
  return { signer: client as unknown as V1Signer, address: account.address };
}

function post(url: unknown, headers: Record<string, string> = {}) {
  return postSnapshot(service.url, url, headers);
}

async function v1Challenge(): Promise<PaymentRequiredV1> {
  const response = await post(target.url);
  expect(response.status).toBe(402);
  return PaymentRequiredV1Schema.parse(await response.json());
}

/** A v1 proof made by the SDK's v1 client scheme, as the X-PAYMENT header. */
async function v1Proof(i: number, change: { maxTimeoutSeconds?: number } = {}) {
  // A negative timeout makes the client sign an authorization that has already expired.
  const requirements = {
    ...PaymentRequirementsV1Schema.parse((await v1Challenge()).accepts[0]),
    ...change,
  };
  const scheme = new ExactEvmSchemeV1(devnet.payer(i));
  const payload = await scheme.createPaymentPayload(1, requirements as never);
  return new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(payload as never);
}

/** The USDC Transfer events of a transaction. */
async function transfersIn(hash: Hex) {
  const receipt = await devnet.chain.getTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  return receipt.logs
    .filter((log) => log.address.toLowerCase() === devnet.usdcAddress.toLowerCase())
    .map((log) => decodeEventLog({ abi: DEV_USDC_ABI, ...log }))
    .filter((event) => event.eventName === "Transfer");
}

describe("one 402 for both generations", () => {
  it("the body is a valid v1 challenge with the same offer as the v2 header, on both paths", async () => {
    // The first unpaid request goes through Hono, the second through the fast path.
    const [first, second] = [await post(target.url), await post(target.url)];
    for (const response of [first, second]) {
      expect(response.status).toBe(402);
      expect(response.headers.get("content-type")).toMatch(/application\/json/);
      const v2 = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED")!);
      const body = PaymentRequiredV1Schema.parse(await response.json());
      expect(body.x402Version).toBe(1);
      expect(body.error).toEqual(expect.any(String));
      expect(body.accepts).toEqual([
        {
          scheme: "exact",
          network: "base-sepolia",
          maxAmountRequired: "50000",
          resource: `${service.url}/v1/snapshot`,
          description: v2.resource.description,
          mimeType: "application/json",
          outputSchema: expect.objectContaining({
            input: expect.objectContaining({ type: "http", method: "POST", bodyType: "json" }),
            output: expect.any(Object),
          }),
          payTo: devnet.payTo,
          maxTimeoutSeconds: 300,
          asset: v2.accepts[0]!.asset,
          extra: v2.accepts[0]!.extra,
        },
      ]);
    }
  });

  it("the body is what /openapi.json publishes for the 402 (PaymentRequiredV1)", async () => {
    const doc: unknown = await (await fetch(`${service.url}/openapi.json`)).json();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema(doc as object, "openapi.json");
    const check = ajv.getSchema("openapi.json#/components/schemas/PaymentRequiredV1");
    expect(check).toBeDefined();
    expect(check!(await (await post(target.url)).json())).toBe(true);
    expect(check!.errors ?? null).toBeNull();
  });

  it("both generations name the report by a reference that resolves: the schema and the demo", async () => {
    const response = await post(target.url);
    const v2 = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED")!);
    const v1 = (await response.json()) as PaymentRequiredV1;
    const bazaar = v2.extensions?.bazaar as { info: { output: { type: string; format: string } } };
    const output = bazaar.info.output;
    expect(output.type).toBe("json");
    expect(v1.accepts[0]!.outputSchema).toMatchObject({ output });
    // The reference is read as a client would: the schema's path and pointer, the demo's path.
    const [, schemaPath, pointer] = /schema GET (\S+) \((\S+)\)/.exec(output.format) ?? [];
    const [, demoPath] = /example GET (\S+)/.exec(output.format) ?? [];
    expect(schemaPath).toBe("/openapi.json");
    const doc: unknown = await (await fetch(`${service.url}${schemaPath}`)).json();
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addFormat("date-time", (s: string) => !Number.isNaN(Date.parse(s)));
    ajv.addSchema(doc as object, "openapi.json");
    const check = ajv.getSchema(`openapi.json#/${pointer!.replaceAll(".", "/")}`);
    expect(check).toBeDefined();
    const demo = await fetch(`${service.url}${demoPath!}`);
    expect(demo.status).toBe(200);
    // The demo is a report marked as the demo (docs/contract.md §2.4); the rest is the schema's.
    const { _demo, _note, ...report } = (await demo.json()) as Record<string, unknown>;
    expect(_demo).toBe(true);
    expect(check!(report)).toBe(true);
    expect(check!.errors ?? null).toBeNull();
  });

  it("invalid input with a v1 proof is 400 without a challenge", async () => {
    const response = await post("gopher://127.0.0.1/", { "X-PAYMENT": "e30=" });
    expect(response.status).toBe(400);
    expect(response.headers.get("PAYMENT-REQUIRED")).toBeNull();
  });
});

describe("x402-fetch 1.x pays", () => {
  it("200, exactly 50000 units moved, X-PAYMENT-RESPONSE with the on-chain transaction", async () => {
    const { signer, address: from } = wallet(0);
    const [payerBefore, payToBefore] = await Promise.all([
      devnet.balanceOf(from),
      devnet.balanceOf(devnet.payTo),
    ]);
    const paidFetch = wrapFetchWithPayment(fetch, signer);
    const response = await paidFetch(`${service.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: target.url }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ requested_url: target.url, reachable: true });
    expect(response.headers.get("PAYMENT-RESPONSE")).toBeNull();
    expect(response.headers.get("access-control-expose-headers")?.split(",")).toContain(
      "X-PAYMENT-RESPONSE",
    );
    const receipt = decodeXPaymentResponse(response.headers.get("X-PAYMENT-RESPONSE")!);
    expect(receipt).toMatchObject({ success: true, network: "base-sepolia" });
    const transfers = await transfersIn(receipt.transaction as Hex);
    expect(transfers).toHaveLength(1);
    expect(transfers[0]?.args).toMatchObject({ from, to: devnet.payTo, value: PRICE_UNITS });
    expect(await devnet.balanceOf(from)).toBe(payerBefore - PRICE_UNITS);
    expect(await devnet.balanceOf(devnet.payTo)).toBe(payToBefore + PRICE_UNITS);
  });
});

describe("v1 proofs follow every v2 rule", () => {
  /** 402 with a v1 challenge whose `error` matches `reason`. */
  async function expect402(response: Response, reason: RegExp): Promise<void> {
    expect(response.status).toBe(402);
    expect(response.headers.get("X-PAYMENT-RESPONSE")).toBeNull();
    const body = PaymentRequiredV1Schema.parse(await response.json());
    expect(body.error).toMatch(reason);
    expect(body.accepts).toHaveLength(1);
  }

  it("replayed: one 200, then 402; one transfer", async () => {
    const from = wallet(1).address;
    const before = await devnet.balanceOf(from);
    const proof = await v1Proof(1);
    expect((await post(target.url, proof)).status).toBe(200);
    // Refused by the replay guard or, once settled, by the chain: either way no second charge.
    await expect402(await post(target.url, proof), /already_used/);
    expect(await devnet.balanceOf(from)).toBe(before - PRICE_UNITS);
  });

  it("the same proof ten times at once: exactly one 200 and one transfer", async () => {
    const from = wallet(2).address;
    const before = await devnet.balanceOf(from);
    const proof = await v1Proof(2);
    const statuses = (
      await Promise.all(Array.from({ length: 10 }, () => post(target.url, proof)))
    ).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    // The others found it in progress (409, retry) or already served (402).
    expect(statuses.filter((s) => s === 409 || s === 402)).toHaveLength(9);
    expect(await devnet.balanceOf(from)).toBe(before - PRICE_UNITS);
  });

  it("tampered signature and expired authorization: 402, nothing moved", async () => {
    const from = wallet(3).address;
    const before = await devnet.balanceOf(from);
    const proof = await v1Proof(3);
    const decoded = JSON.parse(Buffer.from(proof["X-PAYMENT"]!, "base64").toString()) as {
      payload: { signature: string };
    };
    const sig = decoded.payload.signature;
    decoded.payload.signature =
      sig.slice(0, -4) + (sig.slice(-4, -2) === "00" ? "01" : "00") + sig.slice(-2);
    const tampered = Buffer.from(JSON.stringify(decoded)).toString("base64");
    await expect402(await post(target.url, { "X-PAYMENT": tampered }), /signature/);

    const expired = await v1Proof(3, { maxTimeoutSeconds: -60 });
    await expect402(await post(target.url, expired), /valid_before|expired/);
    expect(await devnet.balanceOf(from)).toBe(before);
  });

  it("an unreadable X-PAYMENT is a 402 saying so, nothing verified", async () => {
    const response = await post(target.url, { "X-PAYMENT": "not base64!" });
    expect(response.status).toBe(402);
    expect(((await response.json()) as { error: string }).error).toMatch(
      /^Unreadable payment proof: X-PAYMENT is not base64/,
    );
  });

  it("a paid request for a blocked target is 400, moves nothing, and the proof still works", async () => {
    const from = wallet(4).address;
    const before = await devnet.balanceOf(from);
    const proof = await v1Proof(4);
    const blocked = await post(`${target.url}to-private`, proof);
    expect(blocked.status).toBe(400);
    expect(((await blocked.json()) as { error_type: string }).error_type).toBe("ssrf");
    expect(blocked.headers.get("X-PAYMENT-RESPONSE")).toBeNull();
    expect(await devnet.balanceOf(from)).toBe(before);
    expect((await post(target.url, proof)).status).toBe(200);
    expect(await devnet.balanceOf(from)).toBe(before - PRICE_UNITS);
  });
});

describe("v2 clients are unaffected", () => {
  it("@x402/fetch pays with PAYMENT-SIGNATURE and gets PAYMENT-RESPONSE", async () => {
    const account = devnet.payer(5);
    const before = await devnet.balanceOf(account.address);
    const response = await paidSnapshot(service.url, target.url, account);
    expect(response.status).toBe(200);
    expect(response.headers.get("X-PAYMENT-RESPONSE")).toBeNull();
    const settlement = decodePaymentResponseHeader(response.headers.get("PAYMENT-RESPONSE")!);
    expect(settlement).toMatchObject({ success: true, network: "eip155:84532" });
    expect(await devnet.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });
});

describe("secsnap pay --v1", () => {
  it("pays with X-PAYMENT, prints the report and the on-chain transaction", async () => {
    const { address } = wallet(6);
    const before = await devnet.balanceOf(address);
    let out = "";
    let err = "";
    const sink = (append: (s: string) => void) =>
      ({
        write: (chunk: string) => (append(String(chunk)), true),
      }) as unknown as NodeJS.WriteStream;
    const seen = proofHeadersSeen.length;
    const code = await payCommand.run({
      args: [target.url, "--api", service.url, "--v1"],
      env: { SECSNAP_PRIVATE_KEY: devnet.payerPrivateKeys[6] },
      stdout: sink((s) => (out += s)),
      stderr: sink((s) => (err += s)),
    });
    expect(code).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ requested_url: target.url, reachable: true });
    expect(proofHeadersSeen.slice(seen)).toEqual(["x-payment"]);
    const hash = /settlement transaction: (0x[0-9a-f]{64})/.exec(err)?.[1];
    expect(hash).toBeDefined();
    expect(await transfersIn(hash as Hex)).toHaveLength(1);
    expect(await devnet.balanceOf(address)).toBe(before - PRICE_UNITS);
  });
});
