/**
 * The sign-in check of src/payment/snapshots/payer-signature.ts says what the `sign-in-with-x`
 * extension says: libsecp256k1's recovery what viem's `verifyMessage` says, for real signatures
 * of real keys in every form a wallet sends them and every way one can be wrong; viem's EIP-4361
 * text the extension's own, on every shape our challenge produces; any other shape the
 * extension's verdict itself.
 */
import {
  formatSIWEMessage,
  verifySIWxSignature,
  type SIWxPayload,
} from "@x402/extensions/sign-in-with-x";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { verifyMessage, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import {
  siweMessageOf,
  verifyPayerSignature,
  verifySignIn,
} from "../../../src/payment/snapshots/payer-signature.js";

/** The order of secp256k1's group. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const word = (value: bigint): string => value.toString(16).padStart(64, "0");
const parts = (signature: Hex) => ({
  r: BigInt(`0x${signature.slice(2, 66)}`),
  s: BigInt(`0x${signature.slice(66, 130)}`),
  v: Number.parseInt(signature.slice(130), 16),
});
const signatureOf = (r: bigint, s: bigint, v: number): Hex =>
  `0x${word(r)}${word(s)}${v.toString(16).padStart(2, "0")}`;

/** Each variant of one real signature, named. */
function variants(signature: Hex): Record<string, Hex> {
  const { r, s, v } = parts(signature);
  return {
    "as signed (v 27/28)": signature,
    "v as 0/1": signatureOf(r, s, v - 27),
    "high s, v flipped (the malleable twin)": signatureOf(r, N - s, v === 27 ? 28 : 27),
    "v flipped": signatureOf(r, s, v === 27 ? 28 : 27),
    "v 29": signatureOf(r, s, 29),
    "r = 0": signatureOf(0n, s, v),
    "r ≥ n": signatureOf(r + N > 2n ** 256n - 1n ? N : r + N, s, v),
    "s ≥ n": signatureOf(r, N + 1n, v),
    "one bit of s flipped": signatureOf(r, s ^ 1n, v),
  };
}

const viemSays = (args: { address: Hex; message: string; signature: Hex }) =>
  verifyMessage(args).catch(() => false);

describe("the payer's signature, checked natively", () => {
  it("agrees with viem's verifyMessage on 12 keys, each signature in 9 forms, for its signer, another address and another message", async () => {
    let accepted = 0;
    for (let i = 0; i < 12; i++) {
      const account = privateKeyToAccount(generatePrivateKey());
      const other = privateKeyToAccount(generatePrivateKey());
      const message = `secsnap.example wants you to sign in with your Ethereum account:\n${account.address}\n\nnonce ${i}`;
      const signature = await account.signMessage({ message });
      for (const [form, candidate] of Object.entries(variants(signature))) {
        for (const args of [
          { address: account.address, message, signature: candidate },
          { address: other.address, message, signature: candidate },
          { address: account.address, message: `${message}!`, signature: candidate },
        ]) {
          const ours = await verifyPayerSignature(args);
          expect(ours, `${form}, ${args.address === account.address ? "signer" : "other"}`).toBe(
            await viemSays(args),
          );
          if (ours) accepted++;
        }
      }
    }
    // The signer's own signature holds in its three valid forms: as signed, v 0/1, high s.
    expect(accepted).toBe(12 * 3);
  });

  it("is false, never a throw, for what is no 65-byte signature or no address", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const message = "sign in";
    const signature = await account.signMessage({ message });
    const unreadable: Hex[] = [
      "0x",
      `0x${signature.slice(2, 130)}` as Hex, // 64 bytes: r ‖ s, no v
      `${signature}00` as Hex,
      `0x${"zz".repeat(65)}` as Hex,
    ];
    for (const bad of unreadable) {
      expect(
        await verifyPayerSignature({ address: account.address, message, signature: bad }),
      ).toBe(false);
    }
    expect(await verifyPayerSignature({ address: "0x1234" as Hex, message, signature })).toBe(
      false,
    );
    expect(await verifyPayerSignature({ address: account.address, message, signature })).toBe(true);
  });
});

