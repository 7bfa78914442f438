import { once } from "node:events";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueLeaf, issueUntrustedLeaf, loadTestCa } from "../fixtures/tls.js";

// The whole suite relies on NODE_EXTRA_CA_CERTS (set by global-setup.ts) making undici trust the
// test CA with its default TLS settings. This proves it, and that trust is not blanket.
describe("test CA trust through NODE_EXTRA_CA_CERTS", () => {
  const servers: ReturnType<typeof createServer>[] = [];
  const agent = new Agent();

  async function serve(leaf: { certPem: string; keyPem: string }): Promise<number> {
    const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) =>
      res.end("hi"),
    );
    servers.push(server);
    server.listen(0, "127.0.0.2");
    await once(server, "listening");
    return (server.address() as AddressInfo).port;
  }

  let trustedPort = 0;
  let untrustedPort = 0;
  beforeAll(async () => {
    const ca = await loadTestCa();
    trustedPort = await serve(await issueLeaf(ca, { ips: ["127.0.0.2"] }));
    untrustedPort = await serve(await issueUntrustedLeaf({ ips: ["127.0.0.2"] }));
  });
  afterAll(async () => {
    await agent.close();
    for (const s of servers) s.close();
  });

  it("the environment points at the CA file", () => {
    expect(process.env.NODE_EXTRA_CA_CERTS).toMatch(/ca\.pem$/);
  });

  it("undici accepts a leaf signed by the test CA", async () => {
    const res = await request(`https://127.0.0.2:${trustedPort}/`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe("hi");
  });

  it("undici still rejects a leaf from another CA", async () => {
    await expect(
      request(`https://127.0.0.2:${untrustedPort}/`, { dispatcher: agent }),
    ).rejects.toMatchObject({ code: "SELF_SIGNED_CERT_IN_CHAIN" });
  });
});
