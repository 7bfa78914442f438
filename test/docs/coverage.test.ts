/**
 * Every description that tells agents and people what a report covers names all of it: each
 * topic of the rule registry, not "six security headers and three files" of an early version.
 * Read where a reader meets them: llms.txt, /.well-known/x402 and the OpenAPI document as the
 * running app serves them, the README's and the contract's opening lines. A new topic in the
 * registry fails here until the test, and then each description, names it.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RULES } from "../../src/snapshot/rules/registry.js";
import { SNAPSHOT_TOOL } from "../../src/http/mcp/tools.js";
import { ScriptedEngine, sampleResult, serveApp, type Served } from "../http/helpers.js";

/** How a description names each topic of the registry. */
const NAMED: Record<string, RegExp> = {
  https: /HTTPS/,
  hsts: /HSTS/,
  csp: /CSP|Content-Security-Policy/,
  x_frame_options: /X-Frame-Options/,
  x_content_type_options: /X-Content-Type-Options/,
  referrer_policy: /Referrer-Policy/,
  permissions_policy: /Permissions-Policy/,
  security_txt: /security\.txt/,
  robots_txt: /robots\.txt/,
  sitemap_xml: /sitemap\.xml/,
  cookies: /cookies/i,
  http_side: /http:\/\/ side/,
  redirects: /redirects/i,
  sri: /script integrity|subresource integrity/i,
  mixed_content: /mixed content/i,
  cors: /CORS/,
  disclosure: /version disclosure/i,
  tls: /TLS/,
  dns: /CAA, SPF, DMARC and MTA-STS/,
  cross_origin: /cross-origin isolation/i,
  x402: /x402 challenge/,
};

const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const CONTRACT = readFileSync(new URL("../../docs/contract.md", import.meta.url), "utf8");

/** The text from `from` up to the next blank line, on one line. */
function paragraph(text: string, from: string): string {
  const start = text.indexOf(from);
  if (start < 0) throw new Error(`no paragraph starting "${from}"`);
  return text.slice(start, text.indexOf("\n\n", start)).replaceAll("\n", " ");
}

/** The topics a description leaves unnamed. */
function unnamed(description: string): string[] {
  return RULES.map((rule) => rule.topic).filter((topic) => !NAMED[topic]?.test(description));
}

let served: Served;
beforeAll(async () => {
  served = await serveApp({ engine: new ScriptedEngine(async (raw) => sampleResult(raw)) });
});
afterAll(() => served.stop());

const get = async (path: string): Promise<Response> => fetch(`${served.url}${path}`);

describe("what a report covers", () => {
  it("has words for every topic of the registry", () => {
    expect(RULES.map((rule) => rule.topic).filter((topic) => !NAMED[topic])).toEqual([]);
  });

  it("llms.txt names it all in its opening quote", async () => {
    const text = await (await get("/llms.txt")).text();
    expect(unnamed(paragraph(text, "> "))).toEqual([]);
  });

  it("/.well-known/x402's instructions name it all", async () => {
    const { instructions } = (await (await get("/.well-known/x402")).json()) as {
      instructions: string;
    };
    expect(unnamed(instructions)).toEqual([]);
  });

  it("the OpenAPI document's description names it all", async () => {
    const { info } = (await (await get("/openapi.json")).json()) as {
      info: { description: string };
    };
    expect(unnamed(info.description)).toEqual([]);
  });

  it("the page's opening paragraph names it all", async () => {
    const page = await (await get("/")).text();
    const opening = page.slice(page.indexOf("<p>One public URL in"), page.indexOf("</p>"));
    expect(unnamed(opening.replaceAll("&#39;", "'"))).toEqual([]);
  });

  it("the MCP snapshot tool's description names it all", () => {
    expect(unnamed(SNAPSHOT_TOOL.description)).toEqual([]);
  });

  it("the README's and the contract's opening lines name it all", () => {
    expect(unnamed(paragraph(README, "A pay-per-call web API"))).toEqual([]);
    expect(unnamed(paragraph(CONTRACT, "One public URL in"))).toEqual([]);
  });
});
