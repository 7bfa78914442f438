/**
 * The DNS-rebinding guard of POST /mcp (src/http/guards/mcp-host.ts; docs/mcp.md, "Host names").
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { mcpHostAllowed, mcpHostGuard } from "../../../src/http/guards/mcp-host.js";

describe("mcpHostAllowed", () => {
  it.each([
    [undefined, "no Host (HTTP/1.0)"],
    ["127.0.0.1:8080", "IPv4 literal"],
    ["[::1]:8080", "IPv6 literal"],
    ["0x7f.1", "an IPv4 spelling the URL parser normalizes"],
    ["203.0.113.7", "a public IPv4 literal: no name to rebind"],
    ["localhost:8080", "localhost"],
    ["LOCALHOST", "localhost, any case"],
    ["app.localhost", "a subdomain of localhost"],
    ["api.example.com:443", "PUBLIC_URL's host, any port"],
    ["API.Example.COM", "PUBLIC_URL's host, any case"],
  ])("accepts %s (%s)", (host, _why) => {
    expect(mcpHostAllowed(host, "api.example.com")).toBe(true);
  });

  it.each([
    ["evil.example.com", "api.example.com"],
    ["localhost.evil.com", "api.example.com"],
    ["api.example.com.evil.com", "api.example.com"],
    ["api.example.com", undefined],
    ["bad host", "api.example.com"],
  ])("refuses %s (PUBLIC_URL host %s)", (host, publicHost) => {
    expect(mcpHostAllowed(host, publicHost)).toBe(false);
  });
});

describe("mcpHostGuard", () => {
  const app = new Hono();
  app.use("/mcp", mcpHostGuard("https://api.example.com/base"));
  app.post("/mcp", (c) => c.text("served"));

  it("answers a foreign Host with 403 and a JSON-RPC error naming PUBLIC_URL", async () => {
    const response = await app.request("http://evil.example.com/mcp", {
      method: "POST",
      headers: { host: "evil.example.com", origin: "http://evil.example.com" },
    });
    expect(response.status).toBe(403);
    const body = (await response.json()) as { jsonrpc: string; error: { message: string } };
    expect(body.jsonrpc).toBe("2.0");
    expect(body.error.message).toMatch(/PUBLIC_URL/);
  });

  it("passes PUBLIC_URL's host to the route", async () => {
    const response = await app.request("http://api.example.com/mcp", {
      method: "POST",
      headers: { host: "api.example.com" },
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("served");
  });
});
