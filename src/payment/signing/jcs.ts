import canonicalizeJson from "canonicalize";

/**
 * RFC 8785 (JSON Canonicalization Scheme) for the JSON the service signs, by the `canonicalize`
 * package of the RFC's author (4.x: 5.x needs Node 22). A value JSON cannot hold (undefined at
 * the top, a function) is a bug here, not something to sign.
 */
export function canonicalize(value: unknown): string {
  const text = canonicalizeJson(value);
  if (text === undefined) throw new TypeError(`JSON has no ${typeof value}`);
  return text;
}
