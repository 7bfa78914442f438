/**
 * The scenario sites: one loopback address per scenario (127.0.20.<n>), HTTPS on :443 and HTTP
 * on :80, because Observatory scans a bare hostname on the default ports only. Binding
 * them needs root (or CAP_NET_BIND_SERVICE).
 */
import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import type { TestCa, TestLeaf } from "../../test/fixtures/tls.js";
import { issueLeaf, selfSignedLeaf } from "../../test/fixtures/tls.js";
import type { Scenario } from "./scenarios.js";

/** The scenario addresses: allowed by our engine, nowhere near the test fixtures' 127.0.0.x. */
export const SITE_CIDR = "127.0.20.0/24";
const addressOf = (index: number) => `127.0.20.${index + 1}`;

export interface Site {
  scenario: Scenario;
  name: string;
  address: string;
}

export interface RunningSites {
  sites: Site[];
  close(): Promise<void>;
}

const SECURITY_TXT = "Contact: mailto:security@example.org\nExpires: 2099-01-01T00:00:00.000Z\n";

/** What the site answers (over HTTPS, or over HTTP when http:// serves the page). */
function serveSite(s: Scenario) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0];
    const headers = { ...s.headers, ...s.dynamicHeaders?.(req) };
    if (path === "/") {
      res.writeHead(200, headers).end(req.method === "HEAD" ? undefined : s.html);
    } else if (path === "/robots.txt") {
      res
        .writeHead(200, { ...headers, "content-type": "text/plain" })
        .end("User-agent: *\nAllow: /\n");
    } else if (path === "/.well-known/security.txt" && s.securityTxt) {
      res.writeHead(200, { ...headers, "content-type": "text/plain" }).end(SECURITY_TXT);
    } else {
      res.writeHead(404, { ...headers, "content-type": "text/plain" }).end("not found\n");
    }
  };
}

/** http:// redirecting to https:// on `host` (the request's own host when undefined). */
function redirectToHttps(host?: string) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const to = host ?? (req.headers.host ?? "").replace(/:\d+$/, "");
    res.writeHead(301, { location: `https://${to}${req.url ?? "/"}` }).end();
  };
}

async function listen(server: Server, address: string, port: number): Promise<() => Promise<void>> {
  const sockets = new Set<Socket>();
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  // Both scanners hang up on certificates they reject; that is expected here.
  server.on("tlsClientError", () => undefined);
  server.keepAliveTimeout = 1000;
  server.listen(port, address);
  await once(server, "listening");
  return async () => {
    for (const s of sockets) s.destroy();
    server.close();
    await once(server, "close").catch(() => undefined);
  };
}

export async function startSites(
  ca: TestCa,
  scenarios: readonly Scenario[],
): Promise<RunningSites> {
  const closers: (() => Promise<void>)[] = [];
  const close = async () => void (await Promise.all(closers.map((c) => c())));
  try {
    const sites = await Promise.all(
      scenarios.map(async (scenario, i): Promise<Site> => {
        const name = `${scenario.id}.test`;
        const address = addressOf(i);
        const names = [name, `www.${name}`];
        if (scenario.https !== "none") {
          const leaf: TestLeaf =
            scenario.https === "ok"
              ? await issueLeaf(ca, { dnsNames: names })
              : await selfSignedLeaf({ dnsNames: names });
          const https = createHttpsServer(
            { cert: leaf.certPem, key: leaf.keyPem },
            serveSite(scenario),
          );
          closers.push(await listen(https, address, 443));
        }
        if (scenario.http !== "none") {
          const handler =
            scenario.http === "serve"
              ? serveSite(scenario)
              : redirectToHttps(scenario.http === "redirect-www" ? `www.${name}` : undefined);
          closers.push(await listen(createHttpServer(handler), address, 80));
        }
        return { scenario, name, address };
      }),
    );
    return { sites, close };
  } catch (error) {
    await close();
    throw error;
  }
}
