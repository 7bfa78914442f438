/**
 * CDP facilitator auth: JWTs checked with jose against public keys generated here, and a real
 * local HTTP server standing in for CDP's facilitator that answers only when the bearer token
 * verifies for the exact request it is sent with.
 */
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { Hono } from "hono";
import { decodeProtectedHeader, jwtVerify } from "jose";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterEach, describe, expect, it } from "vitest";
import {
  CDP_FACILITATOR_URL,
  loadPaymentConfig,
  parseCdpApiKeySecret,
} from "../../../src/config.js";
import { createCdpAuthHeaders } from "../../../src/payment/facilitator/cdp-auth.js";
import { createPaymentGate } from "../../../src/payment/gate.js";
import { paymentGateOptionsFromConfig } from "../../../src/payment/gate-options.js";
import { exactKinds } from "../../fixtures/supported-facilitator.js";
import { paidRouteHandler } from "../../fixtures/paid-route-handler.js";
import { MemoryPaymentRecordStore } from "../../../src/store/index.js";

const API_KEY_ID = "organizations/org-1/apiKeys/key-1";
const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const BASE_SEPOLIA = "eip155:84532";

interface TestKey {
  alg: "ES256" | "EdDSA";
  secret: string;
  publicKey: KeyObject;
}

/** CDP's Ed25519 secret format: base64 of the 32-byte seed followed by the 32-byte public key. */
function ed25519Key(): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  const secret = Buffer.concat([
    Buffer.from(jwk.d!, "base64url"),
    Buffer.from(jwk.x!, "base64url"),
  ]).toString("base64");
  return { alg: "EdDSA", secret, publicKey };
}

/** CDP's EC format: a P-256 PEM, SEC1 ("EC PRIVATE KEY") as CDP hands it out, or PKCS#8. */
function ecKey(type: "sec1" | "pkcs8" = "sec1"): TestKey {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return { alg: "ES256", secret: privateKey.export({ format: "pem", type }) as string, publicKey };
}

type Endpoint = "verify" | "settle" | "supported";

async function headersFor(key: TestKey, facilitatorUrl?: string) {
  const create = createCdpAuthHeaders({
    apiKeyId: API_KEY_ID,
    apiKeySecret: key.secret,
    ...(facilitatorUrl && { facilitatorUrl }),
  });
  return create();
}

function bearer(headers: Record<string, string> | undefined): string {
  const match = /^Bearer (\S+)$/.exec(headers?.Authorization ?? "");
  expect(match).not.toBeNull();
  return match![1]!;
}

