/**
 * Key rotation (docs/proof.md, "Keys"; docs/contract.md §10.2): a report signed with the key of
 * before still verifies against the served JWKS after SIGNING_KEY changed, for as long as the
 * report is kept, and its key leaves the JWKS and the did:web document with it. Paid on the
 * devnet by the official x402 client; checked with `jose` alone, as a third party would.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  base64url,
  calculateJwkThumbprint,
  createLocalJWKSet,
  exportJWK,
  flattenedVerify,
  generateKeyPair,
  type JSONWebKeySet,
} from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { canonicalize, type PrivateJwk } from "../../../src/payment/index.js";
import { KEY_REFRESH_MS } from "../../../src/payment/snapshots/kept-snapshot.js";
import {
  MemoryPaymentRecordStore,
  RedisPaymentRecordStore,
  createRedisClient,
} from "../../../src/store/index.js";
import {
  devnetGate,
  paidSnapshot,
  startCountingTarget,
  startGatedService,
  startPaidDevnet,
  type CountingTarget,
  type PaidDevnet,
} from "../../fixtures/paid-devnet.js";
import { redisServerBinary, startRedis } from "../../fixtures/redis.js";
import { fleetEnv, startInstance } from "../../fixtures/service-instance.js";

let devnet: PaidDevnet;
let target: CountingTarget;
const opened: { close(): Promise<void> }[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  devnet = await startPaidDevnet();
  target = await startCountingTarget();
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close()));
  await target?.close();
  await devnet?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A new Ed25519 private JWK and its kid. */
