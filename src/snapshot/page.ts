/**
 * The page evidence of a report (docs/snapshot-engine.md "Page evidence"): what the first 64 KiB
 * of the final HTML says about its Content-Security-Policy `<meta>` tags, its scripts and its
 * `http:` subresources. Pure: the body is read by fetch.ts.
 */
import { runsScript, srcsetUrls, subresourceRefs } from "./page-fetches.js";
import { isBaseAllowed, metaBaseUri } from "./rules/csp.js";
import type { PageEvidence } from "./rules/evidence.js";
import type * as Htmlparser2 from "htmlparser2";

/**
 * Start tags the "in head" insertion mode puts in the head (HTML §13.2.6.4.4); any other start
 * tag (and non-blank text) begins the body.
 */
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
  "noframes",
  "template",
  "basefont",
  "bgsound",
]);

/**
 * After `</head>` ("after head", HTML §13.2.6.4.6) the same, but `<noscript>`: it begins the
 * body, so a `<meta>` after it is no longer in the head.
 */
const AFTER_HEAD_ELEMENTS = new Set([...HEAD_ELEMENTS].filter((name) => name !== "noscript"));

/** Elements whose content is text, not markup, in a browser that runs scripts (HTML §13.2.6.4). */
const RAW_TEXT = new Set([
  "script",
  "style",
  "title",
  "textarea",
  "noscript",
  "noframes",
  "xmp",
  "iframe",
  "noembed",
]);

/** HTML's ASCII whitespace: text made only of it does not end the head. */
const BLANK = /^[\t\n\f\r ]*$/;

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
 * Parses `html` (already cut at 64 KiB) as found at `pageUrl`, as a browser that runs scripts
 * does. A CSP `<meta>` counts only where HTML §4.2.5.3 applies it: a child of the head (not inside
 * `<noscript>`, whose content is then text, nor `<template>`), while the parser still puts such
 * tags in the head — before the body begins at `<body>`, a start tag that cannot be in a head,
 * or non-blank text (a `<meta>` between `</head>` and the body still goes into the head) — and
 * its `http-equiv` is exactly "content-security-policy" (any case, no spaces). Script and
 * subresource URLs resolve against the first `<base href>` seen before them, and only the first
 * counts (HTML "frozen base URL"): one that is no URL, a `data:` or `javascript:` one, or one
 * that CSP's `base-uri` blocks leaves the page URL (HTML "set the frozen base URL"), and a later
 * one does not count instead; one on another scheme (`about:`) leaves relative URLs
 * unresolvable, so not fetched. `baseUri` holds the `base-uri` lists of the header's enforced
 * policies that have one; the `<meta>` policies applied before the `<base>` add theirs (one
 * after it was not in force when the base was set).
 */
/** htmlparser2, imported once: each `import()` is a loader round trip, even of a loaded module. */
let htmlparser: Promise<typeof Htmlparser2> | undefined;

export async function parsePage(
  html: string,
  pageUrl: URL,
  baseUri: readonly string[][] = [],
): Promise<PageEvidence> {
  // Loaded with the first page: not part of the CLI's start-up (docs/benchmarks.md "Start-up").
  const { Parser } = await (htmlparser ??= import("htmlparser2"));
  const metaCsp: string[] = [];
  const scripts: PageEvidence["scripts"] = [];
  const insecure: PageEvidence["insecure"] = [];
  const metaReferrer: string[] = [];
  let inBody = false;
  let headClosed = false;
  // The base URL once the first <base href> is seen (the page URL when that one is ignored).
  let base: URL | null = null;
  // Content of <template> is inert (HTML §4.12.3): not fetched, not run, not in the head.
  let templates = 0;
  // The raw-text element open now (its content is text to a browser, whatever htmlparser2 sees).
  let raw: string | null = null;
  // The <audio> or <video> open now, whose <source> children give its media resource.
  let media: "audio" | "video" | null = null;
  const parser = new Parser(
    {
      onopentag(name, attribs) {
        if (raw !== null) return;
        if (templates > 0) {
          if (name === "template") templates++;
          if (RAW_TEXT.has(name)) raw = name;
          return;
        }
        const headOnes = headClosed ? AFTER_HEAD_ELEMENTS : HEAD_ELEMENTS;
        if (!headOnes.has(name) || name === "body") inBody = true;
        if (RAW_TEXT.has(name)) raw = name;
        if (name === "template") {
          templates++;
          return;
        }
        if (name === "audio" || name === "video") media = name;
        if (name === "base" && base === null && attribs.href !== undefined) {
          const url = URL.parse(attribs.href, pageUrl.href);
          const metaLists = metaCsp.map(metaBaseUri).filter((l) => l !== null);
          const lists = [...baseUri, ...metaLists];
          const usable = url && url.protocol !== "data:" && url.protocol !== "javascript:";
          base = usable && isBaseAllowed(url, lists, pageUrl) ? url : pageUrl;
        }
        if (name === "meta" && !inBody) {
          const equiv = (attribs["http-equiv"] ?? "").toLowerCase();
          if (equiv === "content-security-policy" && attribs.content !== undefined) {
            metaCsp.push(attribs.content);
          }
        }
        // A referrer <meta> applies anywhere in the document (HTML §4.2.5.1 "referrer").
        if (name === "meta" && (attribs.name ?? "").toLowerCase() === "referrer") {
          if (attribs.content) metaReferrer.push(attribs.content);
        }
        if (name === "script" && attribs.src !== undefined && runsScript(attribs.type)) {
          const url = resolveHttp(attribs.src, base ?? pageUrl);
          if (url) scripts.push({ src: url.href, integrity: attribs.integrity ?? null });
        }
        for (const { ref, ...what } of subresourceRefs(name, attribs, media)) {
          const url = resolveHttp(ref, base ?? pageUrl);
          if (url?.protocol === "http:") insecure.push({ element: name, url: url.href, ...what });
        }
        // `<img srcset>` and `<picture><source srcset>`: fetched with the initiator "imageset".
        const imageset = name === "img" || (name === "source" && media === null);
        if (imageset && attribs.srcset !== undefined) {
          for (const ref of srcsetUrls(attribs.srcset)) {
            const url = resolveHttp(ref, base ?? pageUrl);
            if (url?.protocol === "http:") {
              insecure.push({ element: name, url: url.href, destination: "image", imageset: true });
            }
          }
        }
      },
      ontext(text) {
        if (raw === null && templates === 0 && !BLANK.test(text)) inBody = true;
      },
      onclosetag(name, isImplied) {
        if (raw !== null) {
          if (name === raw) raw = null;
          return;
        }
        if (templates > 0) {
          if (name === "template") templates--;
          return;
        }
        // `</body>`, `</html>` and `</br>` in the head end it (HTML §13.2.6.4.4, "anything else").
        if (!isImplied && (name === "body" || name === "html" || name === "br")) inBody = true;
        if (!isImplied && name === "head") headClosed = true;
        if (name === media) media = null;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  return { metaCsp, scripts, insecure, metaReferrer };
}

/** Whether a Content-Type names HTML (text/html or application/xhtml+xml). */
export function isHtmlType(contentType: string | undefined): boolean {
  const essence = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  return essence === "text/html" || essence === "application/xhtml+xml";
}
