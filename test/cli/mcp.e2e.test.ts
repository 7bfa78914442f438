/**
 * `secsnap mcp` (docs/contract.md §8.2) as MCP hosts run it: a real `secsnap mcp` process spawned
 * by the official MCP SDK client (Client + StdioClientTransport) and by the MCP Inspector's CLI,
 * paying a real service on a real devnet. Every money claim is checked on the chain.
 */
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { dirname, join } from "node:path";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientTransportV2 } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import inspectorCli from "@modelcontextprotocol/inspector-cli/package.json" with { type: "json" };
import { Ajv2020 as Ajv } from "ajv/dist/2020.js";
import { testActions, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { build, staleReason } from "../../scripts/build.js";
import { startDishonestApi, type DishonestApi } from "../fixtures/dishonest-api.js";
import { startForwardingProxy, type ForwardingProxy } from "../fixtures/forwarding-proxy.js";
import { outputOf } from "../fixtures/child-output.js";
import { callSnapshot } from "../fixtures/mcp-client.js";
import {
  claimingBaseMainnet,
  startPaidBed,
  startPaidService,
  type PaidBed,
} from "../fixtures/paid-service.js";
import { authorizationUsed } from "../fixtures/usdc.js";
import { ROOT, cliNodeArgs, payerEnv, waitForLine } from "./run.js";

const PRICE_UNITS = 50_000n;

let bed: PaidBed;
const clients: Client[] = [];
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  bed = await startPaidBed();
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(opened.map((o) => o.close()));
  await bed?.close();
});

/** The key of devnet payer `index`, or none (then only a devnet service is paid). */
const env = (payerIndex?: number) => payerEnv(bed.devnet, payerIndex);

/** A `secsnap mcp` process against the test service, reached through the official SDK client. */
async function connect(
  options: string[] = [],
  environment = env(),
  nodeArgs = cliNodeArgs(),
  api = bed.service.url,
  rpc = bed.devnet.rpcUrl,
): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...nodeArgs, "mcp", "--api", api, "--rpc", rpc, "--timeout", "30", ...options],
    env: environment,
    cwd: ROOT,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "secsnap-test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return { client, stderr: () => stderr };
}

/** The listed tool's output schema, compiled as an MCP client would check it. */
async function outputValidator(client: Client, name: string) {
  const { tools } = await client.listTools();
  const tool = tools.find((t: Tool) => t.name === name);
  expect(tool?.outputSchema?.type).toBe("object");
  const ajv = new Ajv({ strict: false, allErrors: true });
  // The report's one format; its schema also carries zod's ISO pattern for it.
  ajv.addFormat("date-time", (value: string) => !Number.isNaN(Date.parse(value)));
  return ajv.compile(tool?.outputSchema as object);
}

const textOf = (result: CallToolResult) =>
  result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");

