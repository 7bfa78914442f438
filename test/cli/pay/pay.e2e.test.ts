/**
 * `secsnap pay` with real money in mind (docs/contract.md §8), in process (runCli) against real
 * services on the real devnet: which network it pays on, which key it may use, its local price
 * limit, a service under a path prefix, one signed proof with one payment id resent after a 503,
 * a lost answer or a 409 in progress, and the last line saying what was charged, checked against
 * the chain (Ctrl-C in a real process).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { AddressInfo } from "node:net";
import type { Network, SettleResponse } from "@x402/core/types";
import { verifyReceiptSignatureJWS, type JWSSignedReceipt } from "@x402/extensions/offer-receipt";
import type { JWK } from "jose";
import { setTimeout as sleep } from "node:timers/promises";
import { testActions, type Address, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authorizationUsed as authorizationUsedOnChain } from "../../fixtures/usdc.js";
import type { RunningServer } from "../../../src/http/index.js";
import { MAX_SENDS } from "../../../src/cli/pay/send.js";
import { createSnapshotEngine } from "../../../src/snapshot/index.js";
import type { SnapshotEngine } from "../../../src/snapshot/index.js";
import { startDishonestApi, type DishonestApi } from "../../fixtures/dishonest-api.js";
import { startFacilitatorProxy, type FacilitatorProxy } from "../../fixtures/facilitator-proxy.js";
import { startForwardingProxy, type ForwardingProxy } from "../../fixtures/forwarding-proxy.js";
import {
  claimingBaseMainnet,
  startPaidBed,
  startPaidService,
  type PaidBed,
} from "../../fixtures/paid-service.js";
import { startOtherChain } from "../../fixtures/other-chain.js";
import { closedPort } from "../../fixtures/targets.js";
import { payerEnv, runCli, spawnCli, waitForLine } from "../run.js";

const PRICE_UNITS = 50_000n;
const BASE = "eip155:8453" as Network;

let bed: PaidBed;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  bed = await startPaidBed();
}, 120_000);

afterAll(async () => {
  await Promise.all(opened.map((x) => x.close()));
  await bed?.close();
});

/** The service as `secsnap serve` wires it, on the devnet's chain, with a 1 s Retry-After. */
async function startService(offer: {
  facilitatorUrl: string;
  networks?: Network[];
  devnet?: boolean;
  /** Another engine, and the target ports its URL policy allows. */
  snapshots?: { engine: SnapshotEngine; ports: number[] };
}): Promise<RunningServer> {
  const server = await startPaidService({
    engine: offer.snapshots?.engine ?? bed.target.engine,
    ports: offer.snapshots?.ports ?? [bed.target.port],
    payTo: bed.devnet.payTo,
    networks: offer.networks ?? [bed.devnet.network],
    facilitatorUrl: offer.facilitatorUrl,
    // Devnet mode reads its own anvil, as `serve` does: an unknown outcome is the chain's to say.
    ...(offer.devnet && { devnet: true, rpcUrl: bed.devnet.rpcUrl }),
  });
  opened.push({ close: () => server.close(1_000) });
  return server;
}

async function proxy(
  options: Parameters<typeof startForwardingProxy>[0],
): Promise<ForwardingProxy> {
  const started = await startForwardingProxy(options);
  opened.push(started);
  return started;
}

async function facilitatorProxy(): Promise<FacilitatorProxy> {
  const started = await startFacilitatorProxy(bed.devnet.facilitatorUrl);
  opened.push(started);
  return started;
}

/** The environment of `secsnap pay`, with this payer's key or none. */
const env = (payerIndex?: number) => payerEnv(bed.devnet, payerIndex);

/** Facilitator calls seen by a proxy: the proof's signature, per path. */
function facilitatorCalls(facilitator: ForwardingProxy, path: string): string[] {
  return facilitator.requests
    .filter((r) => r.path === path)
    .map((r) => {
      const body = JSON.parse(r.body) as { paymentPayload: { payload: { signature: string } } };
      return body.paymentPayload.payload.signature;
    });
}

