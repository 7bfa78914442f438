/**
 * GET /reference: Scalar's interactive API reference over /openapi.json, its script served by us
 * from node_modules (no CDN), under a CSP as tight as Scalar allows (docs/http-api.md "The page").
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gzip } from "node:zlib";
import { Scalar } from "@scalar/hono-api-reference";
import { Parser } from "htmlparser2";
import type { Context, Env, Hono } from "hono";
import { accepts } from "hono/accepts";
import { toResponse, type Answer } from "../../payment/index.js";
import { PATHS } from "../../routes.js";
import { PAGE_CACHE_CONTROL, PAGE_SECURITY_HEADERS } from "./home.js";

/** The standalone bundle and its content-addressed path, read once per process, when first asked. */
interface Bundle {
  path: string;
  body: Uint8Array;
  /** The body gzipped (3 MB → about 0.9 MB), once it is ready; compressed off the event loop. */
  gzipped?: Uint8Array;
}
let bundle: Bundle | undefined;

function scalarBundle(): Bundle {
  if (!bundle) {
    const require = createRequire(import.meta.url);
    const file = require.resolve("@scalar/api-reference/browser/standalone.js");
    const body = new Uint8Array(readFileSync(file));
    // The content's hash in the path lets browsers keep it for a year: a new version is a new URL.
    const hash = createHash("sha256").update(body).digest("hex").slice(0, 16);
    const made: Bundle = { path: `${PATHS.reference}/scalar.${hash}.js`, body };
    gzip(body, (err, out) => {
      if (!err) made.gzipped = out;
    });
    bundle = made;
  }
  return bundle;
}

const IMMUTABLE = "public, max-age=31536000, immutable";

/** Scalar's inline start-up scripts, as CSP hash sources. */
function inlineScriptHashes(document: string): string[] {
  const hashes: string[] = [];
  let text: string | null = null;
  const parser = new Parser({
    onopentag(name, attrs) {
      text = name === "script" && attrs.src === undefined ? "" : null;
    },
    ontext(chunk) {
      if (text !== null) text += chunk;
    },
    onclosetag(name) {
      if (name === "script" && text !== null) {
        hashes.push(`'sha256-${createHash("sha256").update(text).digest("base64")}'`);
      }
      text = null;
    },
  });
  parser.end(document);
  return hashes;
}

/**
 * Mounts the reference and its script. Scalar's HTML is the same on every request, so it is
 * rendered once, on the first, and its inline blocks are allowed by hash, not 'unsafe-inline'.
 */
export function addReferenceRoutes<E extends Env>(app: Hono<E>, documentPath: string): void {
  let page: Promise<Answer> | undefined;
  const renderOnce = async (c: Context<E>): Promise<Answer> => {
    const render = Scalar<E>({
      url: documentPath,
      cdn: scalarBundle().path,
      pageTitle: "secsnap API reference",
      // Everything from our origin: no web fonts, no telemetry, no request proxy.
      withDefaultFonts: false,
      telemetry: false,
      favicon: PATHS.faviconSvg,
    });
    const rendered = await render(c, async () => {});
    const document = rendered ? await rendered.text() : "";
    return {
      status: 200,
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": PAGE_CACHE_CONTROL,
        ...PAGE_SECURITY_HEADERS,
        "content-security-policy": referenceCsp(inlineScriptHashes(document)),
      },
      body: document,
    };
  };
  app.get(PATHS.reference, async (c) => toResponse(await (page ??= renderOnce(c))));
  // The bundle (3 MB) is read on the first request that needs it, not at start.
  app.get(`${PATHS.reference}/:file`, async (c, next) => {
    const script = scalarBundle();
    if (c.req.path !== script.path) return next();
    const headers: Record<string, string> = {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": IMMUTABLE,
      "x-content-type-options": "nosniff",
      vary: "accept-encoding",
    };
    const wantsGzip =
      accepts(c, { header: "Accept-Encoding", supports: ["gzip"], default: "identity" }) === "gzip";
    if (wantsGzip && script.gzipped) {
      return new Response(script.gzipped, {
        headers: { ...headers, "content-encoding": "gzip" },
      });
    }
    return new Response(script.body, { headers });
  });
}

function referenceCsp(scriptHashes: readonly string[]): string {
  return [
    "default-src 'self'",
    `script-src 'self' ${scriptHashes.join(" ")}`,
    // Scalar sets style attributes and adds <style> elements as it renders: no hash can name
    // them, so inline styles are allowed here (a hash beside 'unsafe-inline' would disable it).
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}
