/**
 * Whether a URL matches a CSP source list: CSP3's "Does url match source list in origin with
 * redirect count?" (§6.7.2, URL matching) with a redirect count of 0, as `base-uri` asks it of a
 * `<base>`. Each helper below is the algorithm of that section it names.
 * Hand-written: no npm package does this as CSP3 says (csp_evaluator's wildcard matcher ignores
 * schemes, ports and 'self'; the others build or parse policies and match nothing).
 */

/** An expression as CSP3's source grammar reads it (§2.3.1); the rest match no URL. */
const SCHEME_SOURCE = /^([a-z][a-z0-9+.-]*):$/i;
const HOST_SOURCE =
  /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\*|(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.?)(?::(\d+|\*))?(\/[^?#]*)?$/i;

const DEFAULT_PORTS: Record<string, string> = { http: "80", https: "443", ws: "80", wss: "443" };

/** The schemes whose hosts the URL standard parses as domains or IP addresses. */
const SPECIAL = new Set(["ftp", "file", "http", "https", "ws", "wss"]);

const schemeOf = (url: URL) => url.protocol.slice(0, -1).toLowerCase();

/** `scheme-part` matching: the same scheme, or a secure upgrade of it. */
function schemeMatches(a: string, b: string): boolean {
  a = a.toLowerCase();
  b = b.toLowerCase();
  return (
    a === b ||
    (a === "http" && b === "https") ||
    (a === "ws" && (b === "wss" || b === "http" || b === "https")) ||
    (a === "wss" && b === "https")
  );
}

/**
 * `host-part` matching, ASCII case-insensitive: `*` any domain, `*.example.com` its
 * subdomains only, else the same name. An IP address is no domain and matches nothing, but
 * `127.0.0.1` written as such (the note under the source grammar, §2.3.1, and browsers).
 */
function hostMatches(pattern: string, url: URL): boolean {
  const host = url.hostname.toLowerCase();
  pattern = pattern.toLowerCase();
  const isIp = host.startsWith("[") || /^\d+\.\d+\.\d+\.\d+$/.test(host);
  if (isIp) return host === "127.0.0.1" && pattern === host;
  // Another scheme's host is opaque, and a file: URL's may be empty: neither is a domain.
  if (!SPECIAL.has(schemeOf(url)) || host === "") return false;
  if (pattern === "*") return true;
  if (pattern.startsWith("*.")) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

/**
 * `port-part` matching: `*` any port; none, or a number, the URL's port, or its
 * scheme's default port when the URL has none. The draft has no 80→443 upgrade here (an
 * `http://example.com:80` source does not match `https://example.com/`).
 */
function portMatches(port: string | undefined, url: URL): boolean {
  if (port === "*") return true;
  const wanted = port === undefined ? null : String(Number(port));
  const actual = url.port === "" ? null : url.port;
  if (wanted === actual) return true;
  return actual === null && wanted === (DEFAULT_PORTS[schemeOf(url)] ?? null);
}

/** The bytes of `s` with each `%XX` decoded (URL "percent-decode"), as a comparable string. */
function percentDecode(s: string): string {
  const bytes = Buffer.from(s, "utf8");
  const out: number[] = [];
  const hex = (b: number | undefined) =>
    b !== undefined && /[0-9a-f]/i.test(String.fromCharCode(b));
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (b === 0x25 && hex(bytes[i + 1]) && hex(bytes[i + 2])) {
      out.push(parseInt(String.fromCharCode(bytes[i + 1] as number, bytes[i + 2] as number), 16));
      i += 2;
    } else out.push(b);
  }
  return Buffer.from(out).toString("latin1");
}

/**
 * `path-part` matching, segment by segment after percent-decoding: a path ending in
 * `/` matches the paths under it, any other only itself.
 */
function pathMatches(a: string, b: string): boolean {
  if (a === "" || (a === "/" && b === "")) return true;
  const exact = !a.endsWith("/");
  const listA = a.split("/");
  const listB = b.split("/");
  if (listA.length > listB.length) return false;
  if (exact && listA.length !== listB.length) return false;
  if (!exact) listA.pop();
  return listA.every((piece, i) => percentDecode(piece) === percentDecode(listB[i] ?? ""));
}

/** `'self'` ("Does url match expression", step 4): the same origin, or the same host upgraded to a secure scheme. */
function selfMatches(url: URL, self: URL): boolean {
  if (url.origin !== "null" && url.origin === self.origin) return true;
  if (url.hostname.toLowerCase() !== self.hostname.toLowerCase()) return false;
  // Both ports the same, or both their scheme's default (which URL leaves out).
  if (url.port !== self.port) return false;
  const scheme = schemeOf(url);
  return (
    scheme === "https" ||
    scheme === "wss" ||
    (schemeOf(self) === "http" && (scheme === "http" || scheme === "ws"))
  );
}

/** "Does url match expression in origin with redirect count?", with a redirect count of 0. */
function expressionMatches(url: URL, expression: string, self: URL): boolean {
  const scheme = schemeOf(url);
  if (expression === "*") {
    return scheme === "http" || scheme === "https" || scheme === schemeOf(self);
  }
  const schemeSource = SCHEME_SOURCE.exec(expression);
  if (schemeSource) return schemeMatches(schemeSource[1] as string, scheme);
  const hostSource = HOST_SOURCE.exec(expression);
  if (hostSource) {
    const [, sourceScheme, host, port, path] = hostSource;
    // Without a scheme, the page's (http: then also matches https:).
    if (!schemeMatches(sourceScheme ?? schemeOf(self), scheme)) return false;
    if (!hostMatches(host as string, url) || !portMatches(port, url)) return false;
    return !path || pathMatches(path, url.pathname);
  }
  if (expression.toLowerCase() === "'self'") return selfMatches(url, self);
  // Other keywords, nonces and hashes match no URL.
  return false;
}

/**
 * Whether `url` matches the source list `sources` of a policy of the page at `self`:
 * an empty list, or `'none'` alone, matches nothing (`'none'` is no expression that matches).
 */
export function matchesSourceList(url: URL, sources: readonly string[], self: URL): boolean {
  return sources.some((expression) => expressionMatches(url, expression, self));
}