describe("which network", () => {
  let facilitator: ForwardingProxy;
  let twoNetworks: RunningServer;

  beforeAll(async () => {
    // The devnet's facilitator, also claiming Base mainnet: the challenge then offers both
    // networks as production's default does. Mainnet proofs are refused here (no such chain).
    facilitator = await proxy({
      upstream: bed.devnet.facilitatorUrl,
      rewrite: claimingBaseMainnet,
      intercept: (request) => {
        if (request.path !== "/verify") return undefined;
        const { paymentRequirements } = JSON.parse(request.body) as {
          paymentRequirements: { network: string };
        };
        if (paymentRequirements.network !== BASE) return undefined;
        return {
          status: 200,
          body: JSON.stringify({ isValid: false, invalidReason: "invalid_network" }),
        };
      },
    });
    twoNetworks = await startService({
      facilitatorUrl: facilitator.url,
      networks: [BASE, bed.devnet.network],
    });
  });

  it("with Base and Base Sepolia offered, pays on the testnet, saying so before it signs", async () => {
    const before = await bed.balanceOf(bed.payer(3).address);
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", twoNetworks.url],
      env(3),
    );
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ requested_url: bed.target.url, reachable: true });
    expect(stderr).toContain(
      `paying 0.05 USDC on base-sepolia (eip155:84532) to ${bed.devnet.payTo} from ${bed.payer(3).address}`,
    );
    expect(await bed.balanceOf(bed.payer(3).address)).toBe(before - PRICE_UNITS);
  });

  it("pays on Base mainnet only with --network base", async () => {
    const seen = facilitator.requests.length;
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", twoNetworks.url, "--network", "base"],
      env(3),
    );
    expect(stderr).toContain(
      `paying 0.05 USDC on base (eip155:8453) to ${bed.devnet.payTo} from ${bed.payer(3).address}`,
    );
    // What it signed is a mainnet proof, which this facilitator refuses: 402, exit 3.
    const verified = facilitator.requests.slice(seen).filter((r) => r.path === "/verify");
    expect(verified).toHaveLength(1);
    const sent = JSON.parse(verified[0]!.body) as { paymentPayload: { accepted: unknown } };
    expect(sent.paymentPayload.accepted).toMatchObject({ network: BASE, amount: "50000" });
    expect(code).toBe(3);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/answered 402/);
  });

  it("pays on Base mainnet when it is the only network offered", async () => {
    const mainnetOnly = await startService({ facilitatorUrl: facilitator.url, networks: [BASE] });
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", mainnetOnly.url],
      env(3),
    );
    expect(stderr).toContain(`paying 0.05 USDC on base (eip155:8453) to ${bed.devnet.payTo}`);
    expect(code).toBe(3); // the mainnet proof, refused by this facilitator
  });

  it("without a key it refuses and signs nothing, though Base Sepolia is offered", async () => {
    const seen = facilitator.requests.length;
    const { code, stderr } = await runCli(["pay", bed.target.url, "--api", twoNetworks.url], env());
    expect(code).toBe(1);
    expect(stderr).toContain(
      "the API asks for payment on base-sepolia (eip155:84532): set SECSNAP_PRIVATE_KEY",
    );
    expect(stderr).not.toContain("paying");
    expect(facilitator.requests.slice(seen).filter((r) => r.path !== "/supported")).toEqual([]);
  });
});

describe("the devnet's public key", () => {
  it("is used when the service says it runs in devnet mode", async () => {
    const account = bed.payer(0); // anvil 2
    const before = await bed.balanceOf(account.address);
    const { code, stderr } = await runCli(["pay", bed.target.url, "--api", bed.service.url], env());
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`devnet: paying from anvil test account 2 (${account.address})`);
    expect(await bed.balanceOf(account.address)).toBe(before - PRICE_UNITS);
  });

  it("is not used by a service that offers only Base Sepolia without saying devnet", async () => {
    const plain = await startService({ facilitatorUrl: bed.devnet.facilitatorUrl });
    const account = bed.payer(0);
    const before = await bed.balanceOf(account.address);
    const { code, stderr } = await runCli(["pay", bed.target.url, "--api", plain.url], env());
    expect(code).toBe(1);
    expect(stderr).toContain("set SECSNAP_PRIVATE_KEY");
    expect(stderr).not.toContain("devnet:");
    expect(await bed.balanceOf(account.address)).toBe(before);
  });
});

describe("on a terminal", () => {
  it("prints the readable summary, grade and findings included; --json prints the JSON", async () => {
    const payer = bed.payer(7).address;
    const before = await bed.balanceOf(payer);
    const args = ["pay", bed.target.url, "--api", bed.service.url];
    const shown = await runCli(args, { ...env(7), NO_COLOR: "1" }, { tty: true });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/✗ no\s+Strict-Transport-Security \(HSTS\)/);
    expect(shown.stdout).toMatch(/Grade (A\+|[A-D][+-]?|F) \(score \d+\/100\)/);
    expect(shown.stdout).not.toContain('"requested_url"');
    const json = await runCli([...args, "--json"], env(7), { tty: true });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as { grade: string; findings: unknown[] };
    expect(shown.stdout).toContain(`Grade ${report.grade} `);
    // Two reports, two payments, each of the price.
    expect(await bed.balanceOf(payer)).toBe(before - 2n * PRICE_UNITS);
  });
});

