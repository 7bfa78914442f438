import { isIPv4 } from "node:net";
import { createAddressPolicy, isLocalAddress, withoutBrackets } from "./address-policy.js";
import { SnapshotError } from "../snapshot-error.js";
import type { SnapshotErrorType } from "../snapshot-error.js";

/**
 * docs/contract.md §3.2 (input) and the per-hop half of §4.1: pure URL rules, no network.
 * Parsing is Node's WHATWG `URL` and nothing else. WHATWG already canonicalises the hostile host
 * spellings (decimal/octal/hex/short IPv4, percent-encoded and full-width digits, backslashes,
 * trailing dots on IPv4, IPv6 forms), so the checks below only ever see the canonical host.
 */

export interface UrlPolicy {
  allowedPorts: ReadonlySet<number>;
  isBlockedAddress(ip: string): boolean;
  /** Local mode (SNAPSHOT_ALLOW_LOCAL): `localhost` names too; every port is in allowedPorts. */
  allowLocal?: boolean;
}

/** How a refusal tells a developer to check a site on their own machine. */
const LOCAL_HINT =
  "for a site on your machine use `secsnap scan --local` or `secsnap serve --allow-local`";

/** What a refusal of `address` adds: the hint, only where local mode would help (never for
 * metadata or other reserved space); nothing else. */
export function localModeHint(policy: Pick<UrlPolicy, "allowLocal">, address: string): string {
  return policy.allowLocal !== true && isLocalAddress(address) ? `; ${LOCAL_HINT}` : "";
}

/** Every TCP port: local mode's allowedPorts, so the dialer and the probes need no other rule. */
let everyPort: ReadonlySet<number> | undefined;
function allPorts(): ReadonlySet<number> {
  everyPort ??= new Set(Array.from({ length: 65535 }, (_, i) => i + 1));
  return everyPort;
}

export const MAX_URL_LENGTH = 2048;
const MAX_HOST_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;
/** After WHATWG the host is lower-case ASCII (punycode). Underscores occur in real DNS names. */
const LABEL = /^[a-z0-9_-]+$/;

/**
 * "Starts with `<scheme>://`". Backslashes count as slashes because WHATWG treats them so for
 * http(s): `http:\\127.0.0.1\` is an http URL, not a host named "http". Tabs and newlines are
 * ignored here as the WHATWG parser ignores them.
 */
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:[/\\]{2}/i;
/** Scheme-relative input (`//example.com/`): only the scheme is missing. */
const SCHEME_RELATIVE = /^[/\\]{2}/;

/** Effective port of an http(s) URL or connection (80/443 default). */
export function effectivePort(url: Pick<URL, "port" | "protocol">): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}

/** A fragment is never sent, so it is no part of a URL requested (final_url, hop URLs). */
export function withoutFragment(url: URL): URL {
  if (!url.href.includes("#")) return url; // (an empty fragment, "…/#", has hash "")
  const copy = new URL(url.href);
  copy.hash = "";
  return copy;
}

/** docs/contract.md §4.1 normalized_url: WHATWG serialization without the fragment. */
export function normalizeUrl(url: URL): string {
  return withoutFragment(url).href;
}

/** `https://<host>:<port>/`, the URL whose answer proves HTTPS for a host (port 443: no port). */
export function httpsProbeUrl(hostname: string, port: number): URL {
  const url = new URL("https://probe.invalid/");
  url.hostname = hostname;
  url.port = String(port);
  return url;
}

/** `http://<host>:<port>/`, the URL of the http-side probe (port 80: no port). */
export function httpProbeUrl(hostname: string, port: number): URL {
  const url = new URL("http://probe.invalid/");
  url.hostname = hostname;
  url.port = String(port);
  return url;
}