async function newKey(): Promise<{ privateJwk: PrivateJwk; kid: string }> {
  const { privateKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const privateJwk = (await exportJWK(privateKey)) as PrivateJwk;
  const { kty, crv, x } = privateJwk;
  return { privateJwk, kid: await calculateJwkThumbprint({ kty, crv, x }) };
}

/** The paid report's body, paid by devnet payer `i`. */
async function paidReport(service: string, i: number): Promise<string> {
  const paid = await paidSnapshot(service, target.url, devnet.payer(i));
  expect(paid.status).toBe(200);
  return paid.text();
}

async function servedJwks(service: string): Promise<JSONWebKeySet> {
  const answer = await fetch(`${service}/.well-known/jwks.json`);
  expect(answer.status).toBe(200);
  return (await answer.json()) as JSONWebKeySet;
}

async function didKids(service: string): Promise<string[]> {
  const did = (await (await fetch(`${service}/.well-known/did.json`)).json()) as {
    verificationMethod: { publicKeyJwk: { kid: string } }[];
  };
  return did.verificationMethod.map((method) => method.publicKeyJwk.kid);
}

/** What a third party does (docs/proof.md): the report's hash, then the JWS against `jwks`. */
async function verify(body: string, jwks: JSONWebKeySet): Promise<string> {
  const { proof, ...report } = JSON.parse(body) as { proof: Record<string, string> };
  const sha256 = createHash("sha256").update(canonicalize(report)).digest("hex");
  if (sha256 !== proof.report_sha256) throw new Error("report_sha256 differs");
  const { jws, ...signed } = proof;
  const [header, , signature] = (jws ?? "").split(".");
  const { protectedHeader } = await flattenedVerify(
    { protected: header!, payload: base64url.encode(canonicalize(signed)), signature: signature! },
    createLocalJWKSet(jwks),
    { algorithms: ["EdDSA"] },
  );
  return protectedHeader?.kid ?? "";
}

/** Where `secsnap serve` keeps its records: a DATA_DIR, or a Redis started for the test. */
async function storeEnv(kind: "embedded" | "redis"): Promise<Record<string, string>> {
  if (kind === "redis") {
    const redis = await startRedis();
    opened.push(redis);
    return { REDIS_URL: redis.url };
  }
  const dataDir = mkdtempSync(join(tmpdir(), "secsnap-rotation-"));
  dirs.push(dataDir);
  return { DATA_DIR: dataDir };
}

/**
 * `secsnap serve` signing with key A pays a report, then restarted on the same store with key B:
 * the JWKS and did.json list B then A, and the report signed by A verifies against them.
 */
async function rotation(kind: "embedded" | "redis", payers: [number, number]): Promise<void> {
  const [a, b] = await Promise.all([newKey(), newKey()]);
  const kept = await storeEnv(kind);
  const serve = async (key: PrivateJwk) => {
    const instance = await startInstance({
      name: "solo",
      env: {
        ...fleetEnv({
          payTo: devnet.payTo,
          facilitatorUrl: devnet.facilitatorUrl,
          rpcUrl: devnet.rpcUrl,
          targetPorts: [Number(new URL(target.url).port)],
          allowCidrs: ["127.0.0.0/8"],
          extra: { LOG_LEVEL: "warn" },
        }),
        ...kept,
        SIGNING_KEY: JSON.stringify(key),
      },
    });
    opened.push(instance);
    await instance.start();
    return instance;
  };
  const before = await serve(a.privateJwk);
  const report = await paidReport(before.url, payers[0]);
  expect((await servedJwks(before.url)).keys.map((key) => key.kid)).toEqual([a.kid]);
  expect(await before.kill("SIGTERM")).toBe(0);

  const after = await serve(b.privateJwk);
  const jwks = await servedJwks(after.url);
  expect(jwks.keys.map((key) => key.kid)).toEqual([b.kid, a.kid]);
  expect(await didKids(after.url)).toEqual([b.kid, a.kid]);
  expect(await verify(report, jwks)).toBe(a.kid);
  const fresh = await paidReport(after.url, payers[1]);
  expect(await verify(fresh, jwks)).toBe(b.kid);
}

it("secsnap serve on DATA_DIR restarted with a new SIGNING_KEY lists both keys", async () => {
  await rotation("embedded", [0, 1]);
}, 180_000);

it.skipIf(!redisServerBinary)(
  "secsnap serve on Redis restarted with a new SIGNING_KEY lists both keys",
  async () => {
    await rotation("redis", [3, 4]);
  },
  180_000,
);

it("the old key is listed while a report it signed is kept, and gone after", async () => {
  let now = Date.now();
  const store = new MemoryPaymentRecordStore({ now: () => now });
  const retentionMs = 60_000;
  const [a, b] = await Promise.all([newKey(), newKey()]);
  const start = async (key: { privateJwk: PrivateJwk }) => {
    const service = await startGatedService({
      engine: target.engine,
      scope: target.scope,
      gate: { ...devnetGate(devnet), store, signingKey: key, snapshotRetentionMs: retentionMs },
    });
    opened.push(service);
    return service;
  };
  const before = await start(a);
  const report = await paidReport(before.url, 2);
  await before.close();

  const after = await start(b);
  const jwks = await servedJwks(after.url);
  expect(jwks.keys.map((key) => key.kid)).toEqual([b.kid, a.kid]);
  expect(await verify(report, jwks)).toBe(a.kid);

  // Remembered for the retention and KEY_REFRESH_MS more (one store write per refresh).
  now += retentionMs + KEY_REFRESH_MS - 1;
  expect((await servedJwks(after.url)).keys.map((key) => key.kid)).toEqual([b.kid, a.kid]);
  now += 2;
  const expired = await servedJwks(after.url);
  expect(expired.keys.map((key) => key.kid)).toEqual([b.kid]);
  expect(await didKids(after.url)).toEqual([b.kid]);
  await expect(verify(report, expired)).rejects.toThrow();
}, 180_000);

it.skipIf(!redisServerBinary)(
  "a store that cannot be read: the key in use is listed alone, never a 500",
  async () => {
    const redis = await startRedis();
    opened.push(redis);
    const client = createRedisClient(redis.url, () => {});
    const store = new RedisPaymentRecordStore(client, { ownsClient: true });
    opened.push(store);
    const key = await newKey();
    const service = await startGatedService({
      engine: target.engine,
      scope: target.scope,
      gate: { ...devnetGate(devnet), store, signingKey: key },
    });
    opened.push(service);
    await redis.stop();
    expect((await servedJwks(service.url)).keys.map((listed) => listed.kid)).toEqual([key.kid]);
    expect(await didKids(service.url)).toEqual([key.kid]);
  },
  60_000,
);
