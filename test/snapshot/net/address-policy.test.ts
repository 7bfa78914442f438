import { describe, expect, it } from "vitest";
import { createAddressPolicy, isLocalAddress } from "../../../src/snapshot/net/address-policy.js";

const policy = createAddressPolicy([]);

// One address inside each docs/contract.md §5.1 IPv4 range, plus both edges where a neighbour is
// public.
const blockedV4 = [
  "0.0.0.0",
  "0.255.255.255",
  "10.0.0.1",
  "10.255.255.255",
  "100.64.0.0",
  "100.127.255.255",
  "127.0.0.1",
  "127.255.255.254",
  "169.254.169.254",
  "172.16.0.0",
  "172.31.255.255",
  "192.0.0.8",
  "192.0.2.1",
  "192.31.196.1",
  "192.52.193.1",
  "192.88.99.1",
  "192.168.1.1",
  "192.175.48.1",
  "198.18.0.1",
  "198.19.255.255",
  "198.51.100.1",
  "203.0.113.1",
  "224.0.0.1",
  "239.255.255.250",
  "240.0.0.1",
  "255.255.255.254",
  "255.255.255.255",
];

const allowedV4 = [
  "1.1.1.1",
  "8.8.8.8",
  "9.255.255.255", // just below 10/8
  "11.0.0.0", // just above 10/8
  "100.63.255.255", // just below 100.64/10
  "100.128.0.0", // just above 100.64/10
  "126.255.255.255",
  "128.0.0.0",
  "169.253.255.255",
  "172.15.255.255",
  "172.32.0.0",
  "192.0.1.1",
  "192.0.3.1",
  "192.167.255.255",
  "192.169.0.0",
  "198.17.255.255",
  "198.20.0.0",
  "203.0.112.255",
  "223.255.255.255", // just below 224/4
];

const blockedV6 = [
  "::",
  "::1",
  "::ffff:8.8.8.8", // IPv4-mapped: blocked although 8.8.8.8 is public
  "::ffff:127.0.0.1",
  "::ffff:7f00:1",
  "::8.8.8.8", // IPv4-compatible
  "::7f00:1",
  "64:ff9b::808:808", // NAT64
  "64:ff9b::7f00:1",
  "64:ff9b:1::1",
  "100::1", // discard-only
  "100:0:0:1::1",
  "2001::1", // 2001::/23
  "2001:1ff:ffff::1",
  "2001:db8::1",
  "2002::1", // 6to4
  "2002:7f00:1::1",
  "3fff::1",
  "3fff:fff::1",
  "2620:4f:8000::1",
  "fc00::1",
  "fd12:3456::1",
  "fe80::1",
  "fe80::1%eth0",
  "fec0::1",
  "ff02::1",
  "ff05::1:3",
  "4000::1", // outside 2000::/3: not global unicast
  "1fff:ffff::1",
];

const allowedV6 = [
  "2606:4700::1111",
  "2001:4860:4860::8888",
  "2001:200::1", // just above 2001::/23
  "2a00:1450:4001::1",
  "2620:4f:8001::1", // next to the AS112 /48
  "3ffe::1", // below 3fff::/20
  "3fff:1000::1", // just above 3fff::/20
];

describe("address policy (docs/contract.md §5.1)", () => {
  it.each(blockedV4)("blocks IPv4 %s", (ip) => {
    expect(policy.isBlocked(ip)).toBe(true);
  });
  it.each(allowedV4)("allows public IPv4 %s", (ip) => {
    expect(policy.isBlocked(ip)).toBe(false);
  });
  it.each(blockedV6)("blocks IPv6 %s", (ip) => {
    expect(policy.isBlocked(ip)).toBe(true);
  });
  it.each(allowedV6)("allows public IPv6 %s", (ip) => {
    expect(policy.isBlocked(ip)).toBe(false);
  });

  it("accepts bracketed IPv6 and the non-dotted IPv4 spellings", () => {
    expect(policy.isBlocked("[::1]")).toBe(true);
    expect(policy.isBlocked("[2606:4700::1111]")).toBe(false);
    expect(policy.isBlocked("2130706433")).toBe(true); // 127.0.0.1
    expect(policy.isBlocked("0x7f.1")).toBe(true);
    expect(policy.isBlocked("0177.0.0.1")).toBe(true);
    expect(policy.isBlocked("127.1")).toBe(true);
    expect(policy.isBlocked("134744072")).toBe(false); // 8.8.8.8
  });

  it.each(["", "example.com", "1.2.3.4.5", "256.1.1.1", "::g", "[::1", "1.1.1.1/32", " "])(
    "treats non-address %j as blocked",
    (junk) => {
      expect(policy.isBlocked(junk)).toBe(true);
    },
  );

  it("treats SNAPSHOT_ALLOW_CIDRS ranges as public, and only those", () => {
    const withAllow = createAddressPolicy(["127.0.0.2/32", "10.1.0.0/16", "fd00::/8"]);
    expect(withAllow.isBlocked("127.0.0.2")).toBe(false);
    expect(withAllow.isBlocked("127.0.0.1")).toBe(true);
    expect(withAllow.isBlocked("127.0.0.3")).toBe(true);
    expect(withAllow.isBlocked("10.1.255.255")).toBe(false);
    expect(withAllow.isBlocked("10.2.0.0")).toBe(true);
    expect(withAllow.isBlocked("fd00::5")).toBe(false);
    expect(withAllow.isBlocked("fc00::5")).toBe(true);
    // An IPv4 allow range does not open the IPv4-mapped IPv6 form.
    expect(withAllow.isBlocked("::ffff:127.0.0.2")).toBe(true);
    // The allow list changes nothing for a policy created without it.
    expect(policy.isBlocked("127.0.0.2")).toBe(true);
  });

  it("rejects a malformed allow CIDR loudly", () => {
    expect(() => createAddressPolicy(["not-a-cidr"])).toThrow();
  });
});