describe("the official SDK client", () => {
  it("lists the four tools, then pays `snapshot`: the report, its settlement, 50000 moved", async () => {
    const { client } = await connect([], env(3));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "demo_snapshot",
      "get_snapshot",
      "snapshot",
      "wallet",
    ]);
    const validate = await outputValidator(client, "snapshot");

    const payer = bed.payer(3).address;
    const [before, payToBefore, fromBlock] = await Promise.all([
      bed.balanceOf(payer),
      bed.balanceOf(bed.devnet.payTo),
      bed.chain.getBlockNumber(),
    ]);
    const result = await callSnapshot(client, bed.target.url);

    expect(result.isError, textOf(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      requested_url: bed.target.url,
      reachable: true,
    });
    expect(validate(result.structuredContent), JSON.stringify(validate.errors)).toBe(true);
    const report = result.structuredContent as { grade: string; score: number };
    expect(textOf(result)).toContain(`grade ${report.grade}, score ${report.score}/100`);

    const settlement = result._meta?.["x402/payment-response"] as {
      success: boolean;
      transaction: Hex;
      network: string;
    };
    expect(settlement).toMatchObject({ success: true, network: bed.devnet.network });
    // The text says what was charged, naming the transaction.
    expect(textOf(result)).toContain(
      `Charged 0.05 USDC on base-sepolia (${bed.devnet.network}) to ${bed.devnet.payTo} from ${payer} (tx ${settlement.transaction}).`,
    );
    // The settlement's transaction is on chain, and moved exactly the price, payer to payee.
    const receipt = await bed.chain.getTransactionReceipt({ hash: settlement.transaction });
    expect(receipt.status).toBe("success");
    const moved = await bed.transfersFrom(payer, fromBlock);
    expect(moved.map((l) => [l.transactionHash, l.args.to, l.args.value])).toEqual([
      [settlement.transaction, bed.devnet.payTo, PRICE_UNITS],
    ]);
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
    expect(await bed.balanceOf(bed.devnet.payTo)).toBe(payToBefore + PRICE_UNITS);
  });

  it("an invalid URL is an error result with the SnapshotError, not an exception; nothing moved", async () => {
    const { client } = await connect([], env(4));
    const validate = await outputValidator(client, "snapshot");
    const before = await bed.balanceOf(bed.payer(4).address);
    const fromBlock = await bed.chain.getBlockNumber();

    for (const url of ["http://169.254.169.254/latest/meta-data", "not a url at all"]) {
      const result = await callSnapshot(client, url);
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toMatchObject({ requested_url: url });
      expect(validate(result.structuredContent), JSON.stringify(validate.errors)).toBe(true);
      expect(textOf(result)).toMatch(/nothing was charged/i);
    }
    expect(await bed.transfersFrom(bed.payer(4).address, fromBlock)).toEqual([]);
    expect(await bed.balanceOf(bed.payer(4).address)).toBe(before);
  });

  it("without a key, pays a devnet service from its test account 2 and says so", async () => {
    const { client, stderr } = await connect();
    const account = bed.payer(0); // anvil 2
    const before = await bed.balanceOf(account.address);
    const result = await callSnapshot(client, bed.target.url);
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(textOf(result)).toContain(
      `devnet: paying from anvil test account 2 (${account.address})`,
    );
    expect(stderr()).toContain(`devnet: paying from anvil test account 2`);
    expect(await bed.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });
});

describe("get_snapshot: a paid report again, signed in with the paying wallet", () => {
  const callGet = async (client: Client, snapshot_id: string) =>
    (await client.callTool({ name: "get_snapshot", arguments: { snapshot_id } })) as CallToolResult;

  it("pays `snapshot`, then `get_snapshot` of its id returns the same report, free", async () => {
    const { client } = await connect([], env(5));
    const validate = await outputValidator(client, "get_snapshot");
    const paid = await callSnapshot(client, bed.target.url);
    expect(paid.isError, textOf(paid)).toBeFalsy();
    const report = paid.structuredContent as { proof: { snapshot_id: string } };
    const payer = bed.payer(5).address;
    const before = await bed.balanceOf(payer);

    const again = await callGet(client, report.proof.snapshot_id);
    expect(again.isError, textOf(again)).toBeFalsy();
    expect(again.structuredContent).toEqual(paid.structuredContent);
    expect(validate(again.structuredContent), JSON.stringify(validate.errors)).toBe(true);
    // The report's JSON, as served: the paid answer's.
    expect(again.content[1]).toEqual(paid.content[1]);
    expect(textOf(again)).toContain(`signed in as ${payer}`);
    expect(await bed.balanceOf(payer)).toBe(before);
  });

  it("another wallet's report, or an unknown id: an error result saying why, no report", async () => {
    const { client: payerClient } = await connect([], env(6));
    const paid = await callSnapshot(payerClient, bed.target.url);
    expect(paid.isError, textOf(paid)).toBeFalsy();
    const { snapshot_id } = (paid.structuredContent as { proof: { snapshot_id: string } }).proof;

    const { client: other } = await connect([], env(7));
    const refused = await callGet(other, snapshot_id);
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toBeUndefined();
    expect(textOf(refused)).toMatch(/^The API answered 403 not_payer: /);
    expect(textOf(refused)).toContain(`signed in as ${bed.payer(7).address}`);

    const unknown = await callGet(other, "A".repeat(22));
    expect(unknown.isError).toBe(true);
    expect(textOf(unknown)).toMatch(/^The API answered 404 snapshot_not_found: /);
  });
});

