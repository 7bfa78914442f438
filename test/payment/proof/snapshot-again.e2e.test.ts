/**
 * GET /v1/snapshots/{snapshot_id} (docs/contract.md §10.4) over the real devnet: a report paid
 * with the official x402 client (v2, and v1) is served again, the same bytes, to its payer
 * signed in with the official sign-in-with-x helpers (@x402/extensions), and to nobody else: not
 * another wallet, not a replayed or expired message, not a message for another origin, not a nonce
 * the service never issued. The money moved once, read on chain. The official client path for a
 * route that only asks to sign in (@x402/fetch with `createSIWxClientHook`, the payer's scheme
 * registered) gets the report and pays nothing; `wrapFetchWithSIWx` does not answer this 402.
 */
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { PaymentRequiredV1Schema, PaymentRequirementsV1Schema } from "@x402/core/schemas";
import { ExactEvmSchemeV1 } from "@x402/evm/v1";
import {
  SIGN_IN_WITH_X,
  createSIWxPayload,
  encodeSIWxHeader,
  wrapFetchWithSIWx,
  type CompleteSIWxInfo,
  type SIWxExtension,
} from "@x402/extensions/sign-in-with-x";
import type { Address, PrivateKeyAccount } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";
import {
  PRICE_UNITS,
  devnetGate,
  paidSnapshot,
  postSnapshot,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { officialSignInFetch, requestRecorder } from "../../fixtures/sign-in-client.js";

let devnet: PaidDevnet;
let target: CountingTarget;
let base: string;
const opened: { close(): Promise<void> }[] = [];

async function startService(gate: Partial<ReturnType<typeof devnetGate>> = {}): Promise<string> {
  const service = await startGatedService({
    engine: target.engine,
    scope: target.scope,
    gate: { ...devnetGate(devnet), store: new MemoryPaymentRecordStore(), ...gate },
  });
  opened.push(service);
  return service.url;
}

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
  base = await startService();
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close()));
  await target?.close();
  await devnet?.close();
});

const snapshotUrl = (service: string, id: string) => `${service}/v1/snapshots/${id}`;

/** The sign-in challenge of a 402: the extension, chain and all, as the client completes it. */
async function challengeOf(response: Response): Promise<CompleteSIWxInfo> {
  expect(response.status).toBe(402);
  const required = decodePaymentRequiredHeader(response.headers.get("payment-required")!);
  expect(required.accepts).toEqual([]);
  expect(await response.json()).toEqual(required);
  const extension = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension;
  const [chain] = extension.supportedChains;
  expect(chain).toEqual({ chainId: devnet.network, type: "eip191" });
  return { ...extension.info, chainId: chain!.chainId, type: chain!.type };
}

/** A SIGN-IN-WITH-X header for `url`'s challenge, signed by `account` (the SDK's own helpers). */
async function signIn(
  url: string,
  account: PrivateKeyAccount,
  change: (info: CompleteSIWxInfo) => CompleteSIWxInfo = (info) => info,
  boundTo = url,
): Promise<string> {
  const info = change(await challengeOf(await fetch(url)));
  return encodeSIWxHeader(await createSIWxPayload(info, account, boundTo));
}

const signedGet = (url: string, header: string) =>
  fetch(url, { headers: { "sign-in-with-x": header } });

async function expectRefused(response: Response, status: number, code: string): Promise<void> {
  const body = (await response.json()) as { code: string; error: string };
  expect({ status: response.status, code: body.code }).toEqual({ status, code });
  expect(body.error).toEqual(expect.any(String));
}

/** A report paid by the official client as `account`: its bytes and its snapshot id. */
async function paidReport(service: string, account: PrivateKeyAccount) {
  const paid = await paidSnapshot(service, target.url, account);
  expect(paid.status).toBe(200);
  const body = await paid.text();
  return { body, id: (JSON.parse(body) as { proof: { snapshot_id: string } }).proof.snapshot_id };
}