describe.each([
  ["Ed25519", ed25519Key],
  ["EC P-256 (SEC1)", () => ecKey("sec1")],
  ["EC P-256 (PKCS#8)", () => ecKey("pkcs8")],
])("createCdpAuthHeaders with an %s key", (_name, makeKey) => {
  it("signs one token per endpoint, bound to its method and path, verifiable with the public key", async () => {
    const key = makeKey();
    const before = Math.floor(Date.now() / 1000);
    const headers = await headersFor(key, "https://facilitator.example:8443/platform/v2/x402/");
    const after = Math.floor(Date.now() / 1000);
    const expected: Record<Endpoint, string> = {
      verify: "POST facilitator.example:8443/platform/v2/x402/verify",
      settle: "POST facilitator.example:8443/platform/v2/x402/settle",
      supported: "GET facilitator.example:8443/platform/v2/x402/supported",
    };
    for (const endpoint of ["verify", "settle", "supported"] as const) {
      const token = bearer(headers[endpoint]);
      const { payload, protectedHeader } = await jwtVerify(token, key.publicKey, {
        algorithms: [key.alg],
        issuer: "cdp",
        subject: API_KEY_ID,
      });
      expect(protectedHeader).toMatchObject({ alg: key.alg, kid: API_KEY_ID, typ: "JWT" });
      expect(protectedHeader.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(payload.uris).toEqual([expected[endpoint]]);
      // CDP's generateJwt sets no audience for REST calls; neither do we.
      expect(payload.aud).toBeUndefined();
      expect(payload.nbf).toBeGreaterThanOrEqual(before);
      expect(payload.nbf).toBeLessThanOrEqual(after);
      expect(payload.iat).toBe(payload.nbf);
      expect(payload.exp).toBe(payload.nbf! + 120);
      expect(headers[endpoint]?.["Correlation-Context"]).toMatch(/(^|,)source=secsnap(,|$)/);
    }
  });

  it("makes a fresh token on every call, and no other key verifies it", async () => {
    const key = makeKey();
    const create = createCdpAuthHeaders({ apiKeyId: API_KEY_ID, apiKeySecret: key.secret });
    const first = bearer((await create()).verify);
    const second = bearer((await create()).verify);
    expect(second).not.toBe(first);
    expect(decodeProtectedHeader(second).nonce).not.toBe(decodeProtectedHeader(first).nonce);
    const stranger = makeKey();
    await expect(jwtVerify(first, stranger.publicKey)).rejects.toThrow();
  });
});

describe("createCdpAuthHeaders defaults", () => {
  it("binds tokens to CDP's facilitator when no URL is given", async () => {
    const key = ed25519Key();
    const headers = await headersFor(key);
    const { payload } = await jwtVerify(bearer(headers.settle), key.publicKey);
    const url = new URL(CDP_FACILITATOR_URL);
    expect(payload.uris).toEqual([`POST ${url.host}${url.pathname}/settle`]);
    expect(payload.uris).toEqual(["POST api.cdp.coinbase.com/platform/v2/x402/settle"]);
  });

  it("reads a PEM whose newlines arrived as literal \\n (one-line env var)", async () => {
    const key = ecKey();
    const oneLine = key.secret.trim().replace(/\n/g, "\\n");
    expect(oneLine).not.toContain("\n");
    const headers = await headersFor({ ...key, secret: oneLine });
    await expect(jwtVerify(bearer(headers.verify), key.publicKey)).resolves.toBeTruthy();
  });
});

describe("parseCdpApiKeySecret", () => {
  const ed = ed25519Key();
  const edBytes = Buffer.from(ed.secret, "base64");
  const otherPublic = Buffer.from(ed25519Key().secret, "base64").subarray(32);
  const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({
    format: "pem",
    type: "pkcs8",
  }) as string;
  const p384 = generateKeyPairSync("ec", { namedCurve: "secp384r1" }).privateKey.export({
    format: "pem",
    type: "pkcs8",
  }) as string;

  it("tells the two formats apart", () => {
    expect(parseCdpApiKeySecret(ed.secret).alg).toBe("EdDSA");
    expect(parseCdpApiKeySecret(ecKey().secret).alg).toBe("ES256");
  });

  it.each([
    ["a random word", "not-a-key"],
    ["32 bytes of base64", edBytes.subarray(0, 32).toString("base64")],
    ["base64 with junk in it", `${ed.secret.slice(0, 20)}!!${ed.secret.slice(20)}`],
    [
      "a seed with someone else's public half",
      Buffer.concat([edBytes.subarray(0, 32), otherPublic]).toString("base64"),
    ],
    ["an RSA PEM", rsa],
    ["a P-384 PEM", p384],
    ["a broken PEM", "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"],
  ])("rejects %s without echoing it", (_name, secret) => {
    let message = "";
    try {
      parseCdpApiKeySecret(secret);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).not.toBe("");
    expect(message).not.toContain(secret.slice(0, 16));
  });
});

// ---- end to end: the gate, configured from the environment, against a CDP stand-in ----

const FACILITATOR_PATH = "/platform/v2/x402";

interface CdpStandIn {
  url: string;
  /** Tokens that verified, by endpoint. */
  accepted: Record<Endpoint, number>;
  rejected: number;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    req.on("data", () => {});
    req.on("end", () => resolve());
    req.on("error", reject);
  });
}