describe("proof of purchase", () => {
  for (const v1 of [false, true]) {
    it(`${v1 ? "x402 v1" : "x402 v2"}: names the report's snapshot_id and keeps the settlement with its signed receipt in --receipt`, async () => {
      const payer = bed.payer(6).address;
      const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
      const dir = mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "receipt-"));
      const file = join(dir, "receipt.json");
      const { code, stdout, stderr } = await runCli(
        [
          "pay",
          bed.target.url,
          "--api",
          bed.service.url,
          "--receipt",
          file,
          ...(v1 ? ["--v1"] : []),
        ],
        env(6),
      );
      expect(code, stderr).toBe(0);
      const report = JSON.parse(stdout) as { proof: { snapshot_id: string; transaction: string } };
      expect(stderr).toContain(`secsnap pay: snapshot_id ${report.proof.snapshot_id}\n`);
      expect(stderr).toContain(`secsnap pay: settlement and receipt kept in ${file}\n`);
      // The one transfer of the call is the transaction the report and the receipt name.
      const transfers = await bed.transfersFrom(payer, fromBlock);
      expect(transfers.map((t) => t.transactionHash)).toEqual([report.proof.transaction]);
      const kept = JSON.parse(readFileSync(file, "utf8")) as SettleResponse;
      expect(kept).toMatchObject({ success: true, transaction: report.proof.transaction });
      const receipt = kept.extensions?.["offer-receipt"] as { info: { receipt: JWSSignedReceipt } };
      // The key the service serves: its JWKS has one Ed25519 key.
      const served = await fetch(new URL("/.well-known/jwks.json", bed.service.url));
      const [{ kty, crv, x }] = ((await served.json()) as { keys: [Required<JWK>] }).keys;
      const signed = await verifyReceiptSignatureJWS(receipt.info.receipt, { kty, crv, x });
      expect(signed).toMatchObject({ transaction: report.proof.transaction });
      expect(signed.payer.toLowerCase()).toBe(payer.toLowerCase());
      expect(lastLine(stderr)).toMatch(/^secsnap pay: charged 0\.05 USDC /);
    });
  }

  it("--output keeps the report, the receipt beside it, and secsnap verify accepts the report", async () => {
    const payer = bed.payer(6).address;
    const before = await bed.balanceOf(payer);
    const dir = mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "output-"));
    const file = join(dir, "report.json");
    const paid = await runCli(
      ["pay", bed.target.url, "--api", bed.service.url, "--output", file],
      env(6),
    );
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.stdout).toBe("");
    expect(paid.stderr).toContain(`secsnap pay: report kept in ${file}\n`);
    const receiptFile = join(dir, "report.receipt.json");
    expect(paid.stderr).toContain(`secsnap pay: settlement and receipt kept in ${receiptFile}\n`);
    const report = JSON.parse(readFileSync(file, "utf8")) as { proof: { transaction: string } };
    const kept = JSON.parse(readFileSync(receiptFile, "utf8")) as SettleResponse;
    expect(kept.transaction).toBe(report.proof.transaction);
    expect(kept.extensions?.["offer-receipt"]).toBeDefined();
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
    const verified = await runCli(["verify", file, "--service", bed.service.url]);
    expect(verified.code, verified.stderr).toBe(0);
  });

  it("--output and --receipt naming one file: exit 1 before anything is signed", async () => {
    const file = join(
      mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "same-")),
      "x.json",
    );
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", bed.service.url, "--output", file, "--receipt", file],
      env(6),
    );
    expect(code).toBe(1);
    expect(stderr).toContain("--output and --receipt name the same file");
    expect(stderr).not.toContain("paying");
  });

  it("--receipt in a directory that does not exist: exit 1 before anything is signed", async () => {
    const before = await bed.balanceOf(bed.payer(6).address);
    const file = join(missingDir(), "receipt.json");
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", bed.service.url, "--receipt", file],
      env(6),
    );
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain(`--receipt: cannot write in ${dirname(file)}`);
    expect(stderr).not.toContain("paying");
    expect(await bed.balanceOf(bed.payer(6).address)).toBe(before);
  });
});

/** A directory that does not exist, so nothing can be written in it. */
function missingDir(): string {
  return join(mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "none-")), "missing");
}

describe("--max-usdc", () => {
  it("refuses a higher price before signing, with its own line and exit code 3", async () => {
    const before = await bed.balanceOf(bed.payer(4).address);
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", bed.service.url, "--max-usdc", "0.01"],
      env(4),
    );
    expect(code).toBe(3);
    expect(stdout).toBe("");
    expect(stderr).toBe(
      "secsnap pay: price 0.05 USDC exceeds --max-usdc 0.01\n" +
        "secsnap pay: nothing was charged (nothing was signed)\n",
    );
    expect(await bed.balanceOf(bed.payer(4).address)).toBe(before);
  });
});

describe("--api", () => {
  it("keeps its path: a service mounted under a prefix is paid there", async () => {
    const mounted = await proxy({ upstream: bed.service.url, prefix: "/tools/secsnap" });
    const before = await bed.balanceOf(bed.payer(4).address);
    const { code, stderr } = await runCli(["pay", bed.target.url, "--api", mounted.url], env(4));
    expect(code, stderr).toBe(0);
    expect(mounted.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /v1/snapshot",
      "POST /v1/snapshot",
    ]);
    expect(await bed.balanceOf(bed.payer(4).address)).toBe(before - PRICE_UNITS);
  });

  it("takes the route itself too: …/v1/snapshot is not added twice; the charge is named", async () => {
    const mounted = await proxy({ upstream: bed.service.url, prefix: "/tools/secsnap" });
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", `${mounted.url}/v1/snapshot`],
      env(4),
    );
    expect(code, stderr).toBe(0);
    expect(mounted.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /v1/snapshot",
      "POST /v1/snapshot",
    ]);
    expect(lastLine(stderr)).toMatch(
      /^secsnap pay: charged 0\.05 USDC \(50000 units of 0x[0-9a-fA-F]{40}\) on base-sepolia \(eip155:84532\) to 0x[0-9a-fA-F]{40}; settlement transaction: 0x[0-9a-f]{64}$/,
    );
  });

  it("a 404 names the URL asked and how --api is read; nothing was charged", async () => {
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", `${bed.service.url}/wrong/path`],
      env(4),
    );
    expect(code).toBe(4);
    expect(stderr).toContain(
      `the API answered 404: {"error":"not found","code":"not_found"} (asked ${bed.service.url}/wrong/path/v1/snapshot: ` +
        "--api is the service's base URL, /v1/snapshot is added to it)",
    );
    expect(lastLine(stderr)).toBe("secsnap pay: nothing was charged (nothing was signed)");
  });
});

