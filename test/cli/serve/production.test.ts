/**
 * `secsnap serve` in production mode (X402_PAY_TO set) as a real process, against a local
 * facilitator that answers only /supported: PUBLIC_URL in what the service says of itself, the
 * start-up check of the facilitator, a flood of unreadable payment proofs, and Ctrl-C.
 */
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { connect, type Socket } from "node:net";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { extractDiscoveryInfo } from "@x402/extensions/bazaar";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupportedFacilitator } from "../../fixtures/supported-facilitator.js";
import { closedPort } from "../../fixtures/targets.js";
import { cleanEnv, spawnCli } from "../run.js";

const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const BASE = "eip155:8453";
const BASE_SEPOLIA = "eip155:84532";

interface Served {
  child: ChildProcessWithoutNullStreams;
  /** Every output line so far, stdout and stderr. */
  lines: string[];
  /** The first line, or undefined when the process ended without listening. */
  first: Promise<string | undefined>;
  exited: Promise<number | null>;
}

function serve(env: Record<string, string>): Served {
  const child = spawnCli(
    ["serve"],
    cleanEnv({ PORT: "0", HOST: "127.0.0.1", X402_PAY_TO: PAY_TO, ...env }),
  );
  const lines: string[] = [];
  let resolveFirst: (line: string | undefined) => void = () => {};
  const first = new Promise<string | undefined>((resolve) => (resolveFirst = resolve));
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = "";
    stream.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split("\n");
      buffered = parts.pop() ?? "";
      for (const line of parts) {
        lines.push(line);
        if (/listening on/.test(line)) resolveFirst(line);
      }
    });
  }
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code) => {
      resolveFirst(undefined);
      resolve(code);
    }),
  );
  return { child, lines, first, exited };
}

/** The service's JSON log lines among `lines` (start-up lines are plain text). */
function jsonLines(lines: string[]): Array<{ msg?: string; status?: number; route?: string }> {
  return lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as never);
}

/** The messages of the event log (not the one line per request), as they were written. */
const eventMessages = (lines: string[]): string[] =>
  jsonLines(lines)
    .filter((line) => line.msg !== "request")
    .map((line) => line.msg ?? "");

const baseUrl = (first: string | undefined) => /listening on (http:\/\/\S+)/.exec(first ?? "")?.[1];

