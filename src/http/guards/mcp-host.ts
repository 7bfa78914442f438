/**
 * The DNS-rebinding guard of POST /mcp (docs/mcp.md, "Host names"). A page on a name its
 * attacker controls, rebound to 127.0.0.1, reaches a local service under that name; MCP asks a
 * server to refuse such a Host (the conformance suite's `localhost-host-rebinding-rejected`).
 * Accepted: no Host (HTTP/1.0, never a browser), an IP literal (no name to rebind), `localhost`
 * and its subdomains, and PUBLIC_URL's host name. A service reached under another name sets
 * PUBLIC_URL to it. In production the HTTP routes need no guard: they answer any origin through
 * CORS anyway, and hold no session or state a rebinding page could borrow; in devnet and local
 * mode they do, and every route applies this rule (host-rule.ts).
 */
import { isIP } from "node:net";
import type { MiddlewareHandler } from "hono";
import { PATHS } from "../../routes.js";

/** Whether a request with this `Host` may reach POST /mcp. */
export function mcpHostAllowed(host: string | undefined, publicHostname: string | undefined) {
  if (host === undefined || host === "") return true;
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return false;
  }
  const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  // The WHATWG parser has already turned every IPv4 spelling into dotted decimal.
  if (isIP(bare) !== 0) return true;
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return true;
  return hostname === publicHostname;
}

/** 403 with a JSON-RPC error, as the MCP SDK's own guard answers, for a Host it refuses. */
export function mcpHostGuard(publicUrl: string | undefined): MiddlewareHandler {
  const publicHostname = publicUrl === undefined ? undefined : new URL(publicUrl).hostname;
  return async (c, next) => {
    const host = c.req.header("host");
    if (mcpHostAllowed(host, publicHostname)) return next();
    const message =
      `Host ${JSON.stringify(host?.slice(0, 100))} is not served on ${PATHS.mcp}: ` +
      "set PUBLIC_URL to the service's public URL to serve MCP under that name.";
    return c.json({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }, 403);
  };
}
