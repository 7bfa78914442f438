import { describe, expect, it } from "vitest";
import { createAddressPolicy } from "../../../src/snapshot/net/address-policy.js";
import { SnapshotError } from "../../../src/snapshot/result.js";
import type { SnapshotErrorType } from "../../../src/snapshot/result.js";
import {
  createUrlPolicy,
  effectivePort,
  normalizeUrl,
  parseInputUrl,
  resolveRedirect,
} from "../../../src/snapshot/net/url-rules.js";
import type { UrlPolicy } from "../../../src/snapshot/net/url-rules.js";

const addressPolicy = createAddressPolicy([]);
const policy: UrlPolicy = {
  allowedPorts: new Set([80, 443, 8080, 8443]),
  isBlockedAddress: (ip) => addressPolicy.isBlocked(ip),
};

function errorOf(fn: () => unknown): SnapshotError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SnapshotError) return err;
    throw err;
  }
  throw new Error("expected a SnapshotError, nothing was thrown");
}

const inputError = (raw: string) => errorOf(() => parseInputUrl(raw, policy));

describe("parseInputUrl: accepted inputs and normalization", () => {
  it.each([
    ["example.com", "https://example.com/"],
    ["  example.com  ", "https://example.com/"],
    ["example.com:8443/a?b", "https://example.com:8443/a?b"],
    ["//example.com/", "https://example.com/"],
    ["HTTP://EXAMPLE.COM:80/Path#frag", "http://example.com/Path"],
    ["https://example.com:443/", "https://example.com/"],
    ["https://bücher.de", "https://xn--bcher-kva.de/"],
    ["https://example.com./x", "https://example.com./x"],
    ["http://8.8.8.8:8080/", "http://8.8.8.8:8080/"],
    ["https://[2606:4700::1111]/", "https://[2606:4700::1111]/"],
    ["https://_dmarc.example.com/", "https://_dmarc.example.com/"],
    ["https://@example.com/", "https://example.com/"], // empty userinfo is dropped by WHATWG
  ])("%j → %s", (raw, normalized) => {
    expect(normalizeUrl(parseInputUrl(raw, policy))).toBe(normalized);
  });

  it("keeps the fragment out of normalized_url but leaves the parsed URL alone", () => {
    const url = parseInputUrl("https://example.com/a#b", policy);
    expect(normalizeUrl(url)).toBe("https://example.com/a");
    expect(url.hash).toBe("#b");
  });

  it("computes effective ports", () => {
    expect(effectivePort(new URL("http://a.b/"))).toBe(80);
    expect(effectivePort(new URL("https://a.b/"))).toBe(443);
    expect(effectivePort(new URL("https://a.b:8443/"))).toBe(8443);
    expect(effectivePort(new URL("https://a.b:80/"))).toBe(80);
  });

  it("accepts exactly 2048 characters and rejects 2049", () => {
    const base = "https://example.com/";
    const ok = base + "a".repeat(2048 - base.length);
    expect(parseInputUrl(ok, policy).href).toBe(ok);
    expect(inputError(ok + "a").errorType).toBe("invalid_url");
    // Trimming happens before the length check.
    expect(parseInputUrl(`  ${ok}  `, policy).href).toBe(ok);
  });

  it("accepts labels of 63 characters and names of 253", () => {
    const label63 = "a".repeat(63);
    expect(parseInputUrl(`${label63}.com`, policy).hostname).toBe(`${label63}.com`);
    const name253 = [label63, label63, label63, "a".repeat(59), "com"].join(".").slice(0, 253);
    expect(name253.length).toBe(253);
    expect(parseInputUrl(`https://${name253}/`, policy).hostname).toBe(name253);
    expect(parseInputUrl(`https://${name253}./`, policy).hostname).toBe(`${name253}.`);
  });
});

const invalid: string[] = [
  "",
  "   ",
  "gopher://127.0.0.1/",
  "ftp://example.com/",
  "file:///etc/passwd",
  "ws://example.com/",
  "data://text/plain,hi",
  "javascript:alert(1)", // becomes https://javascript:alert(1): port "alert(1)" is invalid
  "http:example.com", // no "://": https:// is prefixed, "example.com" is not a port
  "http://user:pw@example.com/",
  "http://user@example.com/",
  "http://example.com@127.0.0.1/", // userinfo is checked before the blocked literal
  "https://:pw@example.com/",
  "https://example/", // one label
  "https://com./",
  "https://a..b/",
  "https://.example.com/",
  "https://example.com../",
  `https://${"a".repeat(64)}.com/`,
  `https://${Array.from({ length: 64 }, () => "abc").join(".")}/`, // 255 characters
  "https://*.example.com/",
  "https://exa mple.com/",
  "https://1.2.3.4.5/",
  "https://foo.1/",
  "https://example.com:99999/",
  "https://[::1/",
  "https://%2e%2e/",
  `https://example.com/${"a".repeat(2048)}`,
  // docs/contract.md §3.3 order: length and host syntax (invalid_url) are checked before the ssrf rules.
  `http://127.0.0.1/${"a".repeat(2048)}`,
  `http://localhost/${"a".repeat(2048)}`,
  `http://${"a".repeat(64)}.localhost/`,
  "http://exa*mple.localhost/",
];

