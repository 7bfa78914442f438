import { createPrivateKey } from "node:crypto";
import * as z from "zod/mini";
import { ConfigError } from "../config-error.js";
import { read, type Env } from "./read.js";

/** An Ed25519 private key as a JWK (RFC 8037): what SIGNING_KEY holds. */
export interface SigningKeyJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  d: string;
}

/** Whether `text` is an Ed25519 private JWK whose `x` is the public key of its `d`. */
function isEd25519PrivateJwk(text: string): boolean {
  try {
    const jwk = JSON.parse(text) as Partial<SigningKeyJwk> & Record<string, unknown>;
    if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || !jwk.d || !jwk.x) return false;
    const key = createPrivateKey({ key: jwk, format: "jwk" });
    return key.export({ format: "jwk" }).x === jwk.x;
  } catch {
    return false;
  }
}

/** The key's members only: whatever else the JWK carried (kid, use) is not ours to keep. */
const signingKey = z.pipe(
  z
    .string()
    .check(
      z.refine(
        (s) => s === "" || isEd25519PrivateJwk(s),
        'must be an Ed25519 private JWK, {"kty":"OKP","crv":"Ed25519","x":…,"d":…}',
      ),
    ),
  z.transform((s: string): SigningKeyJwk | undefined => {
    if (s === "") return undefined;
    const { x, d } = JSON.parse(s) as SigningKeyJwk;
    return { kty: "OKP", crv: "Ed25519", x, d };
  }),
);

const SIGNING_KEY = {
  name: "SIGNING_KEY",
  fallback: "",
  schema: signingKey,
  meaning: "the key that signs paid reports",
  // A private key: never quoted back.
  secret: true,
};

/**
 * SIGNING_KEY (docs/proof.md, "Keys"). Unset: a key made at first start and kept in DATA_DIR,
 * which only one instance uses; with REDIS_URL (a fleet) every instance must sign with the same
 * key, so it is required.
 */
export function loadSigningKey(env: Env, redisUrl: string | undefined): SigningKeyJwk | undefined {
  const key = read(env, SIGNING_KEY);
  if (key === undefined && redisUrl !== undefined) {
    throw new ConfigError(
      "SIGNING_KEY",
      "must be set with REDIS_URL (an Ed25519 private JWK): every instance of a fleet signs reports with the same key",
    );
  }
  return key;
}
