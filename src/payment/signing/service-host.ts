import ipaddr from "ipaddr.js";

/**
 * The host the service vouches for as itself (docs/proof.md): PUBLIC_URL's, or without it the
 * request's own when it is a loopback host — never a name a client chose. One rule for the
 * did:web of the offers, receipts and did.json, and for the origin sign-ins are bound to.
 */
export function serviceUrlOf(publicUrl: string | undefined, requestUrl: string): URL | undefined {
  if (publicUrl !== undefined) return new URL(publicUrl);
  let url: URL;
  try {
    url = new URL(requestUrl);
  } catch {
    return undefined;
  }
  return isLoopback(url.hostname) ? url : undefined;
}

/** `did:web:<host>`, the port's colon percent-encoded as did:web writes it. */
export function didWebOf(url: URL): string {
  return `did:web:${encodeURIComponent(url.host)}`;
}

function isLoopback(hostname: string): boolean {
  if (hostname === "localhost") return true;
  const bare = hostname.replace(/^\[(.*)\]$/, "$1");
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === "loopback";
}