function postSnapshot(base: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/v1/snapshot`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ url: "https://example.com" }),
  });
}

const challengeOf = (response: Response): PaymentRequired =>
  decodePaymentRequiredHeader(response.headers.get("payment-required") ?? "");

describe("serve with PUBLIC_URL, and hostile payment headers", () => {
  let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>>;
  let served: Served;
  let base: string;

  beforeAll(async () => {
    facilitator = await startSupportedFacilitator([BASE_SEPOLIA]);
    served = serve({
      X402_FACILITATOR_URL: facilitator.url,
      X402_NETWORKS: "base-sepolia",
      PUBLIC_URL: "https://api.example.com/secsnap/",
      OPERATOR_CONTACT: "ops@example.com",
      // Room for the 1,000 refused proofs below: this is the gate's answer to each, not the
      // refused-proof budget (test/http/guards/rate-limit.e2e.test.ts).
      RATE_LIMIT_PER_MINUTE: "1000",
    });
    base = baseUrl(await served.first) ?? "";
    expect(base, served.lines.join("\n")).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  }, 60_000);

  afterAll(async () => {
    served?.child.kill("SIGKILL");
    await facilitator?.close();
  });

  it("names PUBLIC_URL, never the request's own URL, as the resource, the Bazaar listing and the server", async () => {
    const resource = "https://api.example.com/secsnap/v1/snapshot";
    // The first unpaid request goes through the route; the second through the fast path.
    for (let i = 0; i < 2; i++) {
      const unpaid = await postSnapshot(base);
      expect(unpaid.status).toBe(402);
      expect(challengeOf(unpaid).resource?.url).toBe(resource);
      // The x402 v1 challenge in the body names the same resource.
      const v1 = (await unpaid.json()) as { accepts: { resource: string }[] };
      expect(v1.accepts.map((entry) => entry.resource)).toEqual([resource]);
    }
    const challenge = challengeOf(await postSnapshot(base));

    // A facilitator's Bazaar lists the resource from what the client pays with.
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(generatePrivateKey()) });
    const payload = await client.createPaymentPayload(challenge);
    expect(extractDiscoveryInfo(payload, payload.accepted)?.resourceUrl).toBe(resource);
    // …and the service reads the proof carrying it (the scripted facilitator then fails: 503).
    const paid = await postSnapshot(
      base,
      new x402HTTPClient(client).encodePaymentSignatureHeader(payload),
    );
    expect(paid.status).toBe(503);

    const openapi = (await (await fetch(`${base}/openapi.json`)).json()) as {
      servers?: unknown;
      info: { contact?: unknown };
    };
    expect(openapi.servers).toEqual([{ url: "https://api.example.com/secsnap" }]);
    // OPERATOR_CONTACT: how the operator is reached (docs/agents.md).
    expect(openapi.info.contact).toEqual({ email: "ops@example.com" });
  });

  it("its page states the offered network and price, and PUBLIC_URL in the samples", async () => {
    const page = await (await fetch(`${base}/`)).text();
    expect(page).toContain("<strong>0.05 USDC</strong>");
    expect(page).toContain("Base Sepolia (eip155:84532).");
    expect(page).not.toContain("(eip155:8453)");
    expect(page).not.toContain("devnet");
    expect(page).toContain("--api https://api.example.com/secsnap");
  });

  it("answers 1,000 unreadable proofs with a 402 each saying so, in fewer than 20 log lines", async () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const malformed = [
      "garbage",
      "!!! not base64 !!!",
      "A".repeat(9_000),
      b64("not json"),
      b64("[".repeat(200) + "]".repeat(200)),
      b64(JSON.stringify({ x402Version: 2 })),
      b64(
        JSON.stringify({ x402Version: 1, scheme: "exact", network: "base-sepolia", payload: {} }),
      ),
      b64("\n".repeat(50) + "{}"),
    ];
    const before = served.lines.length;
    const answers: { status: number; error: unknown; challenge: boolean }[] = [];
    for (let batch = 0; batch < 20; batch++) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, async (_, i) => {
            const n = batch * 50 + i;
            const header = n % 2 === 0 ? "payment-signature" : "x-payment";
            const response = await postSnapshot(base, {
              [header]: malformed[(n >> 1) % malformed.length]!,
            });
            const body = (await response.json()) as { error?: unknown };
            return {
              status: response.status,
              error: body.error,
              challenge: response.headers.has("payment-required"),
            };
          }),
        )),
      );
    }
    expect(answers).toHaveLength(1_000);
    for (const answer of answers) {
      expect(answer).toEqual({
        status: 402,
        error: expect.stringMatching(/^Unreadable payment proof: (PAYMENT-SIGNATURE|X-PAYMENT) /),
        challenge: true,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 300)); // let the last lines arrive
    const logged = eventMessages(served.lines.slice(before));
    expect(logged.length, logged.join("\n")).toBeLessThan(20);
    expect(logged.some((line) => line.includes("unreadable payment proof"))).toBe(true);
    for (const line of logged) expect(line.length).toBeLessThanOrEqual(300);
    // Beside them, one request line per request.
    const requests = jsonLines(served.lines.slice(before)).filter((l) => l.msg === "request");
    expect(requests.filter((l) => l.status === 402 && l.route === "/v1/snapshot")).toHaveLength(
      1_000,
    );
  }, 120_000);
});

describe("the networks production sells on", () => {
  let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>>;
  beforeAll(async () => {
    facilitator = await startSupportedFacilitator([BASE, BASE_SEPOLIA]);
  });
  afterAll(() => facilitator?.close());

  /** The first line and the networks the challenge offers, of a start with `env`. */
  async function offered(env: Record<string, string>) {
    const served = serve({ X402_FACILITATOR_URL: facilitator.url, ...env });
    try {
      const first = await served.first;
      const base = baseUrl(first);
      expect(base, served.lines.join("\n")).toBeDefined();
      const networks = challengeOf(await postSnapshot(base!)).accepts.map((a) => a.network);
      return { first: first ?? "", networks, lines: [...served.lines] };
    } finally {
      served.child.kill("SIGKILL");
    }
  }

  it("is Base alone when X402_NETWORKS is unset: no test network for real money", async () => {
    const { first, networks } = await offered({});
    expect(networks).toEqual([BASE]);
    expect(first).toMatch(/\(mode: x402 on base, /);
    expect(first).not.toMatch(/TEST NETWORK|sepolia/i);
  }, 60_000);

  it("says at start, once per network, when no RPC can decide a lost settlement on chain", async () => {
    const unset = (await offered({ X402_NETWORKS: "base,base-sepolia" })).lines;
    const rpcLines = (lines: string[]) => lines.filter((l) => /X402_RPC_URL_/.test(l));
    expect(rpcLines(unset)).toHaveLength(2);
    expect(rpcLines(unset)[0]).toMatch(/X402_RPC_URL_BASE is unset: a settlement on base whose/);
    expect(rpcLines(unset)[1]).toMatch(/X402_RPC_URL_BASE_SEPOLIA is unset/);
    const set = await offered({ X402_RPC_URL_BASE: "http://127.0.0.1:9/rpc" });
    expect(rpcLines(set.lines)).toEqual([]);
  }, 60_000);

  it("offers a test network only when named, and the first line says so", async () => {
    const { first, networks } = await offered({ X402_NETWORKS: "base,base-sepolia" });
    expect(networks).toEqual([BASE, BASE_SEPOLIA]);
    expect(first).toMatch(
      /\(mode: x402 on base, base-sepolia \(TEST NETWORK base-sepolia: its USDC is worth nothing\), /,
    );
  }, 60_000);
});

describe("serve checks the facilitator at start", () => {
  it("stops with one line naming the network and the variables when the facilitator lacks a network", async () => {
    const facilitator = await startSupportedFacilitator([BASE_SEPOLIA]);
    try {
      // X402_NETWORKS defaults to base with X402_PAY_TO; this facilitator is testnet-only.
      const served = serve({ X402_FACILITATOR_URL: facilitator.url });
      const first = await Promise.race([served.first, served.exited.then(() => undefined)]);
      served.child.kill("SIGKILL");
      expect(first, "it must not start listening").toBeUndefined();
      expect(await served.exited).toBe(1);
      expect(served.lines).toHaveLength(1);
      expect(served.lines[0]).toMatch(/^secsnap: X402_NETWORKS .*base \(eip155:8453\)/);
      expect(served.lines[0]).toContain("X402_FACILITATOR_URL");
      expect(served.lines[0]).toContain(facilitator.url);
    } finally {
      await facilitator.close();
    }
  }, 60_000);

  it("stops with one line when the facilitator lacks x402 v1 on a configured network", async () => {
    const facilitator = await startSupportedFacilitator([BASE_SEPOLIA], 0, { v1: false });
    try {
      const served = serve({
        X402_FACILITATOR_URL: facilitator.url,
        X402_NETWORKS: "base-sepolia",
      });
      const first = await Promise.race([served.first, served.exited.then(() => undefined)]);
      served.child.kill("SIGKILL");
      expect(first, "it must not start listening").toBeUndefined();
      expect(await served.exited).toBe(1);
      expect(served.lines).toHaveLength(1);
      expect(served.lines[0]).toMatch(/^secsnap: X402_NETWORKS .*x402 v1 "exact" on base-sepolia/);
    } finally {
      await facilitator.close();
    }
  }, 60_000);

  it("warns once when the facilitator is unreachable, answers 503 until it answers, then serves", async () => {
    const port = await closedPort("127.0.0.1");
    const served = serve({
      X402_FACILITATOR_URL: `http://127.0.0.1:${port}`,
      X402_NETWORKS: "base-sepolia",
      // An RPC named, so the only events are the facilitator's (none is read here).
      X402_RPC_URL_BASE_SEPOLIA: "http://127.0.0.1:9/",
    });
    let facilitator: Awaited<ReturnType<typeof startSupportedFacilitator>> | undefined;
    try {
      const base = baseUrl(await served.first);
      expect(base, served.lines.join("\n")).toBeDefined();
      // Retried after at most a second each: three failed attempts, one line.
      for (let i = 0; i < 3; i++) {
        const response = await postSnapshot(base!);
        expect(response.status).toBe(503);
        expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
        await new Promise((resolve) => setTimeout(resolve, 1_100));
      }
      facilitator = await startSupportedFacilitator([BASE_SEPOLIA], port);
      expect((await postSnapshot(base!)).status).toBe(402);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const others = eventMessages(served.lines);
      expect(others).toEqual([
        expect.stringMatching(
          new RegExp(`^x402 facilitator not usable yet \\(http://127\\.0\\.0\\.1:${port}\\)`),
        ),
        expect.stringMatching(/^x402 facilitator answers now/),
      ]);
    } finally {
      served.child.kill("SIGKILL");
      await facilitator?.close();
    }
  }, 60_000);
});

