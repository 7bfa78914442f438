/**
 * Every paid report is signed (docs/contract.md §10, docs/proof.md), end to end over the real
 * devnet: paid over HTTP with x402 v2 and v1 and over MCP, each 200 carries a `proof` that a
 * third party checks with `jose` alone against the JWKS the service serves, naming the transaction
 * that paid on chain; any byte changed and it fails. A replay of the same payment id gets the
 * same bytes; the demo and a 400 carry no proof.
 */
import { createHash } from "node:crypto";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { PaymentRequiredV1Schema, PaymentRequirementsV1Schema } from "@x402/core/schemas";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import { base64url, createLocalJWKSet, flattenedVerify, type JSONWebKeySet } from "jose";
import { decodeEventLog, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEV_USDC_ABI } from "../../../src/devnet/constants.js";
import { canonicalize } from "../../../src/payment/index.js";
import { authorizationKey, authorizationOf } from "../../../src/payment/ledger/authorization.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";
import { startFacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import {
  PRICE_UNITS,
  challengeIn,
  devnetGate,
  loopbackScope,
  postSnapshot,
  postUntilAnswered,
  startGatedService,
  v2Proof,
} from "../../fixtures/paid-devnet.js";
import { startPaidBed, type PaidBed } from "../../fixtures/paid-service.js";
import {
  callSnapshot,
  challengeOf,
  connectedMcpClient,
  signedProof,
  textOf,
} from "../../fixtures/mcp-client.js";

let bed: PaidBed;
let jwks: JSONWebKeySet;

beforeAll(async () => {
  bed = await startPaidBed();
  const served = await fetch(`${bed.service.url}/.well-known/jwks.json`);
  expect(served.status).toBe(200);
  jwks = (await served.json()) as JSONWebKeySet;
}, 120_000);

afterAll(async () => {
  await bed?.close();
});

/**
 * What a third party does with the report and the JWKS (docs/proof.md): the report's hash, then
 * the detached JWS over the proof. Throws when either fails.
 */
async function verify(body: string): Promise<Record<string, string>> {
  const { proof, ...report } = JSON.parse(body) as { proof: Record<string, string> };
  const sha256 = createHash("sha256").update(canonicalize(report)).digest("hex");
  if (sha256 !== proof.report_sha256) throw new Error("report_sha256 differs");
  const { jws, ...signed } = proof;
  const [header, payload, signature] = (jws ?? "").split(".");
  if (payload !== "") throw new Error("payload not detached");
  const { protectedHeader } = await flattenedVerify(
    { protected: header!, payload: base64url.encode(canonicalize(signed)), signature: signature! },
    createLocalJWKSet(jwks),
    { algorithms: ["EdDSA"] },
  );
  if (protectedHeader?.kid !== proof.kid) throw new Error("kid differs");
  // Base64url with spare bits set decodes to the same signature: not the bytes served.
  if (base64url.encode(base64url.decode(signature!)) !== signature)
    throw new Error("not canonical");
  return proof;
}

/** The proof checked whole: verified, its fields as the contract says, paid on chain. */
async function expectSignedAndPaid(body: string, payer: string): Promise<Record<string, string>> {
  const proof = await verify(body);
  expect(Object.keys(proof)).toEqual([
    "snapshot_id",
    "issued_at",
    "network",
    "payer",
    "transaction",
    "report_sha256",
    "kid",
    "jws",
  ]);
  expect(proof.snapshot_id).toMatch(/^[0-9a-f]{32}$/);
  expect(Buffer.from(proof.snapshot_id!, "base64url").length).toBeGreaterThanOrEqual(16);
  expect(new Date(proof.issued_at!).toISOString()).toBe(proof.issued_at);
  expect(proof.network).toBe(bed.devnet.network);
  expect(proof.payer).toBe(payer.toLowerCase());
  expect(jwks.keys.map((key) => key.kid)).toContain(proof.kid);
  // The transaction named is the one that paid: one transfer of the price, payer to payee.
  const receipt = await bed.chain.getTransactionReceipt({ hash: proof.transaction as Hex });
  expect(receipt.status).toBe("success");
  const transfers = receipt.logs
    .filter((log) => log.address.toLowerCase() === bed.devnet.usdcAddress.toLowerCase())
    .map((log) => decodeEventLog({ abi: DEV_USDC_ABI, ...log }))
    .filter((event) => event.eventName === "Transfer");
  expect(transfers.map((event) => event.args)).toEqual([
    { from: payer, to: bed.devnet.payTo, value: PRICE_UNITS },
  ]);
  return proof;
}

/** Each byte of `body` changed in turn: not one of them still verifies. */
async function expectEveryByteCounts(body: string): Promise<void> {
  const stillVerified: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    const other = String.fromCharCode(c === 0x7e ? 0x21 : c + 1);
    const changed = body.slice(0, i) + other + body.slice(i + 1);
    if (
      await verify(changed).then(
        () => true,
        () => false,
      )
    )
      stillVerified.push(i);
  }
  expect(stillVerified.map((i) => `${i}: ${body.slice(i - 10, i + 10)}`)).toEqual([]);
}

