import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createPublicClient, createWalletClient, hashDomain, http, parseSignature } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compileDevnetContracts } from "../../src/devnet/compile.js";
import {
  ANVIL_MNEMONIC,
  DEVNET_USDC_ADDRESS,
  MULTICALL3_ADDRESS,
  PAYER_START_BALANCE,
} from "../../src/devnet/constants.js";
import { DEV_USDC_ABI, DEVNET_ACCOUNTS, startDevnet, type Devnet } from "../../src/devnet/index.js";
import { authorizationTypes } from "@x402/evm";

let devnet: Devnet;
const logs: string[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0, log: (l) => logs.push(l) });
});
afterAll(async () => {
  await devnet?.close();
});

const client = () => createPublicClient({ transport: http(devnet.rpcUrl) });
const portOf = (url: string) => Number(new URL(url).port);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntilDead(pid: number, ms = 10_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (!isAlive(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !isAlive(pid);
}

describe("startDevnet from nothing", () => {
  it("names anvil's own accounts: those of ANVIL_MNEMONIC, with their keys", async () => {
    const onChain = await createWalletClient({ transport: http(devnet.rpcUrl) }).getAddresses();
    expect(onChain.map((a) => a.toLowerCase())).toEqual(
      DEVNET_ACCOUNTS.map((a) => a.address.toLowerCase()),
    );
    for (const account of DEVNET_ACCOUNTS) {
      const derived = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: account.index });
      expect(account.address).toBe(derived.address);
      expect(privateKeyToAccount(account.privateKey).address).toBe(account.address);
    }
  });

  it("runs anvil as chain 84532 on loopback and reports what it started", async () => {
    expect(devnet.reused).toBe(false);
    expect(devnet.facilitatorReused).toBe(false);
    expect(devnet.anvilPid).toBeTypeOf("number");
    expect(new URL(devnet.rpcUrl).hostname).toBe("127.0.0.1");
    expect(new URL(devnet.facilitatorUrl).hostname).toBe("127.0.0.1");
    expect(devnet.chainId).toBe(84532);
    expect(devnet.network).toBe("eip155:84532");
    expect(await client().getChainId()).toBe(84532);
    expect(devnet.usdcAddress).toBe("0x036CbD53842c5426634e7929541eC2318f3dCF7e");
    expect(logs.some((l) => l.includes("anvil"))).toBe(true);
  });

  it("uses the default mnemonic's accounts: 0 gas, 1 payTo, 2-9 payers", () => {
    expect(devnet.gasPayer).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    expect(devnet.payTo).toBe("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
    expect(devnet.payerPrivateKeys).toHaveLength(8);
    expect(devnet.payerPrivateKeys.map((k) => privateKeyToAccount(k).address)).toEqual(
      DEVNET_ACCOUNTS.slice(2).map((a) => a.address),
    );
    expect(devnet.payerAddresses[0]).toBe("0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC");
  });

  it("funds accounts 2-9 with exactly 1000 USDC and nobody else", async () => {
    const balanceOf = (address: `0x${string}`) =>
      client().readContract({
        address: DEVNET_USDC_ADDRESS,
        abi: DEV_USDC_ABI,
        functionName: "balanceOf",
        args: [address],
      });
    for (const payer of devnet.payerAddresses) {
      expect(await balanceOf(payer)).toBe(1000_000000n);
    }
    expect(PAYER_START_BALANCE).toBe(1000_000000n);
    expect(await balanceOf(devnet.payTo)).toBe(0n);
    expect(await balanceOf(devnet.gasPayer)).toBe(0n);
    const totalSupply = await client().readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: DEV_USDC_ABI,
      functionName: "totalSupply",
    });
    expect(totalSupply).toBe(8n * 1000_000000n);
  });

  it("has a USDC-like token: name, symbol, 6 decimals, EIP-712 domain USDC/2 on this chain and address", async () => {
    const read = <F extends "name" | "symbol" | "version" | "decimals" | "DOMAIN_SEPARATOR">(
      functionName: F,
    ) => client().readContract({ address: DEVNET_USDC_ADDRESS, abi: DEV_USDC_ABI, functionName });
    expect(await read("name")).toBe("USDC");
    expect(await read("symbol")).toBe("USDC");
    expect(await read("version")).toBe("2");
    expect(await read("decimals")).toBe(6);
    // Computed at call time from block.chainid and address(this), not from constructor storage.
    expect(await read("DOMAIN_SEPARATOR")).toBe(
      hashDomain({
        domain: {
          name: "USDC",
          version: "2",
          chainId: 84532n,
          verifyingContract: DEVNET_USDC_ADDRESS,
        },
        types: {
          EIP712Domain: [
            { name: "name", type: "string" },
            { name: "version", type: "string" },
            { name: "chainId", type: "uint256" },
            { name: "verifyingContract", type: "address" },
          ],
        },
      }),
    );
    const [, name, version, chainId, verifyingContract] = await client().readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: DEV_USDC_ABI,
      functionName: "eip712Domain",
    });
    expect({ name, version, chainId, verifyingContract }).toEqual({
      name: "USDC",
      version: "2",
      chainId: 84532n,
      verifyingContract: DEVNET_USDC_ADDRESS,
    });
  });

  it("places Multicall3 where Base has it, for the x402 SDK's diagnostics", async () => {
    const code = await client().getCode({ address: MULTICALL3_ADDRESS });
    expect(code && code.length > 2).toBe(true);
  });

  it("lets only account 0 mint", async () => {
    const payer = privateKeyToAccount(devnet.payerPrivateKeys[7]!);
    const wallet = createWalletClient({ account: payer, transport: http(devnet.rpcUrl) });
    await expect(
      wallet.writeContract({
        chain: null,
        address: DEVNET_USDC_ADDRESS,
        abi: DEV_USDC_ABI,
        functionName: "mint",
        args: [payer.address, 1n],
      }),
    ).rejects.toThrow(/caller is not the minter/);
  });

  it("enforces EIP-3009 on chain: bytes-signature overload works once, then replay, expiry and bad signatures revert", async () => {
    const payer = privateKeyToAccount(devnet.payerPrivateKeys[6]!);
    const submitter = createWalletClient({
      account: privateKeyToAccount(devnet.payerPrivateKeys[5]!),
      transport: http(devnet.rpcUrl),
    });
    const now = BigInt(Math.floor(Date.now() / 1000));
    const sign = (message: { value: bigint; validBefore: bigint; nonce: `0x${string}` }) =>
      payer.signTypedData({
        domain: {
          name: "USDC",
          version: "2",
          chainId: 84532,
          verifyingContract: DEVNET_USDC_ADDRESS,
        },
        types: authorizationTypes,
        primaryType: "TransferWithAuthorization",
        message: { from: payer.address, to: devnet.payTo, validAfter: 0n, ...message },
      });
    const nonce = `0x${"ab".repeat(32)}` as const;
    const good = { value: 1234n, validBefore: now + 600n, nonce };
    const signature = await sign(good);
    const call = (args: typeof good, sig: `0x${string}`) =>
      submitter.writeContract({
        chain: null,
        address: DEVNET_USDC_ADDRESS,
        abi: DEV_USDC_ABI,
        functionName: "transferWithAuthorization",
        args: [payer.address, devnet.payTo, args.value, 0n, args.validBefore, args.nonce, sig],
      });

    const before = await client().readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: DEV_USDC_ABI,
      functionName: "balanceOf",
      args: [devnet.payTo],
    });
    const hash = await call(good, signature);
    const receipt = await client().waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    const after = await client().readContract({
      address: DEVNET_USDC_ADDRESS,
      abi: DEV_USDC_ABI,
      functionName: "balanceOf",
      args: [devnet.payTo],
    });
    expect(after - before).toBe(1234n);
    expect(
      await client().readContract({
        address: DEVNET_USDC_ADDRESS,
        abi: DEV_USDC_ABI,
        functionName: "authorizationState",
        args: [payer.address, nonce],
      }),
    ).toBe(true);

    await expect(call(good, signature)).rejects.toThrow(/authorization is used or canceled/);

    const expired = { value: 1n, validBefore: now - 60n, nonce: `0x${"cd".repeat(32)}` as const };
    await expect(call(expired, await sign(expired))).rejects.toThrow(/authorization is expired/);

    const fresh = { value: 5n, validBefore: now + 600n, nonce: `0x${"ef".repeat(32)}` as const };
    const freshSig = await sign(fresh);
    // Signed for 5, submitted for 6: the recovered signer differs.
    await expect(call({ ...fresh, value: 6n }, freshSig)).rejects.toThrow(/invalid signature/);
    // High-s (malleable) twin of a valid signature is refused.
    const { r, s, yParity } = parseSignature(freshSig);
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const flipped =
      `${r}${(n - BigInt(s)).toString(16).padStart(64, "0")}${yParity === 0 ? "1c" : "1b"}` as `0x${string}`;
    await expect(call(fresh, flipped)).rejects.toThrow(/invalid signature/);
  });
});

