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
 * Cloud host services (metadata, Azure's WireServer) and IPv4-mapped addresses stay blocked
 * whatever is allowed (docs/security.md, "Cloud host services").
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

/** Services a cloud provider runs for the machine itself: one request there can hand out the
 * machine's credentials or configuration, so no setting opens them (docs/security.md). Some sit
 * in ranges local mode or an allow range opens (fc00::/7, 169.254/16), one looks public. */
const CLOUD_HOST_SERVICES = cidrs([
  "169.254.169.254/32", // instance metadata: AWS, GCP, Azure, Oracle, OpenStack, DigitalOcean
  "169.254.170.2/32", // AWS ECS task metadata and credentials
  "169.254.170.23/32", // AWS EKS Pod Identity agent (credentials)
  "100.100.100.200/32", // Alibaba Cloud metadata
  "168.63.129.16/32", // Azure WireServer (VM agent, extensions' settings), a public address
  "fd00:ec2::254/128", // AWS instance metadata over IPv6
  "fd00:ec2::23/128", // AWS EKS Pod Identity agent over IPv6
  "fd20:ce::254/128", // GCP metadata over IPv6
]);

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

/** An IPv4-mapped address (::ffff:a.b.c.d) reaches the IPv4 address it carries. */
function isMapped(addr: ipaddr.IPv4 | ipaddr.IPv6): addr is ipaddr.IPv6 {
  return addr.kind() === "ipv6" && (addr as ipaddr.IPv6).isIPv4MappedAddress();
}

/** The address a connection reaches: a mapped one as its IPv4 address, every other as it is. */
function unmapped(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return isMapped(addr) ? addr.toIPv4Address() : addr;
}

function isBlockedParsed(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (addr.range() !== "unicast") return true;
  if (addr.kind() === "ipv4") return inAny(addr, BLOCKED_V4);
  // A zone id (fe80::1%eth0) only makes sense for link-local scope; never a public target.
  if ((addr as ipaddr.IPv6).zoneId) return true;
  return !inAny(addr, ELIGIBLE_V6) || inAny(addr, BLOCKED_V6);
}

/** Would local mode allow this address (loopback, RFC 1918, unique-local, no cloud host
 * service)? For the hint in a refusal: the rule itself is in createAddressPolicy. */
export function isLocalAddress(ip: string): boolean {
  const addr = parseAddress(ip);
  return addr !== undefined && !isCloudHostService(addr) && isLocalParsed(addr);
}

function isLocalParsed(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  const zoned = addr.kind() === "ipv6" && Boolean((addr as ipaddr.IPv6).zoneId);
  return !zoned && inAny(addr, LOCAL);
}

/** Checked on the address a connection reaches, so no IPv4-mapped spelling slips past. */
function isCloudHostService(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return inAny(unmapped(addr), CLOUD_HOST_SERVICES);
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
      if (isCloudHostService(addr)) return true;
      // docs/contract.md §5.1 blocks the mapped form whatever IPv4 address it carries, and no
      // setting opens it: an IPv6 allow range (even ::/0) must not open IPv4 space through it.
      if (isMapped(addr)) return true;
      if (inAny(addr, allowed)) return false;
      if (allowLocal && isLocalParsed(addr)) return false;
      return isBlockedParsed(addr);
    },
  };
}
