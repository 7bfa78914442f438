import { pbkdf2Sync } from "node:crypto";
import { parseAbi, toHex } from "viem";
import type { Address, Hex } from "viem";
import { HDKey, hdKeyToAccount } from "viem/accounts";

/** Base Sepolia's chain id: the devnet poses as Base Sepolia so clients need no special case. */
export const DEVNET_CHAIN_ID = 84532;
export const DEVNET_NETWORK = "eip155:84532" as const;

/** Circle's USDC address on Base Sepolia; the devnet places DevUSDC's runtime code here. */
export const DEVNET_USDC_ADDRESS: Address = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
/** The canonical Multicall3 address (present on Base, absent from a fresh anvil). */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

export const USDC_DECIMALS = 6;

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
 * The mnemonic's BIP-39 seed (PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic"), made once with
 * Node's native crypto: viem's mnemonicToAccount makes it again in JavaScript for every account.
 */
const ROOT_KEY = HDKey.fromMasterSeed(
  pbkdf2Sync(ANVIL_MNEMONIC.normalize("NFKD"), "mnemonic", 2048, 64, "sha512"),
);

/** Accounts 0–9 of the default mnemonic: 0 pays settlement gas, 1 is payTo, 2–9 are payers. */
export const DEVNET_ACCOUNTS: readonly DevnetAccount[] = Array.from({ length: 10 }, (_, index) => {
  const account = hdKeyToAccount(ROOT_KEY, { addressIndex: index });
  const key = account.getHdKey().privateKey;
  if (!key) throw new Error(`cannot derive devnet account ${index}`);
  return { index, address: account.address, privateKey: toHex(key) };
});

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
