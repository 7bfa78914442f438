/**
 * The networks' facts (src/networks.ts) are written once: they agree with what the x402 SDK and
 * viem know of Base and Base Sepolia, and no other file in src/ writes a USDC address or a chain
 * id of its own. Comments may name an example network; code may not.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { getDefaultAsset } from "@x402/evm";
import ts from "typescript";
import { base, baseSepolia } from "viem/chains";
import { describe, expect, it } from "vitest";
import { NETWORK_IDS, NETWORKS, TEST_NETWORKS, USDC_DECIMALS } from "../../src/networks.js";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const FACTS_FILE = "networks.ts";

describe("the networks' facts", () => {
  it.each([
    [NETWORKS.base, base.id],
    [NETWORKS["base-sepolia"], baseSepolia.id],
  ])("$name: its chain id is viem's, its USDC the x402 SDK's", (network, chainId) => {
    expect(network.chainId).toBe(chainId);
    expect(network.id).toBe(`eip155:${chainId}`);
    expect(NETWORK_IDS[network.name]).toBe(network.id);
    const sdk = getDefaultAsset(network.id);
    expect({
      address: network.usdc.address,
      decimals: network.usdc.decimals,
      ...network.usdc.domain,
    }).toEqual({
      address: sdk.asset,
      decimals: sdk.decimals,
      name: sdk.name,
      version: sdk.version,
    });
    expect(network.usdc.decimals).toBe(USDC_DECIMALS);
  });

  it("Base Sepolia alone is a test network", () => {
    expect([...TEST_NETWORKS]).toEqual(["base-sepolia"]);
  });
});

/** Every .ts file under src/, as a path relative to src/. */
function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [relative(SRC, path)] : [];
  });
}

const CHAIN_IDS = new Set<number>(Object.values(NETWORKS).map((n) => n.chainId));
const ADDRESSES = Object.values(NETWORKS).map((n) => n.usdc.address.toLowerCase());
const CAIP2 = new RegExp(`eip155:(${[...CHAIN_IDS].join("|")})(?!\\d)`);

/** A literal in code (comments are not nodes) that writes one of the networks' facts. */
function writesAFact(node: ts.Node): boolean {
  if (ts.isNumericLiteral(node)) return CHAIN_IDS.has(Number(node.text));
  if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
    const text = node.text.toLowerCase();
    return ADDRESSES.some((a) => text.includes(a)) || CAIP2.test(text);
  }
  return false;
}

/** Each literal of `file` that writes a fact, as `file:line: literal`. */
function factsWritten(file: string): string[] {
  const text = readFileSync(join(SRC, file), "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (writesAFact(node)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${file}:${line + 1}: ${node.getText(source)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("src/networks.ts is the one place that writes them", () => {
  it("finds the facts it writes (the scan sees literals)", () => {
    expect(factsWritten(FACTS_FILE).length).toBeGreaterThanOrEqual(6);
  });

  it("no other file in src/ writes a USDC address, a chain id or its CAIP-2 id", () => {
    const files = sourceFiles().filter((f) => f !== FACTS_FILE);
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap(factsWritten)).toEqual([]);
  });
});
