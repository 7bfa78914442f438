import { parseAbi } from "viem";
import type { Address, Hex } from "viem";
import { NETWORKS, USDC_DECIMALS } from "../networks.js";

/** Base Sepolia's chain id: the devnet poses as Base Sepolia so clients need no special case. */
export const DEVNET_CHAIN_ID = NETWORKS["base-sepolia"].chainId;
export const DEVNET_NETWORK = NETWORKS["base-sepolia"].id;

/** Circle's USDC address on Base Sepolia; the devnet places DevUSDC's runtime code here. */
export const DEVNET_USDC_ADDRESS: Address = NETWORKS["base-sepolia"].usdc.address;
/** The canonical Multicall3 address (present on Base, absent from a fresh anvil). */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

export { USDC_DECIMALS };

/** Anvil's default test mnemonic (public; never use these keys on a real network). */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

/** Units minted to each payer account (1000 USDC). */
export const PAYER_START_BALANCE = 1000n * 10n ** BigInt(USDC_DECIMALS);

export interface DevnetAccount {
  index: number;
  address: Address;
  privateKey: Hex;
}

/**
 * Accounts 0–9 of ANVIL_MNEMONIC (m/44'/60'/0'/0/i, as anvil derives them): 0 pays settlement
 * gas, 1 is payTo, 2–9 are payers. Written out rather than derived, so that importing them
 * costs no key derivation (`secsnap pay`); test/devnet/devnet.e2e.test.ts derives them again.
 */
export const DEVNET_ACCOUNTS: readonly DevnetAccount[] = (
  [
    [
      "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
      "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    ],
    [
      "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
      "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
    ],
    [
      "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
      "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    ],
    [
      "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
      "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
    ],
    [
      "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
      "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
    ],
    [
      "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
      "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
    ],
    [
      "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
      "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
    ],
    [
      "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
      "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
    ],
    [
      "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f",
      "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
    ],
    [
      "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720",
      "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
    ],
  ] as const
).map(([address, privateKey], index) => ({ index, address, privateKey }));

function account(index: number): DevnetAccount {
  const a = DEVNET_ACCOUNTS[index];
  if (!a) throw new Error(`no devnet account ${index}`);
  return a;
}

export const GAS_PAYER = account(0);
export const PAY_TO = account(1);
export const PAYERS: readonly DevnetAccount[] = DEVNET_ACCOUNTS.slice(2);
/** The first payer: what `secsnap pay` signs with against the devnet unless given a key. */
export const DEFAULT_PAYER = account(2);

/** The part of DevUSDC's interface the TypeScript side calls (typed for viem). */
export const DEV_USDC_ABI = parseAbi([
  "function name() view returns (string)",
  "function symbol() view returns (string)",
  "function version() view returns (string)",
  "function decimals() view returns (uint8)",
  "function totalSupply() view returns (uint256)",
  "function balanceOf(address) view returns (uint256)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
  "function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function transfer(address to, uint256 value) returns (bool)",
  "function mint(address to, uint256 amount)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
]);
