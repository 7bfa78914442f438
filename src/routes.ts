/**
 * Every public path of the service, written once (docs/http-api.md "Routes"): the router, the
 * OpenAPI document, the discovery documents, /llms.txt, the page and the CLI all read them here.
 * A root file, below every layer, because the payment layer names the paid path too.
 */

/** The paths, by what each serves. */
export const PATHS = {
  snapshot: "/v1/snapshot",
  snapshotAgain: "/v1/snapshots/{snapshot_id}",
  mcp: "/mcp",
  demo: "/demo/snapshot",
  health: "/health",
  ready: "/ready",
  openApi: "/openapi.json",
  wellKnownX402: "/.well-known/x402",
  jwks: "/.well-known/jwks.json",
  didWeb: "/.well-known/did.json",
  llmsTxt: "/llms.txt",
  faviconIco: "/favicon.ico",
  faviconSvg: "/favicon.svg",
  page: "/",
  reference: "/reference",
  challenge: "/demo/challenge",
  payAndScan: "/demo/pay-and-scan",
} as const;

/** The resource the MCP challenge names (as in the x402 MCP transport's examples). */
export const MCP_SNAPSHOT_RESOURCE = "mcp://tool/snapshot";

export interface Route {
  method: "GET" | "POST";
  path: (typeof PATHS)[keyof typeof PATHS];
  /** Paid with x402 (the request itself, or the tool call it carries). */
  paid: boolean;
  /** Described as an operation in /openapi.json. */
  documented: boolean;
  /** Answered only in devnet mode. */
  devnetOnly?: true;
  purpose: string;
}

/** Every public route, in the order the router mounts them. */
export const ROUTE_TABLE: readonly Route[] = [
  {
    method: "POST",
    path: PATHS.snapshot,
    paid: true,
    documented: true,
    purpose: "the report of one URL",
  },
  {
    method: "GET",
    path: PATHS.snapshotAgain,
    paid: false,
    documented: true,
    purpose: "a paid report again, for its payer (sign-in-with-x)",
  },
  {
    method: "POST",
    path: PATHS.mcp,
    paid: true,
    documented: false,
    purpose: "MCP: the same report as a tool",
  },
  {
    method: "GET",
    path: PATHS.demo,
    paid: false,
    documented: true,
    purpose: "a fixed example report",
  },
  { method: "GET", path: PATHS.health, paid: false, documented: true, purpose: "liveness" },
  { method: "GET", path: PATHS.ready, paid: false, documented: true, purpose: "readiness" },
  {
    method: "GET",
    path: PATHS.openApi,
    paid: false,
    documented: true,
    purpose: "the OpenAPI document",
  },
  {
    method: "GET",
    path: PATHS.wellKnownX402,
    paid: false,
    documented: false,
    purpose: "x402 resource list",
  },
  {
    method: "GET",
    path: PATHS.jwks,
    paid: false,
    documented: false,
    purpose: "the keys that sign paid reports",
  },
  {
    method: "GET",
    path: PATHS.didWeb,
    paid: false,
    documented: false,
    purpose: "the did:web document with those keys",
  },
  {
    method: "GET",
    path: PATHS.llmsTxt,
    paid: false,
    documented: false,
    purpose: "guide for agents",
  },
  { method: "GET", path: PATHS.faviconIco, paid: false, documented: false, purpose: "icon" },
  { method: "GET", path: PATHS.faviconSvg, paid: false, documented: false, purpose: "icon" },
  { method: "GET", path: PATHS.page, paid: false, documented: false, purpose: "the page" },
  {
    method: "GET",
    path: PATHS.reference,
    paid: false,
    documented: false,
    purpose: "API reference",
  },
  {
    method: "POST",
    path: PATHS.challenge,
    paid: false,
    documented: false,
    purpose: "the page's 402",
  },
  {
    method: "POST",
    path: PATHS.payAndScan,
    paid: false,
    documented: false,
    devnetOnly: true,
    purpose: "the page pays from the devnet account, then scans",
  },
];

/** A table path as the router writes it: `{name}` (OpenAPI's form) becomes `:name`. */
export function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ":$1");
}

/** The table path a request path matches, `{name}` standing for one segment; undefined: none. */
export function routeOfPath(path: string, routes: readonly string[]): string | undefined {
  return routes.find((route) =>
    route.includes("{")
      ? new RegExp(`^${route.replace(/\{\w+\}/g, "[^/]+")}$`).test(path)
      : route === path,
  );
}