/** A sign-in as our challenge shapes it (times as Date#toISOString writes them), then `changes`. */
function signIn(account: PrivateKeyAccount, changes: Partial<SIWxPayload> = {}): SIWxPayload {
  const issued = new Date(Date.UTC(2026, 10, 28, 18, 0, 0, 123));
  return {
    domain: "127.0.0.1:8402",
    address: account.address,
    statement: "Sign in with the wallet that paid for this report to get it again.",
    uri: "http://127.0.0.1:8402",
    version: "1",
    chainId: "eip155:84532",
    type: "eip191",
    nonce: "0123456789abcdef0123456789abcdef",
    issuedAt: issued.toISOString(),
    expirationTime: new Date(issued.getTime() + 300_000).toISOString(),
    resources: ["http://127.0.0.1:8402/v1/snapshots/0123456789abcdef0123456789abcdef"],
    signature: "0x",
    ...changes,
  };
}

/** The payload signed by `signer` over the extension's own text of it. */
async function signed(payload: SIWxPayload, signer: PrivateKeyAccount): Promise<SIWxPayload> {
  const message = formatSIWEMessage(payload, payload.address);
  return { ...payload, signature: await signer.signMessage({ message }) };
}

describe("the sign-in's message", () => {
  const account = privateKeyToAccount(generatePrivateKey());

  it("is the extension's own text, byte for byte, on every shape our challenge produces", () => {
    const shapes: Partial<SIWxPayload>[] = [
      {},
      { domain: "localhost:8402", uri: "http://localhost:8402" },
      { domain: "secsnap.example.org", uri: "https://secsnap.example.org" },
      { domain: "secsnap.example.org:8443", uri: "https://secsnap.example.org:8443/base" },
      { chainId: "eip155:8453" },
      { resources: [] },
      { resources: ["https://a.example/x", "https://b.example/y?z=1"] },
      { statement: "Sign in." },
      { issuedAt: "2026-01-01T00:00:00.000Z", expirationTime: "2026-01-01T00:05:00.000Z" },
    ];
    for (const shape of shapes) {
      const payload = signIn(account, shape);
      const ours = siweMessageOf(payload);
      expect(ours, JSON.stringify(shape)).toBeDefined();
      expect(ours).toBe(formatSIWEMessage(payload, payload.address));
    }
  });

  it("of any other shape is left to the extension, whose verdict stands: its signer holds, another wallet does not", async () => {
    const other = privateKeyToAccount(generatePrivateKey());
    const shapes: Partial<SIWxPayload>[] = [
      { issuedAt: "2026-11-28T18:00:00Z" }, // no milliseconds
      { expirationTime: "2026-11-28T18:05:00.000+00:00" },
      { notBefore: "2026-11-28T18:00:00.000Z" },
      { requestId: "r-1" },
      { statement: undefined },
      { address: account.address.toLowerCase() },
      { domain: "[::1]:8402", uri: "http://[::1]:8402" },
    ];
    for (const shape of shapes) {
      const payload = signIn(account, shape);
      expect(siweMessageOf(payload), JSON.stringify(shape)).toBeUndefined();
      const mine = await signed(payload, account);
      const theirs = await signed(payload, other);
      for (const candidate of [mine, theirs]) {
        const verdict = await verifySignIn(candidate);
        expect(verdict, JSON.stringify(shape)).toEqual(await verifySIWxSignature(candidate));
      }
      expect((await verifySignIn(mine)).isValid).toBe(true);
    }
  });

  it("signed by its address holds; by another wallet, or over other text, is the extension's refusal", async () => {
    const other = privateKeyToAccount(generatePrivateKey());
    const payload = signIn(account);
    expect(await verifySignIn(await signed(payload, account))).toEqual({
      isValid: true,
      payer: account.address,
    });
    const refusals = [
      await signed(payload, other),
      { ...(await signed(payload, account)), nonce: "fedcba9876543210fedcba9876543210" },
      { ...(await signed(payload, account)), resources: [] },
    ];
    for (const candidate of refusals) {
      const verdict = await verifySignIn(candidate);
      expect(verdict.isValid).toBe(false);
      expect(verdict).toEqual(await verifySIWxSignature(candidate));
    }
  });
});