const ssrf: string[] = [
  "localhost",
  "http://localhost/",
  "http://LOCALHOST./",
  "https://localhost:8443/",
  "http://foo.localhost/",
  "http://a.b.localhost./",
  "http://127.0.0.1/",
  "http://2130706433/", // decimal
  "http://0x7f.1/", // hex, short
  "http://0177.0.0.1/", // octal
  "http://127.1/", // short
  "http://%31%32%37.0.0.1/", // percent-encoded
  "http://１２７.０.０.１/", // full-width
  "http:\\\\127.0.0.1\\", // backslashes are slashes for http
  "http://127.0.0.1./", // trailing dot
  "http://0.0.0.0/",
  "http://0/",
  "http://10.0.0.1/",
  "http://169.254.169.254/latest/meta-data/",
  "http://[::]/",
  "http://[::1]/",
  "http://[::ffff:127.0.0.1]/",
  "http://[::ffff:7f00:1]/",
  "http://[::7f00:1]/",
  "http://[64:ff9b::7f00:1]/",
  "http://[fe80::1]/",
  "http://[fc00::1]/",
  "http://[2001:db8::1]/",
  "http://[::ffff:8.8.8.8]/",
  "http://example.com:22/", // port outside the allowed set
  "http://example.com:0/",
  "https://example.com:81/",
  "http://8.8.8.8:6379/",
];

describe("parseInputUrl: rejections (docs/contract.md §3.2)", () => {
  it.each(invalid)("%j → invalid_url", (raw) => {
    const err = inputError(raw);
    expect(err.errorType).toBe<SnapshotErrorType>("invalid_url");
    expect(err.requestedUrl).toBe(raw);
    expect(err.message.length).toBeGreaterThan(0);
  });

  it.each(ssrf)("%j → ssrf", (raw) => {
    const err = inputError(raw);
    expect(err.errorType).toBe<SnapshotErrorType>("ssrf");
    expect(err.requestedUrl).toBe(raw);
  });

  it("uses the configured ports: 80 explicit is the default port and allowed", () => {
    expect(parseInputUrl("http://example.com:80/", policy).href).toBe("http://example.com/");
    const only443: UrlPolicy = { ...policy, allowedPorts: new Set([443]) };
    expect(parseInputUrl("example.com", only443).port).toBe("");
    expect(errorOf(() => parseInputUrl("http://example.com/", only443)).errorType).toBe("ssrf");
  });

  it("lets an allow-listed literal through (SNAPSHOT_ALLOW_CIDRS)", () => {
    const allowing = createAddressPolicy(["127.0.0.2/32"]);
    const p: UrlPolicy = { ...policy, isBlockedAddress: (ip) => allowing.isBlocked(ip) };
    expect(parseInputUrl("http://127.0.0.2/", p).hostname).toBe("127.0.0.2");
    expect(errorOf(() => parseInputUrl("http://127.0.0.1/", p)).errorType).toBe("ssrf");
    // localhost stays blocked by name, whatever it would resolve to.
    expect(errorOf(() => parseInputUrl("http://localhost/", p)).errorType).toBe("ssrf");
  });
});