describe("spend caps, checked before signing", () => {
  it("--max-usdc 0.01 refuses a 0.05 call: nothing signed, nothing moved", async () => {
    const { client } = await connect(["--max-usdc", "0.01"], env(5));
    const before = await bed.balanceOf(bed.payer(5).address);
    const fromBlock = await bed.chain.getBlockNumber();
    const result = await callSnapshot(client, bed.target.url);
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(textOf(result)).toContain("price 0.05 USDC exceeds --max-usdc 0.01");
    expect(textOf(result)).toContain("Nothing was signed; nothing was charged.");
    expect(await bed.transfersFrom(bed.payer(5).address, fromBlock)).toEqual([]);
    expect(await bed.balanceOf(bed.payer(5).address)).toBe(before);
  });

  it("--budget-usdc 0.08 pays one call and refuses the second; wallet says what was spent", async () => {
    const { client } = await connect(["--budget-usdc", "0.08"], env(6));
    const payer = bed.payer(6).address;
    const before = await bed.balanceOf(payer);
    const fromBlock = await bed.chain.getBlockNumber();

    const first = await callSnapshot(client, bed.target.url);
    expect(first.isError, textOf(first)).toBeFalsy();
    const second = await callSnapshot(client, bed.target.url);
    expect(second.isError).toBe(true);
    expect(textOf(second)).toContain("would exceed --budget-usdc 0.08");
    expect(textOf(second)).toContain("Nothing was signed; nothing was charged.");

    const moved = await bed.transfersFrom(payer, fromBlock);
    expect(moved.map((l) => l.args.value)).toEqual([PRICE_UNITS]);
    const balance = await bed.balanceOf(payer);
    expect(balance).toBe(before - PRICE_UNITS);

    const wallet = (await client.callTool({ name: "wallet", arguments: {} })) as CallToolResult;
    expect(wallet.isError, textOf(wallet)).toBeFalsy();
    expect(wallet.structuredContent).toMatchObject({
      address: payer,
      key: "SECSNAP_PRIVATE_KEY",
      network: bed.devnet.network,
      asset: bed.devnet.usdcAddress,
      balance_usdc: (Number(balance) / 1e6).toString(),
      spent_usdc: "0.05",
      budget_usdc: "0.08",
      budget_left_usdc: "0.03",
      paid_calls: 1,
    });
  });
});