describe("GET /v1/snapshots/{snapshot_id}", () => {
  it("the payer signed in gets the same bytes as its paid 200, free; paid once", async () => {
    const payer = devnet.payer(0);
    const before = await devnet.balanceOf(payer.address);
    const { body, id } = await paidReport(base, payer);
    const url = snapshotUrl(base, id);
    const again = await signedGet(url, await signIn(url, payer));
    expect(again.status).toBe(200);
    expect(again.headers.get("content-type")).toBe("application/json");
    expect(again.headers.get("cache-control")).toBe("private, no-store");
    expect(await again.text()).toBe(body);
    // And again, with a new sign-in: as often as it likes, never charged.
    const twice = await signedGet(url, await signIn(url, payer));
    expect(await twice.text()).toBe(body);
    expect(before - (await devnet.balanceOf(payer.address))).toBe(PRICE_UNITS);
  });

  it("another wallet: 403 not_payer; a replayed message: 401; each nonce once", async () => {
    const payer = devnet.payer(1);
    const { id } = await paidReport(base, payer);
    const url = snapshotUrl(base, id);
    await expectRefused(await signedGet(url, await signIn(url, devnet.payer(2))), 403, "not_payer");
    const header = await signIn(url, payer);
    expect((await signedGet(url, header)).status).toBe(200);
    await expectRefused(await signedGet(url, header), 401, "sign_in_refused");
  });

  it("a message for another origin, expired, or with a nonce not issued here: 401", async () => {
    const payer = devnet.payer(3);
    const { id } = await paidReport(base, payer);
    const url = snapshotUrl(base, id);
    const elsewhere = "https://evil.example/v1/snapshots/" + id;
    const foreign = await signIn(
      url,
      payer,
      (info) => ({ ...info, domain: "evil.example", uri: elsewhere }),
      elsewhere,
    );
    await expectRefused(await signedGet(url, foreign), 401, "sign_in_refused");
    const past = (ms: number) => new Date(Date.now() - ms).toISOString();
    const expired = await signIn(url, payer, (info) => ({
      ...info,
      issuedAt: past(6 * 60_000),
      expirationTime: past(60_000),
    }));
    await expectRefused(await signedGet(url, expired), 401, "sign_in_refused");
    const forged = await signIn(url, payer, (info) => ({ ...info, nonce: "f".repeat(32) }));
    await expectRefused(await signedGet(url, forged), 401, "sign_in_refused");
    // Readable, but its address and signature are no hex: refused, never a 500.
    const garbled = JSON.parse(atob(await signIn(url, payer))) as Record<string, string>;
    const nonsense = btoa(JSON.stringify({ ...garbled, address: "0xZZ", signature: "0xnope" }));
    await expectRefused(await signedGet(url, nonsense), 401, "sign_in_refused");
    // None of them was a sign-in: the payer still gets its report.
    expect((await signedGet(url, await signIn(url, payer))).status).toBe(200);
  });

  it("an unknown id: 404 snapshot_not_found, signed in or not; a malformed header: 400", async () => {
    const unknown = snapshotUrl(base, "a".repeat(32));
    await expectRefused(await fetch(unknown), 404, "snapshot_not_found");
    await expectRefused(await fetch(snapshotUrl(base, "not-an-id")), 404, "snapshot_not_found");
    const { id } = await paidReport(base, devnet.payer(4));
    const url = snapshotUrl(base, id);
    await expectRefused(await signedGet(url, "%%%"), 400, "sign_in_malformed");
    await expectRefused(await signedGet(url, btoa("{}")), 400, "sign_in_malformed");
    const other = await fetch(url, { method: "POST" });
    expect(other.status).toBe(405);
  });

  it("a v1 payer gets its report again too", async () => {
    const payer = devnet.payer(5);
    const challenge = PaymentRequiredV1Schema.parse(
      await (await postSnapshot(base, target.url)).json(),
    );
    const requirements = PaymentRequirementsV1Schema.parse(challenge.accepts[0]);
    const payload = await new ExactEvmSchemeV1(payer).createPaymentPayload(
      1,
      requirements as never,
    );
    const headers = new x402HTTPClient(new x402Client()).encodePaymentSignatureHeader(
      payload as never,
    );
    const paid = await postSnapshot(base, target.url, headers);
    expect(paid.status).toBe(200);
    const body = await paid.text();
    const { snapshot_id: id } = (JSON.parse(body) as { proof: { snapshot_id: string } }).proof;
    const url = snapshotUrl(base, id);
    const again = await signedGet(url, await signIn(url, payer));
    expect(await again.text()).toBe(body);
  });

  it("SNAPSHOT_RETENTION_DAYS 0: nothing kept, 404", async () => {
    const service = await startService({ snapshotRetentionMs: 0 });
    const { id } = await paidReport(service, devnet.payer(6));
    await expectRefused(await fetch(snapshotUrl(service, id)), 404, "snapshot_not_found");
  });
});