/** Answers like a facilitator, but only to a bearer JWT from `publicKey` made for this request. */
async function startCdpStandIn(publicKey: KeyObject, alg: string): Promise<CdpStandIn> {
  const state: CdpStandIn = {
    url: "",
    accepted: { verify: 0, settle: 0, supported: 0 },
    rejected: 0,
    close: async () => {},
  };
  const server: Server = createServer(async (req, res) => {
    await readBody(req);
    const send = (status: number, json: unknown) =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(json));
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const endpoint = path.slice(FACILITATOR_PATH.length + 1) as Endpoint;
    if (!path.startsWith(`${FACILITATOR_PATH}/`) || !(endpoint in state.accepted)) {
      return send(404, {});
    }
    try {
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
      const { payload } = await jwtVerify(token, publicKey, {
        algorithms: [alg],
        issuer: "cdp",
        subject: API_KEY_ID,
      });
      const expected = `${req.method} ${req.headers.host}${path}`;
      if (JSON.stringify(payload.uris) !== JSON.stringify([expected])) throw new Error("uris");
    } catch {
      state.rejected++;
      return send(401, { errorMessage: "unauthorized" });
    }
    state.accepted[endpoint]++;
    if (endpoint === "supported") {
      return send(200, {
        kinds: exactKinds([BASE_SEPOLIA]),
        extensions: [],
        signers: {},
      });
    }
    if (endpoint === "verify") return send(200, { isValid: true, payer: "0xpayer" });
    return send(200, {
      success: true,
      transaction: "0x" + "ab".repeat(32),
      network: BASE_SEPOLIA,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${FACILITATOR_PATH}`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

/**
 * The paid route as src/cli/serve/command.ts builds it: gate options from the environment, then the
 * handler.
 */
async function startService(env: Record<string, string>) {
  const gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    ...paymentGateOptionsFromConfig(loadPaymentConfig(env)),
    log: () => {},
  });
  const app = new Hono();
  app.post(
    "/v1/snapshot",
    paidRouteHandler(gate.route, () => Promise.resolve({ status: 200, body: { ok: true } })),
  );
  const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/snapshot`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const post = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url: "https://example.com" }),
  });

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close()));
});

describe("the gate with CDP_API_KEY_ID/CDP_API_KEY_SECRET", () => {
  it.each([
    ["Ed25519", ed25519Key],
    ["EC P-256", () => ecKey()],
  ])("sends a %s JWT the facilitator accepts on supported, verify and settle", async (_n, make) => {
    const key = make();
    const facilitator = await startCdpStandIn(key.publicKey, key.alg);
    const service = await startService({
      X402_PAY_TO: PAY_TO,
      X402_NETWORKS: "base-sepolia",
      X402_FACILITATOR_URL: facilitator.url,
      CDP_API_KEY_ID: API_KEY_ID,
      CDP_API_KEY_SECRET: key.secret,
    });
    opened.push(facilitator, service);

    const unpaid = await post(service.url);
    expect(unpaid.status).toBe(402);
    expect(facilitator.accepted.supported).toBe(1);
    const challenge = decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED")!);

    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(generatePrivateKey()) });
    const proof = new x402HTTPClient(client).encodePaymentSignatureHeader(
      await client.createPaymentPayload(challenge),
    );
    const paid = await post(service.url, proof);
    expect(paid.status).toBe(200);
    expect(facilitator.accepted).toEqual({ supported: 1, verify: 1, settle: 1 });
    expect(facilitator.rejected).toBe(0);
  });

  it("gets no challenge out of a facilitator that does not accept its key (503, not 402)", async () => {
    const registered = ed25519Key();
    const facilitator = await startCdpStandIn(registered.publicKey, registered.alg);
    const service = await startService({
      X402_PAY_TO: PAY_TO,
      X402_NETWORKS: "base-sepolia",
      X402_FACILITATOR_URL: facilitator.url,
      CDP_API_KEY_ID: API_KEY_ID,
      CDP_API_KEY_SECRET: ed25519Key().secret, // a different key than the facilitator knows
    });
    opened.push(facilitator, service);

    const response = await post(service.url);
    expect(response.status).toBe(503);
    expect(facilitator.rejected).toBeGreaterThan(0);
    expect(facilitator.accepted.supported).toBe(0);
  });
});
