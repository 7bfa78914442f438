/**
 * POST /mcp's Host rule (mcp-host.ts) on every route, in devnet and local mode (docs/security.md,
 * "Devnet and local mode"). There a page on a name its attacker rebinds by DNS to this machine
 * would reach, under that name, a service that pays from the devnet's public account and, in
 * local mode, fetches this machine's own network: its scan form, or its paid route with a proof
 * signed with the public devnet key. A production service takes any `Host`.
 */
import type { MiddlewareHandler } from "hono";
import { hostNotAllowed, toResponse } from "../../payment/index.js";
import { mcpHostAllowed } from "./mcp-host.js";

/**
 * Refuses a request whose `Host` the rule refuses: 403 `host_not_allowed`. `ownGuardPath` is left
 * to its own guard (POST /mcp answers in JSON-RPC).
 */
export function hostGuard(publicUrl: string | undefined, ownGuardPath?: string): MiddlewareHandler {
  const publicHostname = publicUrl === undefined ? undefined : new URL(publicUrl).hostname;
  return async (c, next) => {
    const host = c.req.header("host");
    if (c.req.path === ownGuardPath || mcpHostAllowed(host, publicHostname)) return next();
    return toResponse(hostNotAllowed(host));
  };
}