/** The URL rules for a configuration: the input's and every hop's, and the dialer's addresses. */
export function createUrlPolicy(config: {
  allowedPorts: ReadonlySet<number>;
  allowCidrs: readonly string[];
  /** Local mode: loopback and private targets on any port (docs/contract.md §5.1). */
  allowLocal?: boolean;
}): UrlPolicy {
  const allowLocal = config.allowLocal === true;
  const addresses = createAddressPolicy(config.allowCidrs, { allowLocal });
  return {
    allowedPorts: allowLocal ? allPorts() : config.allowedPorts,
    isBlockedAddress: (ip) => addresses.isBlocked(ip),
    allowLocal,
  };
}

/** What a rule found wrong; the caller decides what error it becomes (input vs redirect). */
interface Violation {
  type: SnapshotErrorType;
  message: string;
}

const violation = (type: SnapshotErrorType, message: string): Violation => ({ type, message });

/** Scheme and userinfo, checked first for the input and for every hop. */
function schemeAndUserinfo(url: URL): Violation | undefined {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return violation(
      "invalid_url",
      `Only http and https URLs are allowed (got "${url.protocol}").`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    return violation("invalid_url", "URLs with credentials (user:password@) are not allowed.");
  }
  return undefined;
}

function isValidHostName(name: string, labels: readonly string[]): boolean {
  if (name.length === 0 || name.length > MAX_HOST_LENGTH) return false;
  for (const label of labels) {
    if (label.length === 0 || label.length > MAX_LABEL_LENGTH || !LABEL.test(label)) return false;
  }
  return true;
}

/**
 * Shared checks for the input and for every redirect hop, in the order of docs/contract.md §3.3:
 * scheme → userinfo → host syntax (invalid_url) → localhost, blocked literal, port (ssrf).
 * Returns what is wrong rather than throwing through a callback: this runs on every request,
 * the unpaid 402 path included, so it builds no closure per call (docs/benchmarks.md "Payment").
 */
function validateParsed(url: URL, policy: UrlPolicy): Violation | undefined {
  const early = schemeAndUserinfo(url);
  if (early) return early;

  const host = url.hostname;
  const isIPv6Literal = host.startsWith("[");
  // WHATWG turns every host that ends in a numeric label into dotted IPv4 or rejects it, so a
  // host that is not dotted IPv4 here is a domain name.
  const isIPv4Literal = !isIPv6Literal && isIPv4(host);
  const isLiteral = isIPv6Literal || isIPv4Literal;

  let isLocalhostName = false;
  if (!isLiteral) {
    const name = host.endsWith(".") ? host.slice(0, -1) : host;
    const labels = name.split(".");
    if (!isValidHostName(name, labels)) {
      return violation("invalid_url", `"${host}" is not a valid host name.`);
    }
    isLocalhostName = name === "localhost" || name.endsWith(".localhost");
    // The localhost rule wins over the two-label rule: `localhost` is ssrf, not invalid_url.
    if (!isLocalhostName && labels.length < 2) {
      return violation(
        "invalid_url",
        `"${host}" is not a valid host name (it needs at least two labels).`,
      );
    }
  }

  // Local mode lets `localhost` through: the resolver answers it with loopback only.
  if (isLocalhostName && policy.allowLocal !== true) {
    return violation(
      "ssrf",
      `"${host}" is a local host name and cannot be snapshotted; ${LOCAL_HINT}.`,
    );
  }
  if (isLiteral && policy.isBlockedAddress(withoutBrackets(host))) {
    const address = withoutBrackets(host);
    return violation(
      "ssrf",
      `${host} is a private, reserved or otherwise non-public address${localModeHint(policy, address)}.`,
    );
  }
  const port = effectivePort(url);
  if (!policy.allowedPorts.has(port)) {
    const allowed = [...policy.allowedPorts].sort((a, b) => a - b).join(", ");
    return violation(
      "ssrf",
      `Port ${port} is not allowed (allowed: ${allowed}; SNAPSHOT_ALLOWED_PORTS sets them, and \`secsnap scan --local\` or \`secsnap serve --allow-local\` allow any port).`,
    );
  }
  return undefined;
}

