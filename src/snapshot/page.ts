/**
 * The page evidence of a report (docs/snapshot-engine.md "Page evidence"): what the first 64 KiB
 * of the final HTML says about its Content-Security-Policy `<meta>` tags and its scripts. Pure:
 * the body is read by fetch.ts.
 */
import type { PageEvidence } from "./rules/evidence.js";
import type * as Htmlparser2 from "htmlparser2";

/** Elements a parser keeps in `<head>`; any other start tag begins the body (HTML §13.2.6.4.4). */
const HEAD_ELEMENTS = new Set([
  "html",
  "head",
  "meta",
  "title",
  "link",
  "style",
  "script",
  "base",
  "noscript",
  "template",
  "basefont",
  "bgsound",
]);

/** Script types a browser runs (HTML §4.12.1: a JavaScript MIME type, "module" or none). */
function runsScript(type: string | undefined): boolean {
  if (type === undefined) return true;
  const t = type.trim().toLowerCase();
  return (
    t === "" ||
    t === "module" ||
    /^(text|application)\/(x-)?(java|ecma)script$/.test(t) ||
    /^text\/(javascript1\.[0-5]|jscript|livescript)$/.test(t)
  );
}

/** An absolute http(s) URL, or null for what a browser would not fetch over the network. */
function resolveHttp(ref: string, base: URL): URL | null {
  const trimmed = ref.trim();
  if (trimmed === "") return null;
  try {
    const url = new URL(trimmed, base);
    return url.protocol === "http:" || url.protocol === "https:" ? url : null;
  } catch {
    return null;
  }
}

/**
 * Parses `html` (already cut at 64 KiB) as found at `pageUrl`. A CSP `<meta>` counts only in the
 * head, as browsers honour it (HTML §4.2.5.3): before `</head>`, `<body>` or the first element
 * that cannot be in a head. Script URLs resolve against the first `<base href>` seen before them
 * (the document base URL; a base with a non-http(s) URL is ignored, as browsers do).
 */
/** htmlparser2, imported once: each `import()` is a loader round trip, even of a loaded module. */
let htmlparser: Promise<typeof Htmlparser2> | undefined;

export async function parsePage(html: string, pageUrl: URL): Promise<PageEvidence> {
  // Loaded with the first page: not part of the CLI's start-up (docs/benchmarks-history.md, "Start-up").
  const { Parser } = await (htmlparser ??= import("htmlparser2"));
  const metaCsp: string[] = [];
  const scripts: PageEvidence["scripts"] = [];
  let inHead = true;
  let base: URL | null = null;
  // Scripts inside <template> are inert (HTML §4.12.3): not fetched, not run.
  let templates = 0;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (!HEAD_ELEMENTS.has(name)) inHead = false;
        if (name === "body") inHead = false;
        if (name === "base" && base === null && attribs.href !== undefined) {
          base = resolveHttp(attribs.href, pageUrl);
        }
        if (name === "meta" && inHead) {
          const equiv = (attribs["http-equiv"] ?? "").trim().toLowerCase();
          if (equiv === "content-security-policy" && attribs.content !== undefined) {
            metaCsp.push(attribs.content);
          }
        }
        if (name === "template") templates++;
        if (
          name === "script" &&
          templates === 0 &&
          attribs.src !== undefined &&
          runsScript(attribs.type)
        ) {
          const url = resolveHttp(attribs.src, base ?? pageUrl);
          if (url) scripts.push({ src: url.href, integrity: attribs.integrity ?? null });
        }
      },
      onclosetag(name) {
        if (name === "head") inHead = false;
        if (name === "template" && templates > 0) templates--;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  return { metaCsp, scripts };
}

/** Whether a Content-Type names HTML (text/html or application/xhtml+xml). */
export function isHtmlType(contentType: string | undefined): boolean {
  const essence = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  return essence === "text/html" || essence === "application/xhtml+xml";
}
