import ipaddr from "ipaddr.js";

/** IPv6 clients are keyed by their /64: one host is routinely given a whole /64 to rotate in. */
const IPV6_KEY_PREFIX = 64;

/**
 * The proxies whose `X-Forwarded-For` is believed (TRUSTED_PROXIES): CIDRs, or single
 * addresses. An IPv4-mapped IPv6 peer is matched as its IPv4 address.
 */
export class TrustedProxies {
  private readonly ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
  /** Verdicts of recently seen addresses: the peer is one of a few proxies, parsed once. */
  private readonly seen = new Map<string, boolean>();

  constructor(cidrs: readonly string[]) {
    this.ranges = cidrs.map((cidr) => {
      if (cidr.includes("/")) return ipaddr.parseCIDR(cidr);
      const address = ipaddr.parse(cidr);
      return [address, address.kind() === "ipv4" ? 32 : 128];
    });
  }

  get empty(): boolean {
    return this.ranges.length === 0;
  }

  has(address: string): boolean {
    let verdict = this.seen.get(address);
    if (verdict === undefined) {
      verdict = this.match(address);
      if (address.length <= MAX_ADDRESS_LENGTH) {
        if (this.seen.size >= RECENT_KEYS_MAX) this.seen.clear();
        this.seen.set(address, verdict);
      }
    }
    return verdict;
  }

  private match(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    const parsed = ipaddr.process(address);
    return this.ranges.some(
      ([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits),
    );
  }
}

/**
 * The client address a request is counted under (docs/operations.md, "Rate limits"): the
 * socket's peer, unless that peer is a trusted proxy. Then `X-Forwarded-For` is walked from the
 * right (each proxy appends the address it saw), skipping the entries that are trusted proxies
 * themselves: the first one that is not is the client. Entries left of it were sent by the
 * client and are never believed, and a peer outside the trusted ranges is never asked for the
 * header at all, so a client that reaches an instance directly cannot choose its own key.
 * Hand-written: proxy-addr does the same, but is not a dependency and this is the whole rule.
 */
export function clientAddress(
  peer: string | undefined,
  forwardedFor: string | undefined,
  trusted: TrustedProxies | undefined,
): string {
  let address = peer ?? "";
  if (trusted !== undefined && forwardedFor && !trusted.empty && trusted.has(address)) {
    const chain = forwardedFor.split(",");
    for (let i = chain.length - 1; i >= 0; i--) {
      const entry = chain[i]!.trim();
      if (entry === "") continue;
      address = entry;
      if (!trusted.has(entry)) break;
    }
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
