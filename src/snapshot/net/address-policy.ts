import ipaddr from "ipaddr.js";

/**
 * docs/contract.md §5.1: which addresses a target may never be (everything that is not globally
 * reachable unicast). Two layers, both must pass:
 *  1. ipaddr.js `range()` must say "unicast" (it knows the IANA special-purpose registries);
 *  2. an explicit list written from docs/contract.md §5.1, so the contract does not depend on a
 *     library's table, plus what ipaddr.js misses: for IPv6 only 2000::/3 is eligible at all,
 *     which blocks IPv4-compatible `::/96` (ipaddr calls `::7f00:1` "unicast"),
 *     `100:0:0:1::/64` and every unallocated prefix.
 * Addresses inside an allow CIDR (SNAPSHOT_ALLOW_CIDRS) are treated as public. Local mode
 * (SNAPSHOT_ALLOW_LOCAL, for development) also opens loopback, RFC 1918 and unique-local IPv6.
 * Cloud metadata endpoints stay blocked whatever is allowed (docs/security.md, "Local mode").
 */

type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

const cidrs = (list: readonly string[]): Cidr[] => list.map((c) => ipaddr.parseCIDR(c));

const BLOCKED_V4 = cidrs([
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.31.196.0/24",
  "192.52.193.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "192.175.48.0/24",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
  "255.255.255.255/32",
]);

/** The only IPv6 space that can be a target at all (global unicast). */
const ELIGIBLE_V6 = cidrs(["2000::/3"]);

/** Carve-outs from 2000::/3. The classes outside it (mapped, compatible, NAT64, ULA, link- and
 * site-local, multicast, ::, ::1, discard prefixes) are listed for documentation and defence in
 * depth; the 2000::/3 rule already excludes them. */
const BLOCKED_V6 = cidrs([
  "2001::/23",
  "2001:db8::/32",
  "2002::/16",
  "3fff::/20",
  "2620:4f:8000::/48",
  "::ffff:0:0/96",
  "::/96",
  "64:ff9b::/96",
  "64:ff9b:1::/48",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
  "::/128",
  "::1/128",
  "100::/64",
  "100:0:0:1::/64",
]);

/** What local mode opens: this machine and the private networks a developer's sites live on.
 * Not link-local (169.254/16, fe80::/10: metadata and zone ids), CGNAT or the other reserved
 * ranges: SNAPSHOT_ALLOW_CIDRS names those when really wanted. */
const LOCAL = cidrs([
  "127.0.0.0/8",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "::1/128",
  "fc00::/7",
]);

/** Cloud metadata services (AWS, GCP, Azure, Oracle on 169.254.169.254; AWS's IPv6 one inside
 * fc00::/7): one request there can hand out the machine's credentials, so no setting opens them. */
const METADATA = cidrs(["169.254.169.254/32", "fd00:ec2::254/128"]);

function inAny(addr: ipaddr.IPv4 | ipaddr.IPv6, list: readonly Cidr[]): boolean {
  return list.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
}

/** A host as a resolver or this policy wants it: an IPv6 literal without its URL brackets. */
export function withoutBrackets(host: string): string {
  return host.replace(/^\[(.*)\]$/, "$1");
}

/** Parses any textual IPv4/IPv6 form (bracketed or not); undefined when it is not an address. */
function parseAddress(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const text = withoutBrackets(ip.trim());
  if (text === "" || !ipaddr.isValid(text)) return undefined;
  try {
    return ipaddr.parse(text);
  } catch {
    return undefined;
  }
}

function isBlockedParsed(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (addr.range() !== "unicast") return true;
  if (addr.kind() === "ipv4") return inAny(addr, BLOCKED_V4);
  // A zone id (fe80::1%eth0) only makes sense for link-local scope; never a public target.
  if ((addr as ipaddr.IPv6).zoneId) return true;
  return !inAny(addr, ELIGIBLE_V6) || inAny(addr, BLOCKED_V6);
}

/** Would local mode allow this address (loopback, RFC 1918, unique-local, not metadata)? For
 * the hint in a refusal: the rule itself is in createAddressPolicy. */
export function isLocalAddress(ip: string): boolean {
  const addr = parseAddress(ip);
  return addr !== undefined && isLocalParsed(addr);
}

function isLocalParsed(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const zoned = addr.kind() === "ipv6" && Boolean((addr as ipaddr.IPv6).zoneId);
  return !zoned && inAny(addr, LOCAL) && !inAny(addr, METADATA);
}

export interface AddressPolicy {
  isBlocked(ip: string): boolean;
}

/** @throws Error when an allow CIDR is malformed (config.ts validates them before this). */
export function createAddressPolicy(
  allowCidrs: readonly string[],
  { allowLocal = false }: { allowLocal?: boolean } = {},
): AddressPolicy {
  const allowed = cidrs(allowCidrs);
  return {
    isBlocked(ip: string): boolean {
      const addr = parseAddress(ip);
      if (!addr) return true; // not an address we understand: never dial it
      if (inAny(addr, METADATA)) return true;
      if (inAny(addr, allowed)) return false;
      if (allowLocal && isLocalParsed(addr)) return false;
      return isBlockedParsed(addr);
    },
  };
}