describe("an API that refuses a signed proof: the chain's word, and the budget holds", () => {
  async function dishonestApi(
    status: 402 | 409,
    settle: boolean,
    paidBed: PaidBed = bed,
  ): Promise<DishonestApi> {
    const api = await startDishonestApi({
      service: paidBed.service.url,
      facilitatorUrl: paidBed.devnet.facilitatorUrl,
      status,
      settle,
    });
    opened.push(api);
    return api;
  }

  const wallet = async (client: Client) => {
    const result = (await client.callTool({ name: "wallet", arguments: {} })) as CallToolResult;
    expect(result.isError, textOf(result)).toBeFalsy();
    return result;
  };

  /** The authorization of the one proof `api` received. */
  function onlyAuthorization(api: DishonestApi): { from: Address; nonce: Hex } {
    expect(api.proofs).toHaveLength(1);
    return (api.proofs[0]!.payload as { authorization: { from: Address; nonce: Hex } })
      .authorization;
  }

  it("settled, then answered 402: charged by the chain's word; the next call is refused by --budget-usdc 0.05", async () => {
    const api = await dishonestApi(402, true);
    const { client } = await connect(["--budget-usdc", "0.05"], env(1), cliNodeArgs(), api.url);
    const payer = bed.payer(1).address;
    const [before, fromBlock] = await Promise.all([
      bed.balanceOf(payer),
      bed.chain.getBlockNumber({ cacheTime: 0 }),
    ]);

    const first = await callSnapshot(client, bed.target.url);
    expect(first.isError).toBe(true);
    const [tx] = api.settlements;
    expect(textOf(first)).toContain("The API answered 402 to the signed proof");
    expect(textOf(first)).toContain(
      `Charged 0.05 USDC on base-sepolia (${bed.devnet.network}) to ${bed.devnet.payTo}, without a report (tx ${tx}).`,
    );
    expect(textOf(first)).not.toMatch(/nothing was charged/i);

    const second = await callSnapshot(client, bed.target.url);
    expect(second.isError).toBe(true);
    expect(textOf(second)).toContain("would exceed --budget-usdc 0.05");
    expect(textOf(second)).toContain("Nothing was signed; nothing was charged.");
    onlyAuthorization(api); // the second call signed nothing

    const moved = await bed.transfersFrom(payer, fromBlock + 1n);
    expect(moved.map((l) => [l.transactionHash, l.args.to, l.args.value])).toEqual([
      [tx, bed.devnet.payTo, PRICE_UNITS],
    ]);
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
    expect((await wallet(client)).structuredContent).toMatchObject({
      spent_usdc: "0.05",
      committed_usdc: "0",
      budget_left_usdc: "0",
      paid_calls: 1,
    });
  });

  it("answered 402 without settling: not charged by the chain's word, yet committed until it expires", async () => {
    // A devnet of its own: its clock is moved past the authorization's expiry at the end.
    const own = await startPaidBed();
    opened.push(own);
    const api = await dishonestApi(402, false, own);
    const { client } = await connect(
      ["--budget-usdc", "0.05"],
      payerEnv(own.devnet, 2),
      cliNodeArgs(),
      api.url,
      own.devnet.rpcUrl,
    );
    const payer = own.payer(2).address;
    const before = await own.balanceOf(payer);

    const first = await callSnapshot(client, own.target.url);
    expect(first.isError).toBe(true);
    const { from, nonce } = onlyAuthorization(api);
    expect(await authorizationUsed(own.chain, own.devnet.usdcAddress, from, nonce)).toBe(false);
    expect(textOf(first)).toMatch(
      new RegExp(
        `Not charged: the chain says authorization ${nonce} from ${from} is unused on base-sepolia ` +
          `\\(eip155:84532\\); it can still be used until (\\S+Z), then it expires\\. Its 0\\.05 USDC ` +
          `stays committed against --budget-usdc until the chain says it was used or it expired unused\\.`,
      ),
    );

    // The API still holds a usable authorization: the budget counts it, so nothing more is signed.
    const second = await callSnapshot(client, own.target.url);
    expect(textOf(second)).toContain("would exceed --budget-usdc 0.05");
    expect(textOf(second)).toContain("Nothing was signed; nothing was charged.");
    onlyAuthorization(api);
    expect((await wallet(client)).structuredContent).toMatchObject({
      spent_usdc: "0",
      committed_usdc: "0.05",
      budget_left_usdc: "0",
      paid_calls: 0,
    });

    // Once the chain is past its validBefore, unused, it can never be charged: freed.
    const validBefore = BigInt(
      (api.proofs[0]!.payload as { authorization: { validBefore: string } }).authorization
        .validBefore,
    );
    const test = own.chain.extend(testActions({ mode: "anvil" }));
    await test.setNextBlockTimestamp({ timestamp: validBefore + 1n });
    await test.mine({ blocks: 1 });
    expect((await wallet(client)).structuredContent).toMatchObject({
      spent_usdc: "0",
      committed_usdc: "0",
      budget_left_usdc: "0.05",
    });
    expect(await own.balanceOf(payer)).toBe(before);
  });
});

describe("one proof per call", () => {
  async function proxy(options: Parameters<typeof startForwardingProxy>[0]) {
    const started: ForwardingProxy = await startForwardingProxy(options);
    opened.push(started);
    return started;
  }

  it("a lost answer: the same proof and payment id sent again, the report, one transfer", async () => {
    let paidSends = 0;
    const front = await proxy({
      upstream: bed.service.url,
      loseAnswer: (r) => r.headers["payment-signature"] !== undefined && ++paidSends === 1,
    });
    const { client, stderr } = await connect([], env(7), cliNodeArgs(), front.url);
    const payer = bed.payer(7).address;
    const [before, fromBlock] = await Promise.all([
      bed.balanceOf(payer),
      bed.chain.getBlockNumber(),
    ]);
    const result = await callSnapshot(client, bed.target.url);
    expect(result.isError, textOf(result)).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ requested_url: bed.target.url });
    const proofs = front.requests
      .map((r) => r.headers["payment-signature"])
      .filter((h): h is string => typeof h === "string");
    expect(proofs.length).toBeGreaterThanOrEqual(2);
    expect(new Set(proofs).size).toBe(1);
    const payload = JSON.parse(Buffer.from(proofs[0] as string, "base64").toString()) as {
      extensions: Record<string, { info: { id: string } }>;
    };
    expect(payload.extensions["payment-identifier"]?.info.id).toMatch(/^pay_/);
    expect(stderr()).toMatch(/did not answer .*sending the same proof again/);
    expect((await bed.transfersFrom(payer, fromBlock)).map((l) => l.args.value)).toEqual([
      PRICE_UNITS,
    ]);
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
  });

  it("only the networks --network allows: a Base mainnet offer is refused by default, unsigned", async () => {
    // The devnet's facilitator, claiming Base mainnet too, so a service can offer it alone.
    const facilitator = await proxy({
      upstream: bed.devnet.facilitatorUrl,
      rewrite: claimingBaseMainnet,
    });
    const mainnetOnly = await startPaidService({
      engine: bed.target.engine,
      ports: [bed.target.port],
      payTo: bed.devnet.payTo,
      networks: ["eip155:8453"],
      facilitatorUrl: facilitator.url,
    });
    opened.push({ close: () => mainnetOnly.close(1_000) });
    const { client } = await connect([], env(), cliNodeArgs(), mainnetOnly.url);
    const result = await callSnapshot(client, bed.target.url);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("--network base-sepolia is not offered by the API");
    expect(textOf(result)).toContain("Nothing was signed; nothing was charged.");
    expect(facilitator.requests.filter((r) => r.path === "/verify")).toEqual([]);
  });
});