describe("the chain's clock (docs/contract.md §7.7)", () => {
  /** Idle time, and how far before now the proof becomes valid: idle > margin > a tick's lag. */
  const IDLE_MS = 6_000;
  const MARGIN_S = 4n;

  /** A v2 exact payment of 0.05 devnet USDC by `payer`, valid from `validAfter` (unix seconds). */
  async function signedPayment(payerKey: `0x${string}`, validAfter: bigint) {
    const payer = privateKeyToAccount(payerKey);
    const requirements = {
      scheme: "exact",
      network: devnet.network,
      amount: "50000",
      asset: DEVNET_USDC_ADDRESS,
      payTo: devnet.payTo,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2" },
    };
    const authorization = {
      from: payer.address,
      to: devnet.payTo,
      value: 50_000n,
      validAfter,
      validBefore: validAfter + 600n,
      nonce: `0x${randomBytes(32).toString("hex")}` as `0x${string}`,
    };
    const signature = await payer.signTypedData({
      domain: {
        name: "USDC",
        version: "2",
        chainId: 84532,
        verifyingContract: DEVNET_USDC_ADDRESS,
      },
      types: authorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: authorization,
    });
    const payload = {
      signature,
      authorization: Object.fromEntries(
        Object.entries(authorization).map(([k, v]) => [k, String(v)]),
      ),
    };
    return {
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: requirements, payload },
      paymentRequirements: requirements,
    };
  }

  it("follows the wall clock while idle: a proof valid from a few seconds ago verifies after a pause", async () => {
    // A block now, then the chain sits idle longer than the proof's margin. A chain whose clock
    // stopped at its last block (anvil's automine alone) would still be before validAfter, and
    // the facilitator's simulation would refuse the proof as "not yet valid"; one that mines a
    // block every second is at most a tick or two behind, well inside the margin.
    await client().request({ method: "evm_mine" as never });
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
    const validAfter = BigInt(Math.floor(Date.now() / 1000)) - MARGIN_S;
    const res = await fetch(`${devnet.facilitatorUrl}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(await signedPayment(devnet.payerPrivateKeys[7]!, validAfter)),
    });
    const verdict = (await res.json()) as { isValid: boolean; invalidReason?: string };
    expect(verdict, JSON.stringify(verdict)).toMatchObject({ isValid: true });
  });
});

describe("reuse", () => {
  it("returns reused: true for the same ports, spawns nothing, and its close() leaves the devnet up", async () => {
    const again = await startDevnet({
      rpcPort: portOf(devnet.rpcUrl),
      facilitatorPort: portOf(devnet.facilitatorUrl),
    });
    expect(again.reused).toBe(true);
    expect(again.facilitatorReused).toBe(true);
    expect(again.anvilPid).toBeUndefined();
    expect(again.rpcUrl).toBe(devnet.rpcUrl);
    expect(again.facilitatorUrl).toBe(devnet.facilitatorUrl);
    await again.close();
    expect(isAlive(devnet.anvilPid!)).toBe(true);
    expect(await client().getChainId()).toBe(84532);
    const supported = await fetch(`${devnet.facilitatorUrl}/supported`);
    expect(supported.status).toBe(200);
  });

  it("starts only a facilitator when the chain is already running", async () => {
    const partial = await startDevnet({ rpcPort: portOf(devnet.rpcUrl), facilitatorPort: 0 });
    try {
      expect(partial.reused).toBe(true);
      expect(partial.facilitatorReused).toBe(false);
      expect(partial.facilitatorUrl).not.toBe(devnet.facilitatorUrl);
      const body = (await (await fetch(`${partial.facilitatorUrl}/supported`)).json()) as {
        kinds: { x402Version: number; network: string }[];
      };
      expect(body.kinds.map((k) => [k.x402Version, k.network])).toEqual([
        [2, "eip155:84532"],
        [1, "base-sepolia"],
      ]);
    } finally {
      await partial.close();
    }
    await expect(fetch(`${partial.facilitatorUrl}/supported`)).rejects.toThrow();
    expect(await client().getChainId()).toBe(84532);
  });

  it("refuses a port held by something that is not a devnet, with a clear error", async () => {
    const stranger = createServer((_req, res) => res.writeHead(404).end("nope"));
    await new Promise<void>((r) => stranger.listen(0, "127.0.0.1", r));
    const port = (stranger.address() as AddressInfo).port;
    try {
      await expect(startDevnet({ rpcPort: port, facilitatorPort: 0 })).rejects.toThrow(
        new RegExp(
          `127\\.0\\.0\\.1:${port} \\(RPC\\) is in use by something that is not a secsnap devnet.*DEVNET_RPC_PORT`,
        ),
      );
      await expect(
        startDevnet({ rpcPort: portOf(devnet.rpcUrl), facilitatorPort: port }),
      ).rejects.toThrow(/\(facilitator\) is in use .*DEVNET_FACILITATOR_PORT/);
    } finally {
      stranger.close();
    }
  });
});

describe("reuse: false", () => {
  it("beside a running devnet starts its own on free ports and says which ports it left", async () => {
    const rpcPort = portOf(devnet.rpcUrl);
    const facilitatorPort = portOf(devnet.facilitatorUrl);
    const own = await startDevnet({ rpcPort, facilitatorPort, reuse: false });
    try {
      expect(own.reused).toBe(false);
      expect(own.facilitatorReused).toBe(false);
      expect(own.movedFrom).toEqual([
        `DEVNET_RPC_PORT ${rpcPort}`,
        `DEVNET_FACILITATOR_PORT ${facilitatorPort}`,
      ]);
      expect(portOf(own.rpcUrl)).not.toBe(rpcPort);
      expect(portOf(own.facilitatorUrl)).not.toBe(facilitatorPort);
      const supported = await fetch(`${own.facilitatorUrl}/supported`);
      expect(supported.status).toBe(200);
    } finally {
      await own.close();
    }
    expect(await client().getChainId()).toBe(84532); // the first one is left running
  });
});

describe("a facilitator without its chain", () => {
  it("is not reused beside a freshly started chain: clear error, and the new anvil is stopped", async () => {
    // A fixed RPC port with nothing on it, next to the running devnet's facilitator port: the
    // facilitator there settles on the other chain, so it must not be taken for this devnet's.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const rpcPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));

    await expect(
      startDevnet({ rpcPort, facilitatorPort: portOf(devnet.facilitatorUrl) }),
    ).rejects.toThrow(/\(facilitator\) is in use .*another chain.*DEVNET_FACILITATOR_PORT/);
    await expect(
      fetch(`http://127.0.0.1:${rpcPort}/`, { method: "POST", body: "{}" }),
    ).rejects.toThrow();
    // The devnet whose facilitator it is keeps working.
    expect((await fetch(`${devnet.facilitatorUrl}/supported`)).status).toBe(200);
  });
});

