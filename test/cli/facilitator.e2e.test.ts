/**
 * `secsnap facilitator` as a real process against a real chain (the devnet's anvil): it starts
 * from FACILITATOR_* variables, says where it listens, serves, and stops on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevnet, type Devnet } from "../../src/devnet/index.js";
import { cleanEnv, runCli, spawnCli, waitForLine } from "./run.js";

let devnet: Devnet;
beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
});
afterAll(async () => {
  await devnet?.close();
});

const env = (extra: Record<string, string> = {}) =>
  cleanEnv({
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_PRIVATE_KEY: devnet.payerPrivateKeys[7]!,
    FACILITATOR_PORT: "0",
    ...extra,
  });

describe("secsnap facilitator", () => {
  it("starts from FACILITATOR_* variables, on the RPC's chain, says where it listens, stops on SIGTERM", async () => {
    const child = spawnCli(["facilitator"], env());
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    const lines: string[] = [];
    let partial = "";
    child.stdout.on("data", (d: Buffer) => {
      const parts = (partial + d.toString()).split("\n");
      partial = parts.pop() ?? "";
      lines.push(...parts);
    });
    try {
      await waitForLine(child.stdout, /^(gas payer balance:|warning:)/);
      const url = /listening on (\S+) /.exec(lines[0] ?? "")?.[1] ?? "";
      expect(lines[0]).toBe(
        `secsnap facilitator listening on ${url} for eip155:84532; gas payer ${devnet.payerAddresses[7]}`,
      );
      expect(new URL(url).hostname).toBe("127.0.0.1");
      expect(lines.some((l) => l.startsWith("gas payer balance:"))).toBe(true);
      const supported = (await (await fetch(`${url}/supported`)).json()) as {
        kinds: { x402Version: number; network: string }[];
      };
      // v2 under its CAIP-2 id, v1 under the chain's v1 name.
      expect(supported.kinds.map((k) => [k.x402Version, k.network])).toEqual([
        [2, "eip155:84532"],
        [1, "base-sepolia"],
      ]);

      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(lines).toContain("facilitator: SIGTERM, shutting down");
      await expect(fetch(`${url}/supported`)).rejects.toThrow();
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("refuses networks that are not the RPC's chain, naming the variables", async () => {
    const { code, stderr } = await runCli(["facilitator"], env({ FACILITATOR_NETWORKS: "base" }));
    expect(code).toBe(1);
    expect(stderr).toMatch(
      /FACILITATOR_NETWORKS is eip155:8453 but FACILITATOR_RPC_URL is chain 84532/,
    );
  });
});
