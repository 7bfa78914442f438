/**
 * RFC 8785 (JSON Canonicalization Scheme) for the JSON the service signs.
 *
 * Written here on purpose, in terms of JSON.stringify, which RFC 8785 §3.2.2 takes as the
 * serialisation of every primitive (strings, numbers, literals): what is left is sorting each
 * object's keys by UTF-16 code units, with no whitespace. Why not a package: `canonicalize@5`
 * needs Node 22 (this service runs on Node 20), and the `canonicalize` @x402/extensions exports
 * escapes every control character as \u00XX where RFC 8785 writes \n, \t…, so a report holding a
 * tab would hash otherwise than in any RFC 8785 library a verifier uses.
 */
export function canonicalize(value: unknown): string {
  if (value === null || typeof value !== "object") {
    const primitive = JSON.stringify(value) as string | undefined;
    if (primitive === undefined) throw new TypeError(`JSON has no ${typeof value}`);
    return primitive;
  }
  if (Array.isArray(value)) return `[${value.map(canonicalize).join(",")}]`;
  const members = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map(
      (key) => `${JSON.stringify(key)}:${canonicalize((value as Record<string, unknown>)[key])}`,
    );
  return `{${members.join(",")}}`;
}
