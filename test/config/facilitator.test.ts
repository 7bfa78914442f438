import { describe, expect, it } from "vitest";
import { ConfigError, loadFacilitatorConfig } from "../../src/config.js";

const KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const base = { FACILITATOR_RPC_URL: "https://base.example/rpc", FACILITATOR_PRIVATE_KEY: KEY };

function failure(env: Record<string, string>): ConfigError {
  try {
    loadFacilitatorConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("loadFacilitatorConfig", () => {
  it("has private defaults and derives the network from the RPC when unset", () => {
    expect(loadFacilitatorConfig(base)).toEqual({
      rpcUrl: "https://base.example/rpc",
      privateKey: KEY,
      networks: undefined,
      host: "127.0.0.1",
      port: 4022,
      authToken: undefined,
    });
  });

  it("accepts network names and CAIP-2 ids, a key without 0x, host, port and token", () => {
    const config = loadFacilitatorConfig({
      ...base,
      FACILITATOR_PRIVATE_KEY: KEY.slice(2),
      FACILITATOR_NETWORKS: "base",
      FACILITATOR_HOST: "0.0.0.0",
      FACILITATOR_PORT: "9000",
      FACILITATOR_AUTH_TOKEN: "a-long-enough-token",
    });
    expect(config).toMatchObject({
      privateKey: KEY,
      networks: ["eip155:8453"],
      host: "0.0.0.0",
      port: 9000,
      authToken: "a-long-enough-token",
    });
    expect(
      loadFacilitatorConfig({ ...base, FACILITATOR_NETWORKS: "eip155:84532" }).networks,
    ).toEqual(["eip155:84532"]);
  });

  it.each([
    [{ FACILITATOR_PRIVATE_KEY: KEY }, "FACILITATOR_RPC_URL"],
    [{ ...base, FACILITATOR_RPC_URL: "ftp://x" }, "FACILITATOR_RPC_URL"],
    [{ FACILITATOR_RPC_URL: base.FACILITATOR_RPC_URL }, "FACILITATOR_PRIVATE_KEY"],
    [{ ...base, FACILITATOR_PRIVATE_KEY: "0x1234" }, "FACILITATOR_PRIVATE_KEY"],
    [{ ...base, FACILITATOR_NETWORKS: "solana" }, "FACILITATOR_NETWORKS"],
    [{ ...base, FACILITATOR_NETWORKS: "base,base-sepolia" }, "FACILITATOR_NETWORKS"],
    [{ ...base, FACILITATOR_PORT: "70000" }, "FACILITATOR_PORT"],
    [{ ...base, FACILITATOR_PORT: "http" }, "FACILITATOR_PORT"],
    [{ ...base, FACILITATOR_AUTH_TOKEN: "short" }, "FACILITATOR_AUTH_TOKEN"],
  ])("names the bad variable in one line: %j", (env, variable) => {
    const error = failure(env as Record<string, string>);
    expect(error.variable).toBe(variable);
    expect(error.message.startsWith(variable)).toBe(true);
    expect(error.message).not.toContain("\n");
  });

  it("never echoes the private key in its error", () => {
    const bad = "0xnot-a-key-but-secret-looking";
    expect(failure({ ...base, FACILITATOR_PRIVATE_KEY: bad }).message).not.toContain("secret");
  });
});
