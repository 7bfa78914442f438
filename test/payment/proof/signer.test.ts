/**
 * The service's signer (src/payment/signing/), as the reports' proofs and the x402
 * offer-receipt extension use it: named by its RFC 7638 thumbprint, its JWSs verified by `jose`
 * with the public key it lists, its bare signatures accepted by @x402/extensions' own JWS
 * builder; and the key kept in DATA_DIR, refused with one line when the file there is no key.
 */
import { createHash, createPublicKey, verify } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createJWS } from "@x402/extensions/offer-receipt";
import { base64url, calculateJwkThumbprint, compactVerify, flattenedVerify, type JWK } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/config.js";
import { loadServiceSigner } from "../../../src/payment/index.js";
import { withProof } from "../../../src/payment/signing/index.js";
import { TEST_SIGNING_KEY } from "../../fixtures/signing-key.js";

const key = JSON.parse(TEST_SIGNING_KEY) as Record<string, string>;
const bytes = new TextEncoder().encode('{"a":1}');

async function signer() {
  const dataDir = mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "signer-"));
  return (await loadServiceSigner({ signingKey: key as never, dataDir })).signer;
}

describe("ServiceSigner", () => {
  it("is named by the thumbprint of the public key it lists, and lists no private part", async () => {
    const s = await signer();
    expect(s.kid).toBe(await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: key.x! }));
    expect(s.publicJwks()).toEqual([
      { kty: "OKP", crv: "Ed25519", x: key.x, kid: s.kid, alg: "EdDSA", use: "sig" },
    ]);
  });

  it("signs with a detached payload (header..signature) that jose verifies with the payload", async () => {
    const s = await signer();
    const jws = await s.signDetached(bytes);
    const [header, payload, signature] = jws.split(".");
    expect(payload).toBe("");
    const { protectedHeader } = await flattenedVerify(
      { protected: header!, payload: base64url.encode(bytes), signature: signature! },
      s.publicJwks()[0] as JWK,
    );
    expect(protectedHeader).toEqual({ alg: "EdDSA", kid: s.kid });
  });

  it("signs whole with the header given, whose kid replaces the thumbprint but never the alg", async () => {
    const s = await signer();
    const did = `did:web:api.example.org#${s.kid}`;
    const jws = await s.sign(bytes, { kid: did, alg: "none", typ: "JWT" });
    const verified = await compactVerify(jws, s.publicJwks()[0] as JWK);
    expect(verified.protectedHeader).toEqual({ kid: did, typ: "JWT", alg: "EdDSA" });
    expect(verified.payload).toEqual(bytes);
  });

  it("gives bare signatures that @x402/extensions' JWS builder takes, and Ed25519 verifies", async () => {
    const s = await signer();
    const kid = `did:web:api.example.org#${s.kid}`;
    const jws = await createJWS(
      { b: 2, a: 1 },
      {
        kid,
        format: "jws",
        algorithm: "EdDSA",
        sign: (input) => s.signBytes(input),
      },
    );
    const verified = await compactVerify(jws, s.publicJwks()[0] as JWK);
    expect(verified.protectedHeader).toEqual({ alg: "EdDSA", kid });
    const publicKey = createPublicKey({
      key: { kty: "OKP", crv: "Ed25519", x: key.x! },
      format: "jwk",
    });
    expect(verify(null, bytes, publicKey, Buffer.from(await s.signBytes(bytes), "base64url"))).toBe(
      true,
    );
  });
});

describe("the key kept in DATA_DIR", () => {
  it("a file there that is no Ed25519 private JWK stops the start naming DATA_DIR, never replaced", async () => {
    const dataDir = mkdtempSync(join(process.env.SECSNAP_TEST_SCRATCH ?? tmpdir(), "signer-"));
    writeFileSync(join(dataDir, "signing-key.json"), '{"kty":"RSA"}');
    const refused = await loadServiceSigner({ signingKey: undefined, dataDir }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).variable).toBe("DATA_DIR");
    expect((refused as Error).message).toContain("not an Ed25519 private JWK");
    expect(readFileSync(join(dataDir, "signing-key.json"), "utf8")).toBe('{"kty":"RSA"}');
  });
});

describe("the proof of one payment", () => {
  const report = {
    status: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      requested_url: "https://example.com/",
      fetched_at: "2026-11-28T13:00:00.000Z",
    }),
  };
  const paid = {
    network: "eip155:84532",
    payer: "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
    transaction: `0x${"ab".repeat(32)}`,
    recordKey: "record-1",
  };

  it("is made alike every time, so a report handed out while the store was down is the retry's", async () => {
    const s = await signer();
    const first = await withProof(report, paid, s);
    expect((await withProof(report, paid, s)).body).toBe(first.body);
    const { proof } = JSON.parse(first.body) as { proof: Record<string, string> };
    expect(proof.issued_at).toBe("2026-11-28T13:00:00.000Z");
    expect(proof.snapshot_id).toMatch(/^[0-9a-f]{32}$/);
  });

  it("names each payment by its own unguessable id", async () => {
    const s = await signer();
    const ids = ["record-1", "record-2"].map((recordKey) => s.opaqueId(recordKey));
    expect(ids[0]).not.toBe(ids[1]);
    // Not the record key's plain hash: only the key's holder can compute it.
    const plain = createHash("sha256").update("record-1").digest().subarray(0, 16);
    expect(ids[0]).not.toBe(plain.toString("hex"));
  });
});