describe("serve on Ctrl-C", () => {
  it("drains on the first SIGINT, and a second one a moment later forces the exit", async () => {
    const facilitator = await startSupportedFacilitator([BASE_SEPOLIA]);
    // The drain would wait for the snapshot deadline: ten minutes.
    const served = serve({
      X402_FACILITATOR_URL: facilitator.url,
      X402_NETWORKS: "base-sepolia",
      SNAPSHOT_TIMEOUT_MS: "600000",
    });
    let socket: Socket | undefined;
    try {
      const { hostname, port } = new URL(baseUrl(await served.first) ?? "");
      // A request whose body never finishes keeps the drain going.
      socket = await new Promise<Socket>((resolve, reject) => {
        const s = connect(Number(port), hostname, () => resolve(s));
        s.on("error", reject);
      });
      socket.write(
        `POST /v1/snapshot HTTP/1.1\r\nhost: ${hostname}\r\ncontent-length: 100\r\n\r\n{`,
      );
      served.child.kill("SIGINT");
      for (let i = 0; i < 200 && !served.lines.some((l) => /^SIGINT: shutting down/.test(l)); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(served.lines).toContainEqual(expect.stringMatching(/^SIGINT: shutting down/));
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // a second keypress, not an echo
      served.child.kill("SIGINT");
      expect(await served.exited).toBe(1);
    } finally {
      socket?.destroy();
      served.child.kill("SIGKILL");
      await facilitator.close();
    }
  }, 60_000);
});