describe("anvil lifecycle", () => {
  const fixture = fileURLToPath(new URL("../fixtures/devnet-child.ts", import.meta.url));

  async function runChild(mode: "exit" | "wait") {
    const child = spawn(process.execPath, ["--import", "tsx", fixture, mode], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
        if (out.includes("\n")) resolve(out.split("\n")[0]!);
      });
      child.once("exit", (code) => reject(new Error(`child exited early (${code})`)));
    });
    return { child, info: JSON.parse(line) as { anvilPid: number; rpcUrl: string } };
  }

  it("close() stops the anvil it started", async () => {
    const own = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
    const pid = own.anvilPid!;
    expect(isAlive(pid)).toBe(true);
    await own.close();
    expect(await waitUntilDead(pid)).toBe(true);
    await expect(fetch(own.facilitatorUrl + "/health")).rejects.toThrow();
  });

  it("kills anvil when the owning process exits", async () => {
    const { child, info } = await runChild("exit");
    await new Promise((r) => child.once("exit", r));
    expect(await waitUntilDead(info.anvilPid)).toBe(true);
  });

  it("kills anvil when the owning process gets SIGTERM", async () => {
    const { child, info } = await runChild("wait");
    expect(isAlive(info.anvilPid)).toBe(true);
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once("exit", (_c, s) => r(s)));
    child.kill("SIGTERM");
    expect(await exited).toBe("SIGTERM");
    expect(await waitUntilDead(info.anvilPid)).toBe(true);
  });
});