describe("resolveRedirect (docs/contract.md §4.1 hops)", () => {
  const base = new URL("https://example.com/dir/page?q=1");
  const redirectError = (location: string, from = base) =>
    errorOf(() => resolveRedirect(location, from, policy, "example.com"));

  it.each([
    ["/other", "https://example.com/other"],
    ["next", "https://example.com/dir/next"],
    ["../up", "https://example.com/up"],
    ["?x=2", "https://example.com/dir/page?x=2"],
    ["//cdn.example.net/a", "https://cdn.example.net/a"],
    ["http://www.example.com:8080/", "http://www.example.com:8080/"],
    ["HTTPS://WWW.Example.COM", "https://www.example.com/"],
    ["https://example.org/#frag", "https://example.org/#frag"],
  ])("follows %j → %s", (location, expected) => {
    expect(resolveRedirect(location, base, policy, "example.com").href).toBe(expected);
  });

  it.each([
    "file:///etc/passwd",
    "gopher://example.com/",
    "javascript:alert(1)",
    "data:text/html,hi",
    "ftp://example.com/",
    "http://user:pw@example.com/",
    "https://admin@example.org/",
    "http://127.0.0.1/",
    "http://2130706433/",
    "http://[::1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://169.254.169.254/latest/meta-data/",
    "http://localhost:8080/",
    "http://foo.localhost/",
    "https://example.com:22/",
    "https://intranet/",
    "http://exa mple.com/",
    "http://[::1",
  ])("refuses %j as ssrf", (location) => {
    const err = redirectError(location);
    expect(err.errorType).toBe<SnapshotErrorType>("ssrf");
    expect(err.requestedUrl).toBe("example.com");
  });

  it("refuses a relative Location when the current host itself would be refused", () => {
    // Relative resolution keeps the base's port; a port taken out of the allowed set is refused.
    const p: UrlPolicy = { ...policy, allowedPorts: new Set([443]) };
    expect(
      errorOf(() =>
        resolveRedirect("/x", new URL("https://example.com:8443/"), p, "example.com:8443"),
      ).errorType,
    ).toBe("ssrf");
  });

  it("has no length limit of its own on hops", () => {
    const long = `/${"a".repeat(5000)}`;
    expect(resolveRedirect(long, base, policy, "example.com").pathname).toBe(long);
  });
});

describe("local mode and the hints in refusals (SNAPSHOT_ALLOW_LOCAL)", () => {
  const local = createUrlPolicy({
    allowedPorts: new Set([80, 443]),
    allowCidrs: [],
    allowLocal: true,
  });
  const hint = "use `secsnap scan --local` or `secsnap serve --allow-local`";

  it("allows loopback and private literals and localhost, on any port", () => {
    for (const raw of [
      "http://127.0.0.213:18890/",
      "http://localhost:3000/",
      "http://app.localhost:5173/",
      "http://[::1]:8000/",
      "http://192.168.1.20:65535/",
      "http://10.0.0.1:1/",
    ]) {
      expect(parseInputUrl(raw, local).href).toBe(new URL(raw).href);
    }
    // Every port, for the probes and the dialer too (they read allowedPorts).
    expect(local.allowedPorts.has(443)).toBe(true);
    expect(local.allowedPorts.has(22)).toBe(true);
    expect(local.allowedPorts.size).toBe(65535);
    // A redirect inside the machine is followed too.
    expect(
      resolveRedirect("http://127.0.0.1:9000/x", new URL("http://127.0.0.1:8000/"), local, "i")
        .href,
    ).toBe("http://127.0.0.1:9000/x");
  });

  it.each([
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[fd20:ce::254]/",
    "http://[fd00:ec2::23]/",
    "http://168.63.129.16/",
    "http://[fe80::1]/",
    "http://0.0.0.0:8000/",
  ])("still refuses %s, without the hint", (raw) => {
    const err = errorOf(() => parseInputUrl(raw, local));
    expect(err.errorType).toBe<SnapshotErrorType>("ssrf");
    expect(err.message).not.toContain("--local");
  });

  it("a refused private address or localhost says how to allow it", () => {
    for (const raw of ["http://127.0.0.213:18890/", "http://10.1.2.3/", "http://[::1]/"]) {
      expect(inputError(raw).message).toContain(hint);
    }
    expect(inputError("http://localhost/").message).toContain(hint);
    expect(redirectErrorFrom("http://192.168.0.1/").message).toContain(hint);
    // Metadata and reserved space get no hint: local mode would not open them either.
    expect(inputError("http://169.254.169.254/").message).not.toContain("--local");
    // Cloud host services inside the unique-local range local mode opens: no hint either.
    expect(inputError("http://[fd20:ce::254]/").message).not.toContain("--local");
    expect(inputError("http://[fd00:ec2::23]/").message).not.toContain("--local");
    expect(inputError("http://192.0.2.1/").message).not.toContain("--local");
  });

  it("a refused port names SNAPSHOT_ALLOWED_PORTS and that --local allows any port", () => {
    const { message } = inputError("https://example.com:18890/");
    expect(message).toContain("Port 18890 is not allowed (allowed: 80, 443, 8080, 8443");
    expect(message).toContain("SNAPSHOT_ALLOWED_PORTS");
    expect(message).toContain(
      "`secsnap scan --local` or `secsnap serve --allow-local` allow any port",
    );
  });
});

function redirectErrorFrom(location: string): SnapshotError {
  return errorOf(() => resolveRedirect(location, new URL("https://example.com/"), policy, "x"));
}
