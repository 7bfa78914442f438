/**
 * POST /mcp beside POST /v1/snapshot, on one service, over the real devnet, one run:
 *
 * 1. Paid: a paid `snapshot` tools/call (the PaymentPayload in `_meta["x402/payment"]`, verify →
 *    snapshot → settle) beside the same paid call over POST /v1/snapshot (PAYMENT-SIGNATURE),
 *    alternating, each proof signed before its timer starts. Median ratio must be ≤ 1.15.
 * 2. Unpaid: a `snapshot` tools/call without payment (the PaymentRequired error result, one
 *    stateless JSON-RPC POST) beside the HTTP 402, both sent by the same fetch, alternating batches
 *    of sequential requests. Median ratio must be ≤ 1.5.
 * 3. Eras: the paid `snapshot` tools/call in MCP's current revision (2026-07-28: the SDK v2
 *    client pinned to it) beside the same call in a 2025 revision (the same client in its
 *    default mode, `initialize`), alternating, each proof signed before its timer starts.
 *    Median ratio must be ≤ 1.1.
 *
 *   tsx bench/mcp.ts     exits 1 if a ratio misses its target
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as StreamableHTTPClientTransportV2,
} from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { startDevnet } from "../src/devnet/devnet.js";
import { createApp } from "../src/http/app.js";
import { startServer } from "../src/http/server.js";
import { createPaymentGate } from "../src/payment/gate.js";
import { createSnapshotEngine, createUrlPolicy } from "../src/snapshot/index.js";
import { MemoryPaymentRecordStore } from "../src/store/index.js";
import { summarise } from "./lib/stats.js";

const PAID_TARGET_RATIO = 1.15;
const UNPAID_TARGET_RATIO = 1.5;
const ERA_TARGET_RATIO = 1.1;
const PAID_RUNS = 12;
const UNPAID_ROUNDS = 9;
const UNPAID_PER_ROUND = 100;

async function main(): Promise<number> {
  const devnet = await startDevnet({ rpcPort: 0, facilitatorPort: 0 });
  const site: Server = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/plain" }).end("ok"),
  );
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  const sitePort = (site.address() as AddressInfo).port;
  const probe: Server = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const probePort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const engine = createSnapshotEngine({
    timeoutMs: 5_000,
    maxRedirects: 10,
    allowedPorts: new Set([sitePort]),
    allowCidrs: ["127.0.0.0/8"],
    dnsServers: [],
    httpsProbePort: probePort,
  });
  const gate = createPaymentGate({
    store: new MemoryPaymentRecordStore(),
    payTo: devnet.payTo,
    networks: [devnet.network],
    priceUsdc: "0.05",
    facilitatorUrl: devnet.facilitatorUrl,
    devnet: true,
    supportedRetryMs: 0,
    log: () => {},
  });
  const urlPolicy = createUrlPolicy({
    allowedPorts: new Set([sitePort]),
    allowCidrs: ["127.0.0.0/8"],
  });
  const app = createApp({
    engine,
    urlPolicy,
    payment: gate.route,
    mcpPayment: gate.mcp,
    log: () => {},
  });
  const server = await startServer({ config: { host: "127.0.0.1", port: 0 }, app });
  const target = `http://127.0.0.1:${sitePort}/`;
  const body = JSON.stringify({ url: target });
  const key = devnet.payerPrivateKeys[2];
  if (!key) throw new Error("no payer");
  const signer = new x402Client();
  registerExactEvmScheme(signer, { signer: privateKeyToAccount(key) });
  const http = new x402HTTPClient(signer);

  const mcp = new Client({ name: "secsnap-bench", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
  await mcp.listTools();

  // The SDK v2 client in each era: the difference measured is the server's (and the era's wire).
  const eraClient = async (mode: "legacy" | { pin: string }) => {
    const client = new ClientV2(
      { name: "secsnap-bench", version: "1.0.0" },
      { versionNegotiation: { mode } },
    );
    await client.connect(new StreamableHTTPClientTransportV2(new URL(`${server.url}/mcp`)));
    await client.listTools();
    return client;
  };
  const legacyEra = await eraClient("legacy");
  const modernEra = await eraClient({ pin: "2026-07-28" });
  const paidEraCall = async (client: ClientV2): Promise<number> => {
    const call = { name: "snapshot", arguments: { url: target } };
    const unpaid = (await client.callTool(call)) as CallToolResult;
    const payload = await signer.createPaymentPayload(
      unpaid.structuredContent as unknown as PaymentRequired,
    );
    const started = performance.now();
    const result = (await client.callTool({
      ...call,
      _meta: { "x402/payment": payload },
    })) as CallToolResult;
    const elapsed = performance.now() - started;
    if (result.isError) throw new Error(`MCP paid call failed: ${JSON.stringify(result)}`);
    return elapsed;
  };

  const postHttp = (headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v1/snapshot`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
  const callMcp = async (meta?: Record<string, unknown>) =>
    (await mcp.callTool({
      name: "snapshot",
      arguments: { url: target },
      ...(meta && { _meta: meta }),
    })) as CallToolResult;

  // The unpaid tools/call as one stateless JSON-RPC POST by the same fetch as the HTTP side, so the
  // figure is the server's (the SDK client's own result checks are not in it).
  const toolsCall = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "snapshot", arguments: { url: target } },
  });
  const postMcp = () =>
    fetch(`${server.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
      },
      body: toolsCall,
    });

  let failed = false;
  try {
    // Warm both paths (the facilitator's /supported, the challenge, JIT).
    await (await postHttp()).text();
    await callMcp();

    // 1. Paid, alternating; each proof signed before the timer starts.
    const paidHttp: number[] = [];
    const paidMcp: number[] = [];
    for (let i = 0; i < PAID_RUNS; i++) {
      const challenge = await postHttp();
      await challenge.text();
      const required = decodePaymentRequiredHeader(challenge.headers.get("payment-required")!);
      const headers = http.encodePaymentSignatureHeader(
        await signer.createPaymentPayload(required),
      );
      let started = performance.now();
      const paid = await postHttp(headers);
      await paid.text();
      paidHttp.push(performance.now() - started);
      if (paid.status !== 200) throw new Error(`HTTP paid call answered ${paid.status}`);

      const unpaid = await callMcp();
      const payload = await signer.createPaymentPayload(
        unpaid.structuredContent as unknown as PaymentRequired,
      );
      started = performance.now();
      const result = await callMcp({ "x402/payment": payload });
      paidMcp.push(performance.now() - started);
      if (result.isError) throw new Error(`MCP paid call failed: ${JSON.stringify(result)}`);
    }

    // 2. Unpaid, alternating batches of sequential requests.
    const unpaidHttp: number[] = [];
    const unpaidMcp: number[] = [];
    for (let round = 0; round < UNPAID_ROUNDS; round++) {
      let started = performance.now();
      for (let i = 0; i < UNPAID_PER_ROUND; i++) await (await postHttp()).text();
      unpaidHttp.push((performance.now() - started) / UNPAID_PER_ROUND);
      started = performance.now();
      for (let i = 0; i < UNPAID_PER_ROUND; i++) await (await postMcp()).text();
      unpaidMcp.push((performance.now() - started) / UNPAID_PER_ROUND);
    }

    // 3. Paid, in each era, alternating.
    await paidEraCall(legacyEra);
    await paidEraCall(modernEra);
    const paidLegacy: number[] = [];
    const paidModern: number[] = [];
    for (let i = 0; i < PAID_RUNS; i++) {
      paidLegacy.push(await paidEraCall(legacyEra));
      paidModern.push(await paidEraCall(modernEra));
    }

    const judge = (
      name: string,
      mcpMs: number[],
      httpMs: number[],
      target: number,
      [mcpName, httpName] = ["/mcp", "/v1/snapshot"],
    ) => {
      const ratios = mcpMs.map((m, i) => m / (httpMs[i] as number));
      const ratio = summarise(ratios).median;
      const m = summarise(mcpMs);
      const h = summarise(httpMs);
      const ok = ratio <= target;
      console.log(
        `${name}: ${mcpName} median ${m.median.toFixed(2)} ms (min ${m.min.toFixed(2)}, max ${m.max.toFixed(2)}) · ` +
          `${httpName} median ${h.median.toFixed(2)} ms (min ${h.min.toFixed(2)}, max ${h.max.toFixed(2)}) · ` +
          `median ratio ${ratio.toFixed(3)} (target ≤ ${target}) ${ok ? "ok" : "MISSED"}`,
      );
      if (!ok) failed = true;
    };
    judge("paid snapshot", paidMcp, paidHttp, PAID_TARGET_RATIO);
    judge("unpaid call (PaymentRequired vs 402)", unpaidMcp, unpaidHttp, UNPAID_TARGET_RATIO);
    judge("paid snapshot, 2026-07-28 vs 2025", paidModern, paidLegacy, ERA_TARGET_RATIO, [
      "2026-07-28",
      "2025-11-25",
    ]);
  } finally {
    await mcp.close();
    await legacyEra.close();
    await modernEra.close();
    gate.close();
    await server.close(1_000);
    await engine.close();
    await new Promise<void>((resolve) => site.close(() => resolve()));
    await devnet.close();
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