describe("the MCP Inspector's CLI", () => {
  /** One `mcp-inspector-cli --cli` run against `secsnap mcp`; its stdout is JSON. */
  async function inspect(method: string[]): Promise<unknown> {
    const bin = join(ROOT, "node_modules", ".bin", "mcp-inspector-cli");
    // The project's own Inspector CLI (the devDependency) is what that name runs.
    const installed = dirname(
      realpathSync(join(ROOT, "node_modules", inspectorCli.name, "package.json")),
    );
    expect(realpathSync(bin)).toBe(join(installed, inspectorCli.bin["mcp-inspector-cli"]));
    const child = spawn(
      bin,
      [
        "--cli",
        process.execPath,
        ...cliNodeArgs(),
        "mcp",
        "--api",
        bed.service.url,
        "--method",
        ...method,
      ],
      // Its v1 finds its own package.json by a path relative to the working directory's
      // parent, so it runs one level below the project root.
      { cwd: join(ROOT, "test"), env: env() },
    );
    const { code, stdout, stderr } = await outputOf(child);
    expect(code, stderr).toBe(0);
    return JSON.parse(stdout) as unknown;
  }

  // Two runs of an outside CLI, each starting Node twice: slow on a busy machine.
  it("lists the tools and calls demo_snapshot", { timeout: 90_000 }, async () => {
    const listed = (await inspect(["tools/list"])) as { tools: Tool[] };
    expect(listed.tools.map((t) => t.name).sort()).toEqual([
      "demo_snapshot",
      "get_snapshot",
      "snapshot",
      "wallet",
    ]);
    const demo = (await inspect(["tools/call", "--tool-name", "demo_snapshot"])) as CallToolResult;
    expect(demo.isError).toBeFalsy();
    expect(demo.structuredContent).toMatchObject({
      _demo: true,
      requested_url: "https://example.com",
    });
  });
});

