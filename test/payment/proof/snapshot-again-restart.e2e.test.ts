/**
 * A paid report survives a restart (docs/contract.md §10.4): `secsnap serve` as a real process
 * with its embedded store in DATA_DIR, paid on the devnet by the official x402 client, stopped,
 * started again with the same DATA_DIR, and the payer signed in with the official sign-in-with-x
 * functions, or by the official client path (@x402/fetch with `createSIWxClientHook`), gets the
 * same bytes and pays nothing; SNAPSHOT_RETENTION_DAYS=0 keeps nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import {
  SIGN_IN_WITH_X,
  createSIWxPayload,
  encodeSIWxHeader,
  type SIWxExtension,
} from "@x402/extensions/sign-in-with-x";
import type { PrivateKeyAccount } from "viem";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  paidSnapshot,
  startCountingTarget,
  startPaidDevnet,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { fleetEnv, startInstance, type ServiceInstance } from "../../fixtures/service-instance.js";
import { officialSignInFetch } from "../../fixtures/sign-in-client.js";

let devnet: PaidDevnet;
let target: CountingTarget;
const instances: ServiceInstance[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
}, 120_000);

afterAll(async () => {
  await Promise.all(instances.map((instance) => instance.close()));
  await target?.close();
  await devnet?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `secsnap serve` on the test's devnet with its own DATA_DIR, started. */
async function serve(extra: Record<string, string> = {}): Promise<ServiceInstance> {
  const dataDir = mkdtempSync(join(tmpdir(), "secsnap-snapshots-"));
  dirs.push(dataDir);
  const instance = await startInstance({
    name: "solo",
    env: {
      ...fleetEnv({
        payTo: devnet.payTo,
        facilitatorUrl: devnet.facilitatorUrl,
        rpcUrl: devnet.rpcUrl,
        targetPorts: [Number(new URL(target.url).port)],
        allowCidrs: ["127.0.0.0/8"],
        extra: { LOG_LEVEL: "warn", ...extra },
      }),
      DATA_DIR: dataDir,
    },
  });
  instances.push(instance);
  await instance.start();
  return instance;
}

/** The report again, signed in as `account` with the SDK's helpers. */
async function again(url: string, account: PrivateKeyAccount): Promise<Response> {
  const challenge = await fetch(url);
  expect(challenge.status).toBe(402);
  const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required")!);
  const { info, supportedChains } = required.extensions![SIGN_IN_WITH_X] as SIWxExtension;
  const chain = supportedChains[0]!;
  const payload = await createSIWxPayload({ ...info, ...chain }, account, url);
  return fetch(url, { headers: { "sign-in-with-x": encodeSIWxHeader(payload) } });
}

async function paidId(instance: ServiceInstance, account: PrivateKeyAccount) {
  const paid = await paidSnapshot(instance.url, target.url, account);
  expect(paid.status).toBe(200);
  const body = await paid.text();
  return { body, id: (JSON.parse(body) as { proof: { snapshot_id: string } }).proof.snapshot_id };
}

it("after a restart with the same DATA_DIR the payer still gets the same bytes, free", async () => {
  const instance = await serve();
  const payer = devnet.payer(0);
  const { body, id } = await paidId(instance, payer);
  expect(await instance.kill("SIGTERM")).toBe(0);
  await instance.start();
  const url = `${instance.url}/v1/snapshots/${id}`;
  const answer = await again(url, payer);
  expect(answer.status).toBe(200);
  expect(await answer.text()).toBe(body);
  expect((await again(url, devnet.payer(1))).status).toBe(403);
  // The payer's own x402 client, its exact scheme registered: the same bytes, nothing paid.
  const balances = () => Promise.all([payer.address, devnet.payTo].map(devnet.balanceOf));
  const before = await balances();
  const official = await officialSignInFetch(payer)(url);
  expect(official.status).toBe(200);
  expect(await official.text()).toBe(body);
  expect(await balances()).toEqual(before);
}, 120_000);

it("SNAPSHOT_RETENTION_DAYS=0: nothing kept, 404", async () => {
  const instance = await serve({ SNAPSHOT_RETENTION_DAYS: "0" });
  const { id } = await paidId(instance, devnet.payer(2));
  const answer = await fetch(`${instance.url}/v1/snapshots/${id}`);
  expect(answer.status).toBe(404);
  expect(((await answer.json()) as { code: string }).code).toBe("snapshot_not_found");
}, 120_000);
