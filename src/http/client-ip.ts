import ipaddr from "ipaddr.js";

/** IPv6 clients are keyed by their /64: one host is routinely given a whole /64 to rotate in. */
const IPV6_KEY_PREFIX = 64;

/**
 * The client address a request is counted under (docs/operations.md, "Rate limits"). The
 * socket's peer, or with `trustedHops` proxies in front, the entry of `X-Forwarded-For` that the
 * outermost trusted proxy wrote: each proxy appends the address it saw, so the right-most
 * `trustedHops` addresses (the socket peer included) are proxies and the one left of them is the
 * client. Entries further left were sent by the client and are never believed. Hand-written:
 * proxy-addr does the same, but is not a dependency and this is the whole rule.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trustedHops: number,
): string {
  let address = peer ?? "";
  if (trustedHops > 0 && forwardedFor) {
    const chain = forwardedFor
      .split(",")
      .map((entry) => entry.trim())
      .filter(Boolean);
    // chain[length - 1] was written by the proxy we talk to (hop 1), and so on leftwards.
    const index = Math.max(0, chain.length - trustedHops);
    address = chain[index] ?? address;
  }
  return rateKey(address);
}

/** Keys of recently seen addresses: parsing one costs several µs on every free answer. */
const recentKeys = new Map<string, string>();
const RECENT_KEYS_MAX = 10_000;
/** The longest textual IPv6 address (IPv4-mapped, with a zone left out). */
const MAX_ADDRESS_LENGTH = 45;

function rateKey(address: string): string {
  // Only address-sized strings are remembered: X-Forwarded-For entries come from outside.
  if (address.length > MAX_ADDRESS_LENGTH) return parseRateKey(address);
  let key = recentKeys.get(address);
  if (key === undefined) {
    if (recentKeys.size >= RECENT_KEYS_MAX) recentKeys.clear();
    key = parseRateKey(address);
    recentKeys.set(address, key);
  }
  return key;
}

/** An address as a counting key: IPv4-mapped IPv6 as IPv4, IPv6 as its /64, anything else as is. */
function parseRateKey(address: string): string {
  if (!ipaddr.isValid(address)) return address.slice(0, 64);
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const bytes = parsed.toByteArray().slice(0, IPV6_KEY_PREFIX / 8);
  return `${ipaddr.fromByteArray([...bytes, 0, 0, 0, 0, 0, 0, 0, 0]).toString()}/${IPV6_KEY_PREFIX}`;
}
