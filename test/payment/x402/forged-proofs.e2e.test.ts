/**
 * Forged proofs leave nothing behind (docs/contract.md §7.4): on the real devnet, the service with
 * its records in the embedded store under a DATA_DIR of its own. A forged proof — the official
 * client's shape, naming a victim's address and payment id, signed by someone else — is refused
 * by the facilitator's /verify and binds nothing: a flood of them leaves no binding and no
 * record in the store, and the victim then pays with its own proof and id: its report, one
 * transfer on chain, the same answer again for its id.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import type { PaymentPayload } from "@x402/core/types";
import { generatePaymentId } from "@x402/extensions/payment-identifier";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  authorizationKey,
  authorizationOf,
  paymentIdKey,
} from "../../../src/payment/ledger/authorization.js";
import { EmbeddedPaymentRecordStore } from "../../../src/store/index.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import {
  PRICE_UNITS,
  challengeIn,
  devnetGate,
  postSnapshot,
  postUntilAnswered,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  v2Proof,
  type CountingTarget,
  type GatedService,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";

let devnet: PaidDevnet;
let target: CountingTarget;
let proxy: FacilitatorProxy;
let store: EmbeddedPaymentRecordStore;
let service: GatedService;
const dataDir = mkdtempSync(join(tmpdir(), "secsnap-forged-"));

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
  proxy = await startFacilitatorProxy(devnet.facilitatorUrl);
  store = await EmbeddedPaymentRecordStore.open({ dataDir });
  service = await startGatedService({
    engine: target.engine,
    scope: target.scope,
    gate: { ...devnetGate(devnet, proxy.url), store },
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await store?.close();
  await proxy?.close();
  await target?.close();
  await devnet?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * A proof in the official client's shape whose authorization names `victim` as the payer and
 * `paymentId` as its id, signed by the attacker (payer 6): the signature is not the victim's.
 */
async function forgedProof(victim: Address, paymentId: string): Promise<Record<string, string>> {
  const required = challengeIn(await postSnapshot(service.url, target.url));
  const { payload } = await v2Proof(devnet.payer(6), required, paymentId);
  const exact = payload.payload as { authorization: Record<string, unknown> };
  const forged: PaymentPayload = {
    ...payload,
    payload: { ...exact, authorization: { ...exact.authorization, from: victim } },
  };
  return new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(forged);
}

function decoded(headers: Record<string, string>): PaymentPayload {
  const encoded = headers["PAYMENT-SIGNATURE"] ?? headers["payment-signature"];
  return JSON.parse(Buffer.from(encoded!, "base64").toString("utf8")) as PaymentPayload;
}

describe("forged proofs naming a victim's address and payment id", () => {
  it("bind nothing and leave no record, however many; the victim then pays with its id, once", async () => {
    const victim = devnet.payer(5);
    const victimId = generatePaymentId();
    const before = await devnet.balanceOf(victim.address);
    const verifiesBefore = proxy.verifies.seen;

    // The victim's own id, and a fresh one per forged proof (a flood of new bindings).
    const ids = [victimId, ...Array.from({ length: 24 }, () => generatePaymentId())];
    const forgeries = await Promise.all(ids.map((id) => forgedProof(victim.address, id)));
    for (const headers of forgeries) {
      const refused = await postSnapshot(service.url, target.url, headers);
      expect(refused.status).toBe(402);
      expect(((await refused.json()) as { error: string }).error).toMatch(/Payment rejected/);
    }
    // Each was refused by the facilitator's /verify, so each was a readable, matching proof.
    expect(proxy.verifies.seen - verifiesBefore).toBe(forgeries.length);

    // The store holds nothing for them: no record of their authorizations, no id bound.
    for (const headers of forgeries) {
      const payload = decoded(headers);
      const auth = authorizationOf(payload, payload.accepted)!;
      expect(await store.get(authorizationKey(auth))).toBeUndefined();
    }
    for (const id of ids.slice(1)) {
      const probe = { authorizationKey: `probe-${id}`, fingerprint: "probe" };
      // Binding a free id binds the probe; an id a forgery had bound would answer that binding.
      expect(await store.bindPaymentId(paymentIdKey(victim.address, id), probe, 60_000)).toEqual(
        probe,
      );
    }

    // The victim pays with its real proof and the id the forgeries named.
    const required = challengeIn(await postSnapshot(service.url, target.url));
    const { headers } = await v2Proof(victim, required, victimId);
    const paid = await postSnapshot(service.url, target.url, headers);
    const body = await paid.text();
    expect(paid.status, body).toBe(200);
    const again = await postUntilAnswered(service.url, target.url, headers);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(body);
    expect(before - (await devnet.balanceOf(victim.address))).toBe(PRICE_UNITS);
  });
});
