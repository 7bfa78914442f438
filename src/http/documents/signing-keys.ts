/**
 * The keys a verifier of the paid reports needs (docs/proof.md): GET /.well-known/jwks.json, the
 * JWK Set of every public key whose signature a report still within retention may carry, and
 * GET /.well-known/did.json, the did:web document of the service's host with the same keys.
 */
import ipaddr from "ipaddr.js";
import type { JWK } from "jose";

/** GET /.well-known/jwks.json. */
export function jwksDocument(keys: readonly JWK[]): { keys: readonly JWK[] } {
  return { keys };
}

/**
 * The did:web name of `host` (a port is written `%3A`, as did:web says), or undefined when the
 * document may not be served for it: without PUBLIC_URL only a loopback host is taken from the
 * request, never a name a client chose.
 */
export function didWebOf(publicUrl: string | undefined, requestUrl: string): string | undefined {
  const url = new URL(publicUrl ?? requestUrl);
  if (publicUrl === undefined && !isLoopback(url.hostname)) return undefined;
  return `did:web:${url.host.replace(":", "%3A")}`;
}

function isLoopback(hostname: string): boolean {
  if (hostname === "localhost") return true;
  const bare = hostname.replace(/^\[(.*)\]$/, "$1");
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === "loopback";
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