describe("a paid report's proof", () => {
  it("x402 v2 over HTTP: verifies against the served JWKS, names the paying transaction", async () => {
    const url = bed.target.url;
    const payer = bed.payer(1);
    const { headers } = await v2Proof(payer, challengeIn(await postSnapshot(bed.service.url, url)));
    const paid = await postSnapshot(bed.service.url, url, headers);
    expect(paid.status).toBe(200);
    const body = await paid.text();
    await expectSignedAndPaid(body, payer.address);
    await expectEveryByteCounts(body);
  });

  it("x402 v1 over HTTP: the same proof", async () => {
    const url = bed.target.url;
    const payer = bed.payer(2);
    const challenge = PaymentRequiredV1Schema.parse(
      await (await postSnapshot(bed.service.url, url)).json(),
    );
    const requirements = PaymentRequirementsV1Schema.parse(challenge.accepts[0]);
    const payload = await new ExactEvmSchemeV1(payer).createPaymentPayload(
      1,
      requirements as never,
    );
    const headers = new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(
      payload as never,
    );
    expect(Object.keys(headers)).toEqual(["X-PAYMENT"]);
    const paid = await postSnapshot(bed.service.url, url, headers);
    expect(paid.status).toBe(200);
    await expectSignedAndPaid(await paid.text(), payer.address);
  });

  it("over MCP: the tool's result carries it, in its text and its structured content", async () => {
    const payer = bed.payer(3);
    const { client } = await connectedMcpClient(bed.service.url);
    try {
      const required = challengeOf(await callSnapshot(client, bed.target.url));
      const result = await callSnapshot(client, bed.target.url, {
        "x402/payment": await signedProof(required, payer),
      });
      expect(result.isError).toBeFalsy();
      const proof = await expectSignedAndPaid(textOf(result), payer.address);
      expect((result.structuredContent as { proof: unknown }).proof).toEqual(proof);
    } finally {
      await client.close();
    }
  });

  it("a replay with the same payment id gets the same bytes, paid once", async () => {
    const url = bed.target.url;
    const payer = bed.payer(4);
    const required = challengeIn(await postSnapshot(bed.service.url, url));
    const { headers } = await v2Proof(payer, required, "signed-report-replay-0001");
    const first = await postSnapshot(bed.service.url, url, headers);
    expect(first.status).toBe(200);
    const firstBody = await first.text();
    const replay = await postSnapshot(bed.service.url, url, headers);
    expect(replay.status).toBe(200);
    expect(await replay.text()).toBe(firstBody);
    await expectSignedAndPaid(firstBody, payer.address);
  });

  it("the demo and a 400 carry none", async () => {
    const demo = (await (await fetch(`${bed.service.url}/demo/snapshot`)).json()) as object;
    expect(demo).not.toHaveProperty("proof");
    // A paid request whose site cannot be reached: the snapshot's 400, never charged.
    const payer = bed.payer(5);
    const before = await bed.balanceOf(payer.address);
    const unreachable = `http://127.0.0.2:${bed.target.port}/`;
    const required = challengeIn(await postSnapshot(bed.service.url, unreachable));
    const { headers } = await v2Proof(payer, required);
    const answer = await postSnapshot(bed.service.url, unreachable, headers);
    expect(answer.status).toBe(400);
    const refusal = await answer.json();
    expect(refusal).toMatchObject({ error_type: "unreachable" });
    expect(refusal).not.toHaveProperty("proof");
    expect(await bed.balanceOf(payer.address)).toBe(before);
  });
});

describe("GET /.well-known/did.json", () => {
  it("is the did:web document of the loopback host asked, with the JWKS's keys", async () => {
    const { port } = new URL(bed.service.url);
    const answer = await fetch(`${bed.service.url}/.well-known/did.json`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("cache-control")).toMatch(/max-age=\d+/);
    const did = `did:web:127.0.0.1%3A${port}`;
    const key = jwks.keys[0]!;
    expect(await answer.json()).toEqual({
      "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
      id: did,
      verificationMethod: [
        { id: `${did}#${key.kid}`, type: "JsonWebKey2020", controller: did, publicKeyJwk: key },
      ],
      assertionMethod: [`${did}#${key.kid}`],
    });
  });

  it("the JWKS holds public keys only", () => {
    expect(jwks.keys.length).toBe(1);
    for (const key of jwks.keys) {
      expect(key).not.toHaveProperty("d");
      expect(key).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    }
  });
});

describe("a report whose settlement answer was lost", () => {
  it("is signed when the reconciler learns the payment from the chain, and served so to the retry", async () => {
    const proxy = await startFacilitatorProxy(bed.devnet.facilitatorUrl);
    const store = new MemoryPaymentRecordStore();
    const service = await startGatedService({
      engine: bed.target.engine,
      scope: loopbackScope([bed.target.port]),
      gate: {
        ...devnetGate(bed.devnet, proxy.url),
        store,
        rpcUrls: { [bed.devnet.network]: bed.devnet.rpcUrl },
        reconcileIntervalMs: 100,
      },
    });
    try {
      const payer = bed.payer(7);
      const required = challengeIn(await postSnapshot(service.url, bed.target.url));
      const { headers, payload } = await v2Proof(payer, required);
      proxy.failNextSettle("settle-then-drop");
      expect((await postSnapshot(service.url, bed.target.url, headers)).status).toBe(503);
      // The reconciler (every 100 ms) finds the transfer on chain, before any retry.
      const key = authorizationKey(authorizationOf(payload, payload.accepted)!);
      await expect
        .poll(async () => (await store.get(key))?.state, { timeout: 10_000 })
        .toBe("settled");
      const kept = (await store.get(key))?.report?.body ?? "";
      expect(JSON.parse(kept)).toHaveProperty("proof");
      const retry = await postUntilAnswered(service.url, bed.target.url, headers);
      expect(retry.status).toBe(200);
      const body = await retry.text();
      expect(body).toBe(kept);
      const served = (await (
        await fetch(`${service.url}/.well-known/jwks.json`)
      ).json()) as JSONWebKeySet;
      jwks = { keys: [...jwks.keys, ...served.keys] };
      await expectSignedAndPaid(body, payer.address);
    } finally {
      await service.close();
      await proxy.close();
    }
  });
});
