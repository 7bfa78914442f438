/**
 * The keys a verifier of the paid reports needs (docs/proof.md): GET /.well-known/jwks.json, the
 * JWK Set of every public key whose signature a report still within retention may carry, and
 * GET /.well-known/did.json, the did:web document of the service's host with the same keys.
 */
import type { JWK } from "jose";

/** GET /.well-known/jwks.json. */
export function jwksDocument(keys: readonly JWK[]): { keys: readonly JWK[] } {
  return { keys };
}

/** GET /.well-known/did.json: each key a verification method, usable for assertions. */
export function didDocument(did: string, keys: readonly JWK[]): Record<string, unknown> {
  const methods = keys.map((key) => ({
    id: `${did}#${key.kid}`,
    type: "JsonWebKey2020",
    controller: did,
    publicKeyJwk: key,
  }));
  return {
    "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/suites/jws-2020/v1"],
    id: did,
    verificationMethod: methods,
    assertionMethod: methods.map((method) => method.id),
  };
}