describe("both eras of MCP over stdio: the SDK v2 client", () => {
  /** A `secsnap mcp` process reached by the SDK v2 client in `mode`. */
  async function connectV2(mode: "auto" | { pin: string }, environment: Record<string, string>) {
    const client = new ClientV2(
      { name: "secsnap-test", version: "1.0.0" },
      { versionNegotiation: { mode } },
    );
    await client.connect(
      new StdioClientTransportV2({
        command: process.execPath,
        args: [...cliNodeArgs(), "mcp", "--api", bed.service.url, "--rpc", bed.devnet.rpcUrl],
        env: environment,
        cwd: ROOT,
        stderr: "pipe",
      }),
    );
    opened.push(client);
    return client;
  }

  it("pinned to 2026-07-28: lists the four tools, the demo, and pays `snapshot` once (one transfer)", async () => {
    const client = await connectV2({ pin: "2026-07-28" }, env(3));
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "demo_snapshot",
      "get_snapshot",
      "snapshot",
      "wallet",
    ]);
    const demo = await client.callTool({ name: "demo_snapshot", arguments: {} });
    expect(demo.structuredContent).toMatchObject({ _demo: true });

    const payer = bed.payer(3).address;
    const [before, payToBefore, latest] = await Promise.all([
      bed.balanceOf(payer),
      bed.balanceOf(bed.devnet.payTo),
      // Not viem's cached figure: this payer paid in the first test, a few blocks ago.
      bed.chain.getBlockNumber({ cacheTime: 0 }),
    ]);
    const fromBlock = latest + 1n;
    const paid = await client.callTool({ name: "snapshot", arguments: { url: bed.target.url } });
    expect(paid.isError, JSON.stringify(paid.content)).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ requested_url: bed.target.url });
    const moved = await bed.transfersFrom(payer, fromBlock);
    expect(moved.map((l) => [l.args.to, l.args.value])).toEqual([[bed.devnet.payTo, PRICE_UNITS]]);
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
    expect(await bed.balanceOf(bed.devnet.payTo)).toBe(payToBefore + PRICE_UNITS);
  });

  it("auto: negotiates 2026-07-28 and serves the demo", async () => {
    const client = await connectV2("auto", env());
    expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const demo = await client.callTool({ name: "demo_snapshot", arguments: {} });
    expect(demo.structuredContent).toMatchObject({ _demo: true });
  });
});

describe("the bundle's fast start (answers recorded from the SDK by the build)", () => {
  const BIN = join(ROOT, "bin", "secsnap.js");

  beforeAll(() => {
    if (staleReason() !== undefined) build();
  }, 120_000);

  it("answers initialize and tools/list as the SDK does, then the SDK serves the calls", async () => {
    const fromSources = await connect([], env(), [
      "--import",
      "tsx",
      join(ROOT, "src/cli/main.ts"),
    ]);
    const fromBundle = await connect([], env(), [BIN]);
    for (const read of [
      (c: Client) => c.getServerVersion(),
      (c: Client) => c.getServerCapabilities(),
      (c: Client) => c.listTools(),
    ]) {
      expect(await read(fromBundle.client)).toEqual(await read(fromSources.client));
    }
    const demo = (await fromBundle.client.callTool({
      name: "demo_snapshot",
      arguments: {},
    })) as CallToolResult;
    expect(demo.structuredContent).toMatchObject({ _demo: true });
  });

  it("leaves a 2026-07-28 session to the SDK: a first tools/list with the envelope gets its answer", async () => {
    const child = spawn(process.execPath, [BIN, "mcp", "--api", bed.service.url], {
      cwd: ROOT,
      env: env(),
    });
    const _meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta } })}\n`,
    );
    const line = await waitForLine(child.stdout, /"id":1[,}]/);
    child.stdin.end();
    await new Promise((resolve) => child.on("close", resolve));
    const { result } = JSON.parse(line) as { result: { resultType?: string; tools: unknown[] } };
    expect(result.resultType).toBe("complete");
    expect(result.tools).toHaveLength(4);
  });

  it("writes each answer once: the SDK's own answers to the early requests are dropped", async () => {
    const child = spawn(process.execPath, [BIN, "mcp", "--api", bed.service.url], {
      cwd: ROOT,
      env: env(),
    });
    const lines: string[] = [];
    let buffered = "";
    child.stdout.on("data", (d: Buffer) => {
      buffered += d.toString();
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      lines.push(...parts);
    });
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      },
    });
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    send({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "demo_snapshot", arguments: {} },
    });
    send({ jsonrpc: "2.0", id: 4, method: "tools/list" });
    // The call (a fetch of the demo) is answered after the second tools/list.
    await waitForLine(child.stdout, /"id":3[,}]/);
    child.stdin.end();
    await new Promise((resolve) => child.on("close", resolve));
    const ids = lines.map((l) => (JSON.parse(l) as { id: number }).id);
    expect(ids.sort()).toEqual([1, 2, 3, 4]);
    const answers = lines.map((l) => JSON.parse(l) as { id: number; result: unknown });
    const byId = new Map(answers.map((a) => [a.id, a.result]));
    expect(byId.get(1)).toMatchObject({ protocolVersion: "2025-06-18" });
    // The early tools/list (recorded) and the SDK's own later one are the same.
    expect(byId.get(2)).toEqual(byId.get(4));
    expect(byId.get(3)).toMatchObject({ structuredContent: { _demo: true } });
  });
});