/**
 * docs/contract.md §3.2 for the user input (string already extracted from the body). Returns the
 * parsed URL. The error's requestedUrl is the raw input as given.
 *
 * Decisions worth knowing: input without `<scheme>://` gets `https://` in front, so
 * `javascript:alert(1)` becomes `https://javascript:alert(1)`, which WHATWG rejects (port
 * "alert(1)") → invalid_url; `http:example.com` likewise becomes an invalid port → invalid_url.
 * `https://@example.com/` has empty userinfo, which WHATWG drops, so it is accepted.
 */
/**
 * The http:// URL a scheme-less input (`example.com`, `//example.com/`) falls back to when its
 * https:// connection is refused, or meets a server that does not speak TLS (docs/contract.md
 * §3.2 rule 2): the same host and path on the http port (80; tests may use another), or on the
 * input's own port when that port answered in plain HTTP. Null when the input named its scheme,
 * or a port that refused, or when the http:// URL breaks a rule (e.g. its port is not allowed).
 */
export function httpFallbackOf(
  raw: string,
  input: URL,
  policy: UrlPolicy,
  { httpPort, plainHttpPort }: { httpPort: number; plainHttpPort: boolean },
): URL | null {
  if (HAS_SCHEME.test(raw.trim().replace(/[\t\n\r]/g, ""))) return null;
  if (input.port !== "" && !plainHttpPort) return null;
  const http = new URL(input.href);
  http.protocol = "http:";
  http.port = input.port !== "" ? input.port : String(httpPort);
  return validateParsed(http, policy) ? null : http;
}

/**
 * The input URL parsed once, where a request first arrives (docs/contract.md §3): the string as
 * submitted (it becomes `requested_url`) and the URL the rules accepted. Made only by
 * parseSnapshotTarget, so holding one means the rules passed.
 */
export interface SnapshotTarget {
  readonly raw: string;
  readonly url: URL;
  readonly [checked]: true;
}
declare const checked: unique symbol;

/** Parses and checks the input URL once (throws SnapshotError), for the engine to use as it is. */
export function parseSnapshotTarget(raw: string, policy: UrlPolicy): SnapshotTarget {
  return { raw, url: parseInputUrl(raw, policy) } as SnapshotTarget;
}

export function parseInputUrl(raw: string, policy: UrlPolicy): URL {
  const trimmed = raw.trim();
  if (trimmed === "") throw new SnapshotError("invalid_url", "The URL is empty.", raw);

  const forDetection = trimmed.replace(/[\t\n\r]/g, "");
  const withScheme = HAS_SCHEME.test(forDetection)
    ? trimmed
    : SCHEME_RELATIVE.test(forDetection)
      ? `https:${trimmed}`
      : `https://${trimmed}`;

  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new SnapshotError("invalid_url", "The URL cannot be parsed.", raw);
  }

  // Scheme and credentials are named before length, so the error says what is really wrong.
  const found =
    schemeAndUserinfo(url) ??
    (trimmed.length > MAX_URL_LENGTH
      ? violation("invalid_url", `The URL is longer than ${MAX_URL_LENGTH} characters.`)
      : validateParsed(url, policy));
  if (found) throw new SnapshotError(found.type, found.message, raw);
  return url;
}

/**
 * Resolves a redirect Location against the current URL (WHATWG only) and re-validates it like
 * the input. Any failure (unparseable, non-http(s) scheme such as file:, credentials, bad host,
 * localhost, blocked literal, port) is SnapshotError("ssrf"): the server tried to send us
 * somewhere we must not go. The 2048-character input limit does not apply to hops
 * (docs/contract.md §4.1 lists what is re-validated; long redirect URLs are ordinary, and undici
 * caps header size).
 */
export function resolveRedirect(
  location: string,
  base: URL,
  policy: UrlPolicy,
  requestedUrl: string,
): URL {
  const refuse = (message: string) =>
    new SnapshotError("ssrf", `Redirect refused: ${message}`, requestedUrl);
  let url: URL;
  try {
    url = new URL(location, base);
  } catch {
    throw refuse("the Location header is not a valid URL.");
  }
  const found = validateParsed(url, policy);
  if (found) throw refuse(found.message);
  return url;
}
