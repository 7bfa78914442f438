import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ConfigError } from "../../config-error.js";
import { newPrivateJwk, signerFromJwk, type PrivateJwk, type ServiceSigner } from "./signer.js";

/** The key made at first start, in DATA_DIR beside the embedded store. */
const KEY_FILE = "signing-key.json";

/** The signer and, for serve's first line, where its key came from. */
export interface LoadedSigner {
  signer: ServiceSigner;
  /** Its private key, for the payment gate (which signs offers and receipts with it too). */
  jwk: PrivateJwk;
  /** E.g. `signing key <kid> from SIGNING_KEY`. */
  source: string;
}

/**
 * The service's signing key (docs/proof.md, "Keys"): SIGNING_KEY when set (config.ts validated
 * it, and requires it with REDIS_URL: a fleet signs with one key); otherwise the key kept in
 * DATA_DIR, made at the first start. Called once DATA_DIR is locked (the embedded store opened),
 * so no other process makes its own key there meanwhile.
 */
export async function loadServiceSigner(options: {
  signingKey: PrivateJwk | undefined;
  dataDir: string;
}): Promise<LoadedSigner> {
  if (options.signingKey) {
    const signer = await signerFromJwk(options.signingKey);
    return {
      signer,
      jwk: options.signingKey,
      source: `signing key ${signer.kid} from SIGNING_KEY`,
    };
  }
  const path = join(options.dataDir, KEY_FILE);
  const kept = readKeyFile(path);
  const jwk = kept ?? keepKey(path, await newPrivateJwk());
  const signer = await signerFromJwk(jwk);
  const how = kept ? "kept in" : "made now and kept in";
  return { signer, jwk, source: `signing key ${signer.kid} ${how} ${path}` };
}

/** The kept key, undefined when there is none yet; a file that is no key stops the start. */
function readKeyFile(path: string): PrivateJwk | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new ConfigError("DATA_DIR", `cannot be read (${path}): ${(error as Error).message}`);
  }
  try {
    const jwk = JSON.parse(text) as Partial<PrivateJwk>;
    if (jwk.kty === "OKP" && jwk.crv === "Ed25519" && jwk.x && jwk.d) return jwk as PrivateJwk;
  } catch {
    // said below
  }
  throw new ConfigError(
    "DATA_DIR",
    `holds ${path}, which is not an Ed25519 private JWK: restore it, or remove it for a new key`,
  );
}

/**
 * Writes the new key readable by this user only, whole under a private name then linked into
 * place: a crash never leaves half a key, and an existing key is never replaced.
 */
function keepKey(path: string, jwk: PrivateJwk): PrivateJwk {
  const draft = `${path}.${randomBytes(6).toString("hex")}`;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(draft, `${JSON.stringify(jwk)}\n`, { mode: 0o600, flush: true });
    linkSync(draft, path);
  } catch (error) {
    throw new ConfigError(
      "DATA_DIR",
      `cannot keep the signing key (${path}): ${(error as Error).message}`,
    );
  } finally {
    try {
      unlinkSync(draft);
    } catch {
      // never written
    }
  }
  return jwk;
}
