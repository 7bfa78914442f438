/**
 * The honest baseline: a bare undici client that does what any client must — resolve the name
 * (A and AAAA, through the same DNS server the engine uses), connect, complete a fully verified
 * TLS handshake (the test CA is trusted through NODE_EXTRA_CA_CERTS, as for the engine) — and
 * nothing more. Each measurement gets a fresh Agent, so no connection or TLS session is reused
 * from an earlier round.
 */
import { promises as dns } from "node:dns";
import type { LookupFunction } from "node:net";
import { Agent, request } from "undici";

/** A `lookup` for net/tls that asks `dnsServers` (fresh resolver per lookup, like the engine). */
export function dnsLookup(dnsServers: readonly string[]): LookupFunction {
  return (hostname, options, callback) => {
    const resolver = new dns.Resolver({ timeout: 2000, tries: 2 });
    resolver.setServers([...dnsServers]);
    void Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]).then(
      ([v4, v6]) => {
        const found = [
          ...(v4?.status === "fulfilled"
            ? v4.value.map((address) => ({ address, family: 4 }))
            : []),
          ...(v6?.status === "fulfilled"
            ? v6.value.map((address) => ({ address, family: 6 }))
            : []),
        ];
        const first = found[0];
        if (!first) {
          const err = Object.assign(new Error(`${hostname} does not resolve`), {
            code: "ENOTFOUND",
          });
          callback(err, "", 0);
        } else if (options.all) {
          (callback as unknown as (e: null, a: typeof found) => void)(null, found);
        } else {
          callback(null, first.address, first.family);
        }
      },
    );
  };
}

export function freshAgent(dnsServers: readonly string[]): Agent {
  return new Agent({ connect: { lookup: dnsLookup(dnsServers) } });
}

export interface PlainResponse {
  status: number;
  location: string | undefined;
  bytes: number;
}

/** One GET; the body is read to the end, as a client that wants the page does. */
export async function plainGet(url: string, dispatcher: Agent): Promise<PlainResponse> {
  const res = await request(url, { dispatcher, method: "GET" });
  const body = await res.body.arrayBuffer();
  const location = res.headers.location;
  return {
    status: res.statusCode,
    location: typeof location === "string" ? location : undefined,
    bytes: body.byteLength,
  };
}

/** Follows redirects by hand (undici's request() never follows them by itself). */
export async function followChain(
  url: string,
  dispatcher: Agent,
  maxRedirects = 10,
): Promise<{ final: PlainResponse; urls: string[] }> {
  const urls = [url];
  for (;;) {
    const res = await plainGet(urls[urls.length - 1] as string, dispatcher);
    if (res.status < 300 || res.status >= 400 || !res.location) return { final: res, urls };
    if (urls.length > maxRedirects) throw new Error(`more than ${maxRedirects} redirects`);
    urls.push(new URL(res.location, urls[urls.length - 1]).href);
  }
}