describe("503 after a signed proof", () => {
  /** The devnet's facilitator, failing the first `failures` settles with a 500 (not forwarded). */
  async function failingSettles(failures: number): Promise<ForwardingProxy> {
    let settles = 0;
    return proxy({
      upstream: bed.devnet.facilitatorUrl,
      intercept: (request) => {
        if (request.path !== "/settle" || ++settles > failures) return undefined;
        return { status: 500, body: JSON.stringify({ error: "settle failed (test)" }) };
      },
    });
  }

  it("resends the same proof, pays once and prints the report", async () => {
    const facilitator = await failingSettles(1);
    const service = await startService({ facilitatorUrl: facilitator.url, devnet: true });
    const before = await bed.balanceOf(bed.payer(5).address);
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", service.url],
      env(5),
    );
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ requested_url: bed.target.url });
    expect(stderr).toMatch(/answered 503 .*sending the same proof again in 1s/);
    const settled = facilitatorCalls(facilitator, "/settle");
    expect(settled).toHaveLength(2);
    expect(new Set([...settled, ...facilitatorCalls(facilitator, "/verify")]).size).toBe(1);
    expect(await bed.balanceOf(bed.payer(5).address)).toBe(before - PRICE_UNITS);
  });

  it("gives up after a bounded number of sends, exit 4, never signing a second proof", async () => {
    const facilitator = await failingSettles(Infinity);
    const service = await startService({ facilitatorUrl: facilitator.url, devnet: true });
    const before = await bed.balanceOf(bed.payer(5).address);
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", service.url, "--rpc", bed.devnet.rpcUrl],
      env(5),
    );
    expect(code).toBe(4);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/the API answered 503/);
    expect(lastLine(stderr)).toMatch(
      /^secsnap pay: not charged: the chain says authorization 0x[0-9a-f]{64} /,
    );
    const settled = facilitatorCalls(facilitator, "/settle");
    expect(settled).toHaveLength(MAX_SENDS);
    expect(new Set(settled).size).toBe(1);
    expect(await bed.balanceOf(bed.payer(5).address)).toBe(before);
  });
});

describe("a paid request lost on the way", () => {
  it("is sent again with the same proof: one signature, one transfer, the report", async () => {
    let paidSends = 0;
    const lossy = await proxy({
      upstream: bed.service.url,
      drop: (request) => request.headers["payment-signature"] !== undefined && ++paidSends === 1,
    });
    const before = await bed.balanceOf(bed.payer(6).address);
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", lossy.url],
      env(6),
    );
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ requested_url: bed.target.url });
    expect(stderr).toMatch(
      /did not answer .*whether you were charged is not known yet — sending the same proof again in \d+s is safe \(charged at most once\)/,
    );
    const proofs = lossy.requests.map((r) => r.headers["payment-signature"]).filter(Boolean);
    expect(proofs).toHaveLength(2);
    expect(new Set(proofs).size).toBe(1);
    expect(await bed.balanceOf(bed.payer(6).address)).toBe(before - PRICE_UNITS);
  });
});

describe("exit codes", () => {
  it("2 for a SnapshotError, before anything is signed", async () => {
    const { code, stderr } = await runCli(
      ["pay", "http://10.1.2.3/", "--api", bed.service.url],
      env(4),
    );
    expect(code).toBe(2);
    expect(stderr).toMatch(/answered 400.*ssrf/);
    expect(stderr).not.toContain("paying");
    expect(lastLine(stderr)).toBe("secsnap pay: nothing was charged (nothing was signed)");
  });

  it("1 for an unknown --network", async () => {
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", bed.service.url, "--network", "ethereum"],
      env(4),
    );
    expect(code).toBe(1);
    expect(stderr).toContain("--network must be one of base, base-sepolia");
  });

  it("3 when the asked-for network is not offered, before signing", async () => {
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", bed.service.url, "--network", "base"],
      env(4),
    );
    expect(code).toBe(3);
    expect(stderr).toContain("--network base is not offered by the API");
    expect(stderr).not.toContain("paying");
  });
});

/** The last line `secsnap pay` wrote: the one that says whether anything was charged. */
function lastLine(text: string): string {
  return text.trimEnd().split("\n").at(-1) ?? "";
}

/** A proof as the service received it: the decoded `PAYMENT-SIGNATURE` or `X-PAYMENT`. */
interface SentProof {
  header: string;
  x402Version: number;
  paymentId: string | undefined;
  from: Address;
  nonce: Hex;
}

