import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Abi, Hex } from "viem";

/**
 * Compiles the devnet's Solidity contracts (contracts/*.sol) with the `solc` npm package and
 * caches the result under `.cache/devnet-contracts/`, keyed by a hash of the sources, the solc
 * version and the compiler settings. soljson (emscripten) is slow to load and run, so it is
 * only imported on a cache miss (docs/benchmarks.md "Start-up").
 */

const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CONTRACTS_DIR = join(PROJECT_ROOT, "contracts");
const DEFAULT_CACHE_DIR = join(PROJECT_ROOT, ".cache", "devnet-contracts");

/** The contracts the devnet places on chain, by file (each file holds one contract). */
const CONTRACT_FILES = { DevUSDC: "DevUSDC.sol", Multicall3: "Multicall3.sol" } as const;
type DevnetContractName = keyof typeof CONTRACT_FILES;

// cancun: supported by anvil's default hardfork and by Base, and predates opcodes solc may
// start using by default in newer EVM versions.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
} as const;

interface ContractArtifact {
  contractName: DevnetContractName;
  abi: Abi;
  /** Creation code (constructor + runtime). */
  bytecode: Hex;
  /** Runtime code, what `anvil_setCode` places at an address. */
  deployedBytecode: Hex;
}

type DevnetArtifacts = Record<DevnetContractName, ContractArtifact>;

export interface CompileResult {
  artifacts: DevnetArtifacts;
  fromCache: boolean;
  cacheFile: string;
}

function installedSolcVersion(): string {
  // Read from package.json so a cache hit never has to load soljson.
  const require = createRequire(import.meta.url);
  const pkg = require("solc/package.json") as { version: string };
  return pkg.version;
}

async function readSources(): Promise<Record<string, { content: string }>> {
  const sources: Record<string, { content: string }> = {};
  for (const file of Object.values(CONTRACT_FILES)) {
    sources[file] = { content: await readFile(join(CONTRACTS_DIR, file), "utf8") };
  }
  return sources;
}

function cacheKey(solcVersion: string, sources: Record<string, { content: string }>): string {
  const hash = createHash("sha256");
  hash.update(`solc ${solcVersion}\n${JSON.stringify(SETTINGS)}\n`);
  for (const [file, { content }] of Object.entries(sources).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    hash.update(`${file}\n${content.length}\n${content}`);
  }
  return hash.digest("hex").slice(0, 32);
}

function isArtifacts(value: unknown): value is DevnetArtifacts {
  if (typeof value !== "object" || value === null) return false;
  return Object.keys(CONTRACT_FILES).every((name) => {
    const a = (value as Record<string, Partial<ContractArtifact> | undefined>)[name];
    return (
      typeof a === "object" &&
      Array.isArray(a.abi) &&
      typeof a.deployedBytecode === "string" &&
      /^0x[0-9a-f]+$/i.test(a.deployedBytecode) &&
      typeof a.bytecode === "string"
    );
  });
}

interface SolcOutput {
  errors?: { severity: "error" | "warning" | "info"; formattedMessage: string }[];
  contracts?: Record<
    string,
    Record<
      string,
      { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }
    >
  >;
}

async function runSolc(sources: Record<string, { content: string }>): Promise<DevnetArtifacts> {
  const solc = (await import("solc")).default as { compile(input: string): string };
  const output = JSON.parse(
    solc.compile(JSON.stringify({ language: "Solidity", sources, settings: SETTINGS })),
  ) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) {
    throw new Error(
      `solc failed to compile the devnet contracts:\n${errors.map((e) => e.formattedMessage).join("\n")}`,
    );
  }
  const artifacts: Partial<DevnetArtifacts> = {};
  for (const [name, file] of Object.entries(CONTRACT_FILES) as [DevnetContractName, string][]) {
    const compiled = output.contracts?.[file]?.[name];
    if (!compiled) throw new Error(`solc produced no output for ${name} in contracts/${file}`);
    artifacts[name] = {
      contractName: name,
      abi: compiled.abi,
      bytecode: `0x${compiled.evm.bytecode.object}`,
      deployedBytecode: `0x${compiled.evm.deployedBytecode.object}`,
    };
  }
  return artifacts as DevnetArtifacts;
}

/**
 * Returns the compiled devnet contracts, from the cache when the sources, solc version and
 * settings are unchanged, else by compiling and then caching. Safe to call from several
 * processes at once: the cache file is written to a temporary name and renamed into place.
 */
export async function compileDevnetContracts(
  opts: { cacheDir?: string } = {},
): Promise<CompileResult> {
  const cacheDir = opts.cacheDir ?? DEFAULT_CACHE_DIR;
  const sources = await readSources();
  const cacheFile = join(cacheDir, `${cacheKey(installedSolcVersion(), sources)}.json`);

  try {
    const cached: unknown = JSON.parse(await readFile(cacheFile, "utf8"));
    if (isArtifacts(cached)) return { artifacts: cached, fromCache: true, cacheFile };
  } catch {
    // Missing or unreadable cache: compile below.
  }

  const artifacts = await runSolc(sources);
  try {
    await mkdir(cacheDir, { recursive: true });
    const tmp = `${cacheFile}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, JSON.stringify(artifacts));
    await rename(tmp, cacheFile);
  } catch {
    // A read-only checkout still works; it just compiles on every start.
  }
  return { artifacts, fromCache: false, cacheFile };
}
