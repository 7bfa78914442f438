import { generateKeyPairSync } from "node:crypto";
import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError, loadPaymentConfig } from "../../../src/config.js";
import { paymentGateOptionsFromConfig } from "../../../src/payment/index.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const API_KEY_ID = "organizations/org-1/apiKeys/key-1";

const ed = generateKeyPairSync("ed25519");
const edJwk = ed.privateKey.export({ format: "jwk" });
const ED_SECRET = Buffer.concat([
  Buffer.from(edJwk.d!, "base64url"),
  Buffer.from(edJwk.x!, "base64url"),
]).toString("base64");

const cdp = { X402_PAY_TO: PAY_TO, CDP_API_KEY_ID: API_KEY_ID, CDP_API_KEY_SECRET: ED_SECRET };

function configErrorOf(env: Record<string, string>): ConfigError {
  let error: unknown;
  try {
    loadPaymentConfig(env);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as ConfigError).message).not.toContain("\n");
  return error as ConfigError;
}

describe("CDP facilitator configuration", () => {
  it("defaults the facilitator to CDP's and gives the gate per-call JWT auth", async () => {
    const config = loadPaymentConfig(cdp);
    expect(config.facilitatorUrl).toBe("https://api.cdp.coinbase.com/platform/v2/x402");
    expect(config.cdpApiKey).toEqual({ apiKeyId: API_KEY_ID, apiKeySecret: ED_SECRET });
    const options = paymentGateOptionsFromConfig(config);
    expect(options.facilitatorUrl).toBe("https://api.cdp.coinbase.com/platform/v2/x402");
    expect(options.facilitatorHeaders).toBeUndefined();
    const headers = await options.facilitatorAuth!();
    const token = /^Bearer (\S+)$/.exec(headers.verify?.Authorization ?? "")?.[1] ?? "";
    const { payload } = await jwtVerify(token, ed.publicKey, { issuer: "cdp" });
    expect(payload.sub).toBe(API_KEY_ID);
    expect(payload.uris).toEqual(["POST api.cdp.coinbase.com/platform/v2/x402/verify"]);
  });

  it("keeps an explicit X402_FACILITATOR_URL and binds the tokens to it", async () => {
    const config = loadPaymentConfig({
      ...cdp,
      X402_FACILITATOR_URL: "https://cdp-proxy.example/x402",
    });
    expect(config.facilitatorUrl).toBe("https://cdp-proxy.example/x402");
    const headers = await paymentGateOptionsFromConfig(config).facilitatorAuth!();
    const token = /^Bearer (\S+)$/.exec(headers.supported?.Authorization ?? "")?.[1] ?? "";
    const { payload } = await jwtVerify(token, ed.publicKey);
    expect(payload.uris).toEqual(["GET cdp-proxy.example/x402/supported"]);
  });

  it("without CDP variables there is no CDP auth and no default facilitator", () => {
    const config = loadPaymentConfig({});
    expect(config.cdpApiKey).toBeUndefined();
    expect(config.facilitatorUrl).toBeUndefined();
    expect(configErrorOf({ X402_PAY_TO: PAY_TO }).variable).toBe("X402_FACILITATOR_URL");
  });

  it.each([
    ["CDP_API_KEY_SECRET", { CDP_API_KEY_ID: API_KEY_ID }],
    ["CDP_API_KEY_SECRET", { CDP_API_KEY_ID: API_KEY_ID, CDP_API_KEY_SECRET: "  " }],
    ["CDP_API_KEY_ID", { CDP_API_KEY_SECRET: ED_SECRET }],
  ])("wants both CDP variables or neither: names the missing %s", (variable, env) => {
    const error = configErrorOf({ X402_PAY_TO: PAY_TO, ...env });
    expect(error.variable).toBe(variable);
    expect(error.message).toMatch(/must be set when CDP_API_KEY_(ID|SECRET) is set/);
  });

  const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({
    format: "pem",
    type: "pkcs8",
  }) as string;
  it.each([
    ["a word", "hunter2-not-a-key"],
    ["32 bytes of base64", Buffer.alloc(32, 7).toString("base64")],
    ["an RSA PEM", rsa],
  ])("refuses a secret that is %s, naming CDP_API_KEY_SECRET and not echoing it", (_n, secret) => {
    const error = configErrorOf({ ...cdp, CDP_API_KEY_SECRET: secret });
    expect(error.variable).toBe("CDP_API_KEY_SECRET");
    expect(error.message).toMatch(/^CDP_API_KEY_SECRET /);
    expect(error.message).not.toContain(secret.trim().slice(0, 12));
  });

  it("refuses X402_FACILITATOR_AUTH_HEADER together with a CDP key", () => {
    const error = configErrorOf({
      ...cdp,
      X402_FACILITATOR_AUTH_HEADER: "Authorization: Bearer x",
    });
    expect(error.variable).toBe("X402_FACILITATOR_AUTH_HEADER");
    expect(error.message).toContain("CDP_API_KEY_ID");
  });
});
