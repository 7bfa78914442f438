/**
 * The site `secsnap scan`'s CI tests judge: headers present but ignored by browsers
 * (X-Frame-Options ALLOWALL, X-Content-Type-Options sniff) beside a good CSP, on loopback,
 * reachable by address and as `flawed.test` through a real DNS server.
 */
import { startDnsServer, type DnsFixture } from "../fixtures/dns-server.js";
import { respond, startHttpTarget, type TargetServer } from "../fixtures/targets.js";
import { cleanEnv } from "./run.js";

export interface FlawedSite {
  /** By name: a name that resolves to loopback is no secure context, its HTTPS is judged. */
  byName(): string;
  /** By address: a loopback site in local mode, its HTTPS not judged. */
  byAddress(): string;
  /** The CLI's environment: the test DNS server answers the name, no colours. */
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

export async function startFlawedSite(): Promise<FlawedSite> {
  const site: TargetServer = await startHttpTarget({
    host: "127.0.0.1",
    routes: {
      "/": respond.html("<!doctype html><p>shop</p>", {
        "x-frame-options": "ALLOWALL",
        "x-content-type-options": "sniff",
        "content-security-policy": "default-src 'self'; object-src 'none'; base-uri 'none'",
      }),
    },
  });
  const dns: DnsFixture = await startDnsServer({ "flawed.test": { A: ["127.0.0.1"] } });
  return {
    byName: () => site.url("/", "flawed.test"),
    byAddress: () => site.url("/"),
    env: cleanEnv({ SNAPSHOT_DNS_SERVERS: dns.address, NO_COLOR: "1" }),
    close: async () => {
      await Promise.all([site.close(), dns.close()]);
    },
  };
}