/** The proofs that went through a proxy in front of the service, in order. */
function proofsSent(front: ForwardingProxy): SentProof[] {
  return front.requests.flatMap((r) => {
    const header = r.headers["payment-signature"] ?? r.headers["x-payment"];
    if (typeof header !== "string") return [];
    const decoded = JSON.parse(Buffer.from(header, "base64").toString()) as {
      x402Version: number;
      extensions?: { "payment-identifier"?: { info?: { id?: string } } };
      payload: { authorization: { from: Address; nonce: Hex } };
    };
    const { from, nonce } = decoded.payload.authorization;
    const paymentId = decoded.extensions?.["payment-identifier"]?.info?.id;
    return [{ header, x402Version: decoded.x402Version, paymentId, from, nonce }];
  });
}

function authorizationUsed(proof: SentProof): Promise<boolean> {
  return authorizationUsedOnChain(bed.chain, bed.devnet.usdcAddress, proof.from, proof.nonce);
}

describe("the payment id", () => {
  it("is sent with every v2 proof, fresh per call", async () => {
    const front = await proxy({ upstream: bed.service.url });
    for (let call = 0; call < 2; call++) {
      const { code, stderr } = await runCli(["pay", bed.target.url, "--api", front.url], env(1));
      expect(code, stderr).toBe(0);
    }
    const proofs = proofsSent(front);
    expect(proofs).toHaveLength(2);
    expect(proofs.map((p) => p.x402Version)).toEqual([2, 2]);
    for (const proof of proofs) expect(proof.paymentId).toMatch(/^pay_[0-9a-f]{32}$/);
    expect(proofs[0]?.paymentId).not.toBe(proofs[1]?.paymentId);
  });

  it("is sent inside the x402 v1 payload's extensions with --v1", async () => {
    const front = await proxy({ upstream: bed.service.url });
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", front.url, "--v1"],
      env(1),
    );
    expect(code, stderr).toBe(0);
    const [proof, ...more] = proofsSent(front);
    expect(more).toEqual([]);
    expect(front.requests.at(-1)?.headers["x-payment"]).toBeDefined();
    expect(proof?.x402Version).toBe(1);
    expect(proof?.paymentId).toMatch(/^pay_[0-9a-f]{32}$/);
  });
});

describe("an answer lost after the service got the proof", () => {
  for (const v1 of [false, true]) {
    const flag = v1 ? ["--v1"] : [];
    it(`${v1 ? "x402 v1" : "x402 v2"}: the same proof and id again, the report, one transfer`, async () => {
      let paid = 0;
      const front = await proxy({
        upstream: bed.service.url,
        loseAnswer: (r) =>
          (r.headers["payment-signature"] ?? r.headers["x-payment"]) !== undefined && ++paid === 1,
      });
      const payer = bed.payer(2).address;
      const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
      const before = await bed.balanceOf(payer);
      const { code, stdout, stderr } = await runCli(
        ["pay", bed.target.url, "--api", front.url, "--rpc", bed.devnet.rpcUrl, ...flag],
        env(2),
      );
      const proofs = proofsSent(front);
      expect(proofs.length).toBeGreaterThanOrEqual(2);
      expect(new Set(proofs.map((p) => p.header)).size).toBe(1);
      expect(proofs[0]?.paymentId).toMatch(/^pay_/);
      expect(stderr).toMatch(
        /did not answer .*whether you were charged is not known yet — sending the same proof again in \d+s is safe \(charged at most once\)/,
      );
      expect(await bed.transfersFrom(payer, fromBlock)).toHaveLength(1);
      expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
      expect(code, stderr).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({ requested_url: bed.target.url });
    });
  }

  it("a 409 in progress is waited out with the same proof until the report comes", async () => {
    const facilitator = await facilitatorProxy();
    const service = await startService({ facilitatorUrl: facilitator.url, devnet: true });
    const settle = facilitator.holdNextSettle();
    let paid = 0;
    const front = await proxy({
      upstream: service.url,
      // The held settlement goes on once a resend has been answered 409: at the third send.
      intercept: (r) => {
        if (r.headers["payment-signature"] !== undefined && ++paid === 3) settle.release();
        return undefined;
      },
      loseAnswer: (r) => r.headers["payment-signature"] !== undefined && paid === 1,
    });
    const payer = bed.payer(2).address;
    const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", front.url, "--rpc", bed.devnet.rpcUrl],
      env(2),
    );
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ requested_url: bed.target.url });
    expect(stderr).toMatch(/answered 409, in progress .*sending the same proof again/);
    expect(new Set(proofsSent(front).map((p) => p.header)).size).toBe(1);
    expect(facilitator.settles.forwarded).toBe(1);
    expect(await bed.transfersFrom(payer, fromBlock)).toHaveLength(1);
  });

  for (const v1 of [false, true]) {
    it(`${v1 ? "x402 v1" : "x402 v2"}: a settlement lost between service and facilitator is recovered by the resend`, async () => {
      const facilitator = await facilitatorProxy();
      const service = await startService({ facilitatorUrl: facilitator.url, devnet: true });
      facilitator.failNextSettle("settle-then-drop");
      const payer = bed.payer(2).address;
      const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
      const { code, stdout, stderr } = await runCli(
        [
          "pay",
          bed.target.url,
          "--api",
          service.url,
          "--rpc",
          bed.devnet.rpcUrl,
          ...(v1 ? ["--v1"] : []),
        ],
        env(2),
      );
      expect(code, stderr).toBe(0);
      expect(JSON.parse(stdout)).toMatchObject({ requested_url: bed.target.url });
      expect(stderr).toMatch(/answered 503 .*sending the same proof again/);
      expect(await bed.transfersFrom(payer, fromBlock)).toHaveLength(1);
    });
  }
});