describe("local mode (SNAPSHOT_ALLOW_LOCAL: scan --local, serve --allow-local)", () => {
  const local = createAddressPolicy([], { allowLocal: true });

  it.each([
    "127.0.0.1",
    "127.0.0.213",
    "10.0.0.5",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.10",
    "::1",
    "fd12:3456::1",
    "fc00::1",
  ])("allows the loopback or private address %s", (ip) => {
    expect(policy.isBlocked(ip)).toBe(true);
    expect(local.isBlocked(ip)).toBe(false);
    expect(isLocalAddress(ip)).toBe(true);
  });

  it.each([
    ["169.254.169.254", "cloud metadata (AWS, GCP, Azure, Oracle)"],
    ["fd00:ec2::254", "AWS metadata over IPv6, inside the unique-local range"],
    ["::ffff:169.254.169.254", "metadata in IPv4-mapped form"],
    ["169.254.170.2", "link-local: not opened"],
    ["fe80::1", "link-local IPv6: not opened"],
    ["100.64.0.1", "shared address space (CGNAT): not opened"],
    ["0.0.0.0", "this network"],
    ["192.0.2.1", "documentation"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback: not opened"],
  ])("still blocks %s (%s)", (ip) => {
    expect(local.isBlocked(ip)).toBe(true);
    expect(isLocalAddress(ip)).toBe(false);
  });

  it("keeps metadata blocked even when an allow CIDR covers it", () => {
    const opened = createAddressPolicy(["169.254.0.0/16", "fd00::/8"], { allowLocal: true });
    expect(opened.isBlocked("169.254.169.254")).toBe(true);
    expect(opened.isBlocked("fd00:ec2::254")).toBe(true);
    expect(opened.isBlocked("169.254.1.1")).toBe(false); // the rest of the range is opened
  });

  it.each([
    ["fd00:ec2::23", "the EKS Pod Identity agent over IPv6, inside the unique-local range"],
    ["fd20:ce::254", "GCP metadata over IPv6, inside the unique-local range"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
  ])("gives no hint for %s (%s): local mode keeps it blocked", (ip) => {
    expect(local.isBlocked(ip)).toBe(true);
    expect(isLocalAddress(ip)).toBe(false);
  });

  it("leaves public addresses as they were", () => {
    expect(local.isBlocked("93.184.216.34")).toBe(false);
    expect(local.isBlocked("2606:2800:220:1::1")).toBe(false);
    // Just outside 172.16.0.0/12: public, never "local".
    expect(local.isBlocked("172.32.0.1")).toBe(false);
    expect(isLocalAddress("172.32.0.1")).toBe(false);
  });
});

describe("cloud host services: blocked in every mode, in every spelling", () => {
  const services = [
    "169.254.169.254", // instance metadata (AWS, GCP, Azure, Oracle, …)
    "169.254.170.2", // AWS ECS task credentials
    "169.254.170.23", // AWS EKS Pod Identity agent
    "100.100.100.200", // Alibaba Cloud metadata
    "168.63.129.16", // Azure WireServer: a public address
    "fd00:ec2::254", // AWS metadata over IPv6
    "fd00:ec2::23", // AWS EKS Pod Identity agent over IPv6
    "fd20:ce::254", // GCP metadata over IPv6
  ];
  const everything = ["0.0.0.0/0", "::/0"];
  const modes = {
    production: createAddressPolicy([]),
    local: createAddressPolicy([], { allowLocal: true }),
    "allow ::/0 and 0.0.0.0/0": createAddressPolicy(everything),
    "allow ::/0 alone": createAddressPolicy(["::/0"]),
    "allow all, in local mode": createAddressPolicy(everything, { allowLocal: true }),
  };
  const spellings = (ip: string) =>
    ip.includes(":") ? [ip, `[${ip}]`] : [ip, `::ffff:${ip}`, `[::ffff:${ip}]`];

  it.each(Object.entries(modes))("%s", (_mode, p) => {
    for (const service of services) {
      for (const ip of spellings(service)) {
        expect(p.isBlocked(ip), ip).toBe(true);
        expect(isLocalAddress(ip), ip).toBe(false);
      }
    }
    // Their neighbours are what the mode makes them: only the services themselves are pinned.
    expect(p.isBlocked("168.63.129.17")).toBe(false);
  });

  it("an IPv6 allow range opens no IPv4 address through its IPv4-mapped form", () => {
    const v6 = createAddressPolicy(["::/0"]);
    for (const ip of [
      "::ffff:10.0.0.1",
      "::ffff:127.0.0.1",
      "::ffff:8.8.8.8",
      "::ffff:a9fe:a9fe",
    ]) {
      expect(v6.isBlocked(ip), ip).toBe(true);
    }
    expect(v6.isBlocked("fd12::1")).toBe(false); // IPv6 space is what it opens
    expect(createAddressPolicy(["::ffff:0:0/96"]).isBlocked("::ffff:8.8.8.8")).toBe(true);
  });
});