describe("anvil and an owner that handles signals itself", () => {
  const fixture = fileURLToPath(new URL("../fixtures/devnet-child.ts", import.meta.url));

  it("keeps the chain up while the owner shuts down after SIGTERM, then dies with the process", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", fixture, "owned"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const lines: string[] = [];
    let buffer = "";
    const gotLines = (n: number) =>
      new Promise<void>((resolve, reject) => {
        const check = () => (lines.length >= n ? resolve() : undefined);
        child.stdout.on("data", (c: Buffer) => {
          buffer += c.toString();
          const parts = buffer.split("\n");
          buffer = parts.pop()!;
          lines.push(...parts);
          check();
        });
        child.once("exit", () =>
          lines.length >= n ? resolve() : reject(new Error("child exited")),
        );
        check();
      });
    await gotLines(1);
    const { anvilPid } = JSON.parse(lines[0]!) as { anvilPid: number };
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(JSON.parse(lines[1]!)).toEqual({ chainAnswered: true });
    expect(await waitUntilDead(anvilPid)).toBe(true);
  });
});

describe("contract compilation cache", () => {
  it("compiles once, then serves the same artifact from the cache", async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), "secsnap-solc-"));
    try {
      const first = await compileDevnetContracts({ cacheDir });
      expect(first.fromCache).toBe(false);
      const second = await compileDevnetContracts({ cacheDir });
      expect(second.fromCache).toBe(true);
      expect(second.cacheFile).toBe(first.cacheFile);
      expect(second.artifacts.DevUSDC.deployedBytecode).toBe(
        first.artifacts.DevUSDC.deployedBytecode,
      );
      // What the devnet placed on chain is this compiler output.
      const onChain = await client().getCode({ address: DEVNET_USDC_ADDRESS });
      expect(onChain).toBe(first.artifacts.DevUSDC.deployedBytecode);
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });
});