describe("the line that says whether anything was charged", () => {
  it("after the API's 400 to a sent proof: the chain says not charged (exit 2)", async () => {
    const closed = await closedPort("127.0.0.1");
    const refusing = createSnapshotEngine({
      timeoutMs: 5_000,
      maxRedirects: 10,
      allowedPorts: new Set([closed]),
      allowCidrs: ["127.0.0.0/8"],
      dnsServers: [],
      httpsProbePort: closed,
    });
    opened.push({ close: () => refusing.close() });
    const facilitator = await facilitatorProxy();
    const service = await startService({
      facilitatorUrl: facilitator.url,
      devnet: true,
      snapshots: { engine: refusing, ports: [closed] },
    });
    const payer = bed.payer(2).address;
    const before = await bed.balanceOf(payer);
    const { code, stdout, stderr } = await runCli(
      ["pay", `http://127.0.0.1:${closed}/`, "--api", service.url, "--rpc", bed.devnet.rpcUrl],
      env(2),
    );
    expect(stdout).toBe("");
    expect(stderr).toMatch(/^paying 0\.05 USDC/m);
    expect(stderr).toMatch(/the API answered 400: .*unreachable/);
    expect(facilitator.verifies.seen).toBe(1); // the proof went out and was verified
    expect(facilitator.settles.seen).toBe(0);
    // The proof left: whether it was charged is the chain's word, not the API's.
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: not charged: the chain says authorization 0x[0-9a-f]{64} from ${payer} is ` +
          `unused on base-sepolia \\(eip155:84532\\); it can still be used until \\S+Z, then it expires$`,
      ),
    );
    expect(code).toBe(2);
    expect(await bed.balanceOf(payer)).toBe(before);
  });

  /** A service that never gets the paid request: every send of the proof is cut on the way. */
  async function goneAfterTheChallenge(): Promise<ForwardingProxy> {
    return proxy({
      upstream: bed.service.url,
      drop: (r) => r.headers["payment-signature"] !== undefined,
    });
  }

  it("no answer to any send, the proof never arrived: the chain says not charged (exit 4)", async () => {
    const front = await goneAfterTheChallenge();
    const payer = bed.payer(2).address;
    const before = await bed.balanceOf(payer);
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", front.url, "--rpc", bed.devnet.rpcUrl, "--timeout", "3"],
      env(2),
    );
    const proofs = proofsSent(front);
    expect(proofs.length, stderr).toBeGreaterThanOrEqual(2);
    expect(new Set(proofs.map((p) => p.header)).size).toBe(1);
    const proof = proofs[0]!;
    expect(await authorizationUsed(proof)).toBe(false);
    // Every resend says the charge is not known yet and that resending is safe.
    expect(stderr).toContain("secsnap pay: the service did not answer (");
    expect(stderr).toMatch(
      /; whether you were charged is not known yet — sending the same proof again in \d+s is safe \(charged at most once\)\n/,
    );
    expect(stderr).toMatch(
      /\nsecsnap pay: the service did not answer the signed proof after \d+ sends \(.*\); whether you were charged is what the chain says, on the next line\nsecsnap pay: not charged: /,
    );
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: not charged: the chain says authorization ${proof.nonce} from ${proof.from} is unused on ` +
          `base-sepolia \\(eip155:84532\\); it can still be used until \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, then it expires$`,
      ),
    );
    expect(code).toBe(4);
    expect(await bed.balanceOf(payer)).toBe(before);
  });

  it("no answer after the transfer: the chain says charged, naming the transaction (exit 4)", async () => {
    const facilitator = await facilitatorProxy();
    const service = await startService({ facilitatorUrl: facilitator.url, devnet: true });
    // Settled on chain, then the service hangs on the facilitator's answer: pay's time runs out.
    facilitator.failNextSettle("settle-then-hold");
    const payer = bed.payer(2).address;
    const before = await bed.balanceOf(payer);
    const { code, stdout, stderr } = await runCli(
      ["pay", bed.target.url, "--api", service.url, "--rpc", bed.devnet.rpcUrl, "--timeout", "3"],
      env(2),
    );
    expect(stdout).toBe("");
    expect(facilitator.settles.held).toBe(1);
    const line = lastLine(stderr);
    expect(line).toMatch(
      new RegExp(
        `^secsnap pay: charged 0\\.05 USDC on base-sepolia \\(eip155:84532\\) to ${bed.devnet.payTo}, ` +
          `without a report \\(tx 0x[0-9a-f]{64}\\)$`,
      ),
    );
    const tx = /tx (0x[0-9a-f]{64})/.exec(line)![1] as Hex;
    const receipt = await bed.chain.getTransactionReceipt({ hash: tx });
    expect(receipt.status).toBe("success");
    const moved = await bed.transfersFrom(payer, receipt.blockNumber);
    expect(moved.map((l) => [l.transactionHash, l.args.to, l.args.value])).toEqual([
      [tx, bed.devnet.payTo, PRICE_UNITS],
    ]);
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
    expect(code).toBe(4);
  });

  it("the chain unreadable: unknown whether charged, with what to check (exit 4)", async () => {
    const front = await goneAfterTheChallenge();
    const deadRpc = `http://127.0.0.1:${await closedPort("127.0.0.1")}`;
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", front.url, "--rpc", deadRpc, "--timeout", "3"],
      env(2),
    );
    const proof = proofsSent(front)[0]!;
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: unknown whether charged: cannot read ${deadRpc}.*; check authorization ` +
          `${proof.nonce} from ${proof.from} \\(authorizationState of USDC ${bed.devnet.usdcAddress} ` +
          `on base-sepolia \\(eip155:84532\\)\\), usable until \\S+Z; --rpc URL reads another node$`,
      ),
    );
    expect(code).toBe(4);
  });

  it("a 402 after a lost answer is not taken for 'nothing charged': the chain says charged", async () => {
    let paid = 0;
    const front = await proxy({
      upstream: bed.service.url,
      intercept: (r) => {
        if (r.headers["payment-signature"] === undefined || ++paid === 1) return undefined;
        return { status: 402, body: JSON.stringify({ error: "payment_already_used (test)" }) };
      },
      loseAnswer: (r) => r.headers["payment-signature"] !== undefined && paid === 1,
    });
    const payer = bed.payer(2).address;
    const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", front.url, "--rpc", bed.devnet.rpcUrl],
      env(2),
    );
    expect(stderr).toMatch(/the API answered 402: .*payment_already_used \(test\)/);
    const [moved, ...more] = await bed.transfersFrom(payer, fromBlock);
    expect(more).toEqual([]);
    expect(lastLine(stderr)).toBe(
      `secsnap pay: charged 0.05 USDC on base-sepolia (eip155:84532) to ${bed.devnet.payTo}, ` +
        `without a report (tx ${moved?.transactionHash})`,
    );
    expect(code).toBe(3);
  });

  it("a 409 for the id under another proof, to the only send: the chain says not charged", async () => {
    const front = await proxy({
      upstream: bed.service.url,
      intercept: (r) =>
        r.headers["payment-signature"] === undefined
          ? undefined
          : { status: 409, body: JSON.stringify({ error: "another proof (test)" }) },
    });
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", front.url, "--rpc", bed.devnet.rpcUrl],
      env(2),
    );
    expect(proofsSent(front)).toHaveLength(1);
    const proof = proofsSent(front)[0]!;
    expect(await authorizationUsed(proof)).toBe(false);
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: not charged: the chain says authorization ${proof.nonce} from ${proof.from} ` +
          `is unused on base-sepolia \\(eip155:84532\\); it can still be used until \\S+Z, then it expires$`,
      ),
    );
    expect(code).toBe(4);
  });

  async function dishonestApi(status: 402 | 409, settle: boolean): Promise<DishonestApi> {
    const api = await startDishonestApi({
      service: bed.service.url,
      facilitatorUrl: bed.devnet.facilitatorUrl,
      status,
      settle,
    });
    opened.push(api);
    return api;
  }

  /** The authorization of the one proof `api` received. */
  function onlyAuthorization(api: DishonestApi): { from: Address; nonce: Hex } {
    expect(api.proofs).toHaveLength(1);
    return (api.proofs[0]!.payload as { authorization: { from: Address; nonce: Hex } })
      .authorization;
  }

  for (const status of [402, 409] as const) {
    it(`an API that settles the proof and answers ${status}: the chain says charged, naming the transaction`, async () => {
      const api = await dishonestApi(status, true);
      const payer = bed.payer(2).address;
      const before = await bed.balanceOf(payer);
      const fromBlock = (await bed.chain.getBlockNumber({ cacheTime: 0 })) + 1n;
      const { code, stderr } = await runCli(
        ["pay", bed.target.url, "--api", api.url, "--rpc", bed.devnet.rpcUrl],
        env(2),
      );
      onlyAuthorization(api);
      const [tx] = api.settlements;
      expect(stderr).toMatch(new RegExp(`the API answered ${status}: .*dishonest test API`));
      expect(stderr).not.toContain("nothing was charged");
      expect(lastLine(stderr)).toBe(
        `secsnap pay: charged 0.05 USDC on base-sepolia (eip155:84532) to ${bed.devnet.payTo}, ` +
          `without a report (tx ${tx})`,
      );
      const moved = await bed.transfersFrom(payer, fromBlock);
      expect(moved.map((l) => [l.transactionHash, l.args.to, l.args.value])).toEqual([
        [tx, bed.devnet.payTo, PRICE_UNITS],
      ]);
      expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
      expect(code).toBe(status === 402 ? 3 : 4);
    });
  }

  it("an API that answers 402 without settling: not charged, as the chain says, until it expires", async () => {
    const api = await dishonestApi(402, false);
    const payer = bed.payer(2).address;
    const before = await bed.balanceOf(payer);
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", api.url, "--rpc", bed.devnet.rpcUrl],
      env(2),
    );
    const { from, nonce } = onlyAuthorization(api);
    expect(await authorizationUsedOnChain(bed.chain, bed.devnet.usdcAddress, from, nonce)).toBe(
      false,
    );
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: not charged: the chain says authorization ${nonce} from ${from} is unused ` +
          `on base-sepolia \\(eip155:84532\\); it can still be used until \\S+Z, then it expires$`,
      ),
    );
    expect(await bed.balanceOf(payer)).toBe(before);
    expect(code).toBe(3);
  });

  it("an API that answers 402 without settling, once the chain is past the expiry: not charged for good", async () => {
    // A devnet of its own: its clock is moved past the authorization's validBefore.
    const own = await startPaidBed();
    opened.push(own);
    const test = own.chain.extend(testActions({ mode: "anvil" }));
    const api = await startDishonestApi({
      service: own.service.url,
      facilitatorUrl: own.devnet.facilitatorUrl,
      status: 402,
      settle: false,
      beforeAnswer: async (proof) => {
        const { validBefore } = (proof.payload as { authorization: { validBefore: string } })
          .authorization;
        await test.setNextBlockTimestamp({ timestamp: BigInt(validBefore) });
        await test.mine({ blocks: 1 });
      },
    });
    opened.push(api);
    const { code, stderr } = await runCli(
      ["pay", own.target.url, "--api", api.url, "--rpc", own.devnet.rpcUrl],
      payerEnv(own.devnet, 2),
    );
    const { from, nonce } = onlyAuthorization(api);
    expect(await authorizationUsedOnChain(own.chain, own.devnet.usdcAddress, from, nonce)).toBe(
      false,
    );
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: not charged: the chain says authorization ${nonce} from ${from} is unused ` +
          `on base-sepolia \\(eip155:84532\\) and expired at \\S+Z; it can no longer be used$`,
      ),
    );
    expect(code).toBe(3);
  });

  it("an RPC that is another chain than the offer's: unknown whether charged, never 'not charged'", async () => {
    const other = await startOtherChain(8453);
    opened.push(other);
    const api = await dishonestApi(402, false);
    const { code, stderr } = await runCli(
      ["pay", bed.target.url, "--api", api.url, "--rpc", other.url],
      env(2),
    );
    const { from, nonce } = onlyAuthorization(api);
    expect(lastLine(stderr)).toMatch(
      new RegExp(
        `^secsnap pay: unknown whether charged: the RPC at ${other.url} is chain eip155:8453, not ` +
          `eip155:84532; check authorization ${nonce} from ${from} \\(authorizationState of USDC ` +
          `${bed.devnet.usdcAddress} on base-sepolia \\(eip155:84532\\)\\), usable until \\S+Z; ` +
          `--rpc URL reads another node$`,
      ),
    );
    expect(stderr).not.toMatch(/nothing was charged|not charged:/);
    expect(code).toBe(3);
  });

  it("Ctrl-C before the proof is sent: nothing was charged (exit 130)", async () => {
    let asked = () => {};
    const arrived = new Promise<void>((resolve) => (asked = resolve));
    // A service that takes the unpaid request and never answers it.
    const silent = createServer(() => asked());
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    opened.push({
      close: () =>
        new Promise<void>((resolve) => {
          silent.closeAllConnections();
          silent.close(() => resolve());
        }),
    });
    const api = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const child = spawnCli(["pay", bed.target.url, "--api", api], env(2));
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      await arrived;
      child.kill("SIGINT");
      expect(await exited).toBe(130);
    } finally {
      child.kill("SIGKILL");
    }
    expect(stderr).toBe(
      "secsnap pay: interrupted\nsecsnap pay: nothing was charged (nothing was signed)\n",
    );
  });

  it("a second Ctrl-C while the answer is awaited: the chain says what was charged (exit 130)", async () => {
    const facilitator = await facilitatorProxy();
    const service = await startService({ facilitatorUrl: facilitator.url, devnet: true });
    facilitator.failNextSettle("settle-then-hold");
    const payer = bed.payer(2).address;
    const before = await bed.balanceOf(payer);
    const child = spawnCli(
      ["pay", bed.target.url, "--api", service.url, "--rpc", bed.devnet.rpcUrl],
      env(2),
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      // The transfer is on chain and the service waits on the facilitator: pay waits on it.
      while (facilitator.settles.held === 0) await sleep(50);
      const warned = waitForLine(child.stderr, /Ctrl-C again to stop waiting/);
      child.kill("SIGINT");
      await warned;
      // A person's second Ctrl-C, soon after the prompt: not the first one delivered twice (a
      // wrapper's forwarded copy comes within milliseconds), so it stops the wait as it says.
      await sleep(400);
      child.kill("SIGINT");
      expect(await exited).toBe(130);
    } finally {
      child.kill("SIGKILL");
    }
    expect(lastLine(stderr)).toMatch(
      /^secsnap pay: charged 0\.05 USDC on base-sepolia \(eip155:84532\) to 0x[0-9a-fA-F]{40}, without a report \(tx 0x[0-9a-f]{64}\)$/,
    );
    expect(await bed.balanceOf(payer)).toBe(before - PRICE_UNITS);
  }, 60_000);
});