/** The USDC balances of `owners`, read on the devnet chain. */
const balancesOf = (...owners: Address[]) => Promise.all(owners.map((o) => devnet.balanceOf(o)));

/** Of each request sent: did it sign in, did it pay. */
const signedAndPaid = (sent: Headers[]) =>
  sent.map((headers) => ({
    signedIn: headers.has(SIGN_IN_WITH_X),
    paid: headers.has("payment-signature") || headers.has("x-payment"),
  }));

describe("the official client path: @x402/fetch with createSIWxClientHook", () => {
  it("the payer gets its paid 200's bytes; its client could pay, and paid nothing", async () => {
    const payer = devnet.payer(7);
    const { body, id } = await paidReport(base, payer);
    const before = await balancesOf(payer.address, devnet.payTo);
    const recorder = requestRecorder();
    const again = await officialSignInFetch(payer, recorder)(snapshotUrl(base, id));
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(body);
    expect(signedAndPaid(recorder.sent)).toEqual([
      { signedIn: false, paid: false },
      { signedIn: true, paid: false },
    ]);
    expect(await balancesOf(payer.address, devnet.payTo)).toEqual(before);
  });

  it("another wallet's client: 403 not_payer, no report, nothing moves", async () => {
    const payer = devnet.payer(0);
    const other = devnet.payer(2);
    const { id } = await paidReport(base, payer);
    const owners = [payer.address, other.address, devnet.payTo];
    const before = await balancesOf(...owners);
    const recorder = requestRecorder();
    const answer = await officialSignInFetch(other, recorder)(snapshotUrl(base, id));
    await expectRefused(answer, 403, "not_payer");
    expect(signedAndPaid(recorder.sent)).toEqual([
      { signedIn: false, paid: false },
      { signedIn: true, paid: false },
    ]);
    expect(await balancesOf(...owners)).toEqual(before);
  });

  it("the header the hook signed, replayed: 401 sign_in_refused", async () => {
    const payer = devnet.payer(1);
    const { id } = await paidReport(base, payer);
    const url = snapshotUrl(base, id);
    const recorder = requestRecorder();
    expect((await officialSignInFetch(payer, recorder)(url)).status).toBe(200);
    const header = recorder.sent[1]?.get(SIGN_IN_WITH_X);
    expect(header).toEqual(expect.any(String));
    await expectRefused(await signedGet(url, header!), 401, "sign_in_refused");
  });

  it("wrapFetchWithSIWx returns this 402 as it is: nothing signed, nothing paid", async () => {
    const payer = devnet.payer(3);
    const { id } = await paidReport(base, payer);
    const before = await balancesOf(payer.address, devnet.payTo);
    const recorder = requestRecorder();
    // It takes its chain from accepts[0], which this route leaves empty.
    const answer = await wrapFetchWithSIWx(recorder.fetch, payer)(snapshotUrl(base, id));
    await challengeOf(answer);
    expect(signedAndPaid(recorder.sent)).toEqual([{ signedIn: false, paid: false }]);
    expect(await balancesOf(payer.address, devnet.payTo)).toEqual(before);
  });
});
