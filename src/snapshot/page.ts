/**
 * The page evidence of a report (docs/snapshot-engine.md "Page evidence"): what the first 64 KiB
 * of the final HTML says about its Content-Security-Policy `<meta>` tags, its scripts and its
 * `http:` subresources. Pure: the body is read by fetch.ts.
 */
import type { Destination, LinkFetch, PageEvidence } from "./rules/evidence.js";
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

/** Whether a lowercased MIME type essence is a JavaScript MIME type (MIME Sniffing). */
function isJavaScriptMime(essence: string): boolean {
  return (
    /^(text|application)\/(x-)?(java|ecma)script$/.test(essence) ||
    /^text\/(javascript1\.[0-5]|jscript|livescript)$/.test(essence)
  );
}

/** Script types a browser runs (HTML §4.12.1: a JavaScript MIME type, "module" or none). */
function runsScript(type: string | undefined): boolean {
  if (type === undefined) return true;
  const t = type.trim().toLowerCase();
  return t === "" || t === "module" || isJavaScriptMime(t);
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

/** The URLs of a `srcset` (each candidate is a URL then optional descriptors, comma-separated). */
function srcsetUrls(srcset: string): string[] {
  return srcset
    .split(",")
    .map((c) => c.trim().split(/\s+/)[0] ?? "")
    .filter((u) => u !== "");
}

/** A URL an element makes the browser fetch (as written), its destination and its link type. */
interface Ref {
  ref: string;
  destination: Destination;
  rel?: LinkFetch;
}

/** HTML's ASCII whitespace, which separates the tokens of a `rel`. */
const ASCII_WHITESPACE = /[\t\n\f\r ]+/;

/**
 * HTML's "translate a preload destination": the `as` values (any case) a preload fetches, and
 * the destination of its request ("fetch" is Fetch's empty destination). Any other `as`, or
 * none, and the preload fetches nothing.
 */
const PRELOAD_AS: Readonly<Record<string, Destination>> = {
  fetch: "",
  font: "font",
  image: "image",
  script: "script",
  style: "style",
  track: "track",
};

/** Fetch's script-like destinations: what a `<link rel=modulepreload>` may fetch. */
const SCRIPT_LIKE: readonly Destination[] = [
  "script",
  "audioworklet",
  "paintworklet",
  "serviceworker",
  "sharedworker",
  "worker",
];

/** Fetch's other potential destinations: an `as` keyword that is not script-like. */
const NOT_SCRIPT_LIKE = new Set([
  "fetch",
  "audio",
  "document",
  "embed",
  "font",
  "frame",
  "iframe",
  "image",
  "json",
  "manifest",
  "object",
  "report",
  "style",
  "track",
  "video",
  "webidentity",
  "xslt",
]);

/** MIME Sniffing's font MIME types besides `font/*`. */
const FONT_TYPES = new Set([
  "application/font-cff",
  "application/font-off",
  "application/font-sfnt",
  "application/font-ttf",
  "application/font-woff",
  "application/vnd.ms-fontobject",
  "application/vnd.ms-opentype",
]);

/** A MIME type's essence: type "/" subtype, each an HTTP token (MIME Sniffing). */
const MIME_ESSENCE = /^([!#$%&'*+.^_`|~0-9a-z-]+)\/[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * HTML's "match preload type": a preload whose `type` is no MIME type of its destination is not
 * fetched. Every MIME type of the right kind is taken as one the browser supports.
 */
function matchesPreloadType(type: string | undefined, destination: Destination): boolean {
  if (type === undefined || type === "" || destination === "") return true;
  const essence = (type.split(";")[0] ?? "").trim().toLowerCase();
  const kind = MIME_ESSENCE.exec(essence)?.[1];
  switch (destination) {
    case "image":
      return kind === "image";
    case "font":
      return kind === "font" || FONT_TYPES.has(essence);
    case "script":
      return isJavaScriptMime(essence);
    case "style":
      return essence === "text/css";
    case "track":
      return essence === "text/vtt";
    default:
      return false;
  }
}

/**
 * What a `<link>` fetches, by each of its link types (HTML "Link types"; `rel` is a set of
 * space-separated tokens in any case, so `shortcut icon` has `icon`):
 *
 * - `stylesheet`: destination "style".
 * - `icon`: "image". `apple-touch-icon` is not collected: it is no HTML link type, so HTML gives
 *   it no fetch; Safari, which reads it, fetches it for its own interface (a home-screen or
 *   bookmark tile), not as part of the page, and other browsers do not fetch it at all. The
 *   page neither shows it nor breaks without it.
 * - `preload`: the destination its `as` translates to, when its `type` matches it; an
 *   `as=image` preload may fetch any of its `imagesrcset` candidates instead of its `href`, with
 *   no "imageset" initiator (that is only `<img>`'s and `<picture>`'s), so each is collected.
 * - `modulepreload`: "script", or the script-like destination its `as` names; an `as` naming
 *   another destination fetches nothing.
 * - `prefetch`: a speculative fetch for a later navigation, with the empty destination. Mixed
 *   Content blocks every request but a top-level navigation ("Should fetching request be
 *   blocked as mixed content?") and upgrades only images, audio and video, so an `http:`
 *   prefetch is blocked like a script: collected, and judged as what browsers block.
 */
function linkRefs(a: Record<string, string>): Ref[] {
  const rel = new Set((a.rel ?? "").toLowerCase().split(ASCII_WHITESPACE));
  const href = a.href ?? "";
  const refs: Ref[] = [];
  if (rel.has("stylesheet")) refs.push({ ref: href, destination: "style", rel: "stylesheet" });
  if (rel.has("icon")) refs.push({ ref: href, destination: "image", rel: "icon" });
  const as = (a.as ?? "").toLowerCase();
  const preload = PRELOAD_AS[as];
  if (rel.has("preload") && preload !== undefined && matchesPreloadType(a.type, preload)) {
    refs.push({ ref: href, destination: preload, rel: "preload" });
    if (preload === "image" && a.imagesrcset !== undefined) {
      for (const ref of srcsetUrls(a.imagesrcset)) {
        refs.push({ ref, destination: "image", rel: "preload" });
      }
    }
  }
  if (rel.has("modulepreload") && !NOT_SCRIPT_LIKE.has(as)) {
    const destination = SCRIPT_LIKE.find((d) => d === as) ?? "script";
    refs.push({ ref: href, destination, rel: "modulepreload" });
  }
  if (rel.has("prefetch")) refs.push({ ref: href, destination: "", rel: "prefetch" });
  return refs;
}

/**
 * The subresources an element makes the browser fetch, each with the destination HTML gives its
 * request (rules/mixed-content.ts classifies them by it); `srcset` candidates and scripts are
 * gathered apart. `media` is the `<audio>` or `<video>` open around the element, if any: a
 * `<source src>` is its media resource, while in `<picture>` only a `<source srcset>` is read.
 * A `<video poster>` is fetched as an image (HTML's "poster frame"); `<audio>` has no poster.
 */
function subresourceRefs(
  name: string,
  a: Record<string, string>,
  media: "audio" | "video" | null,
): Ref[] {
  switch (name) {
    case "img":
      return [{ ref: a.src ?? "", destination: "image" }];
    // The Image Button state only: `type` is an enumerated attribute, matched in any case but
    // not trimmed (HTML "enumerated attribute"), so `type=" image"` is a text field.
    case "input":
      return (a.type ?? "").toLowerCase() === "image"
        ? [{ ref: a.src ?? "", destination: "image" }]
        : [];
    case "source":
      return media ? [{ ref: a.src ?? "", destination: media }] : [];
    case "audio":
      return [{ ref: a.src ?? "", destination: "audio" }];
    case "video":
      return [
        { ref: a.src ?? "", destination: "video" },
        { ref: a.poster ?? "", destination: "image" },
      ];
    case "iframe":
    case "frame":
    case "embed":
    case "track":
      return [{ ref: a.src ?? "", destination: name }];
    case "object":
      return [{ ref: a.data ?? "", destination: "object" }];
    case "link":
      return linkRefs(a);
    default:
      return [];
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
 * counts (HTML "frozen base URL"): one that is no URL leaves the page URL, one on another scheme
 * (`javascript:`) leaves relative URLs unresolvable, so not fetched.
 */
/** htmlparser2, imported once: each `import()` is a loader round trip, even of a loaded module. */
let htmlparser: Promise<typeof Htmlparser2> | undefined;

export async function parsePage(html: string, pageUrl: URL): Promise<PageEvidence> {
  // Loaded with the first page: not part of the CLI's start-up (docs/benchmarks-history.md, "Start-up").
  const { Parser } = await (htmlparser ??= import("htmlparser2"));
  const metaCsp: string[] = [];
  const scripts: PageEvidence["scripts"] = [];
  const insecure: PageEvidence["insecure"] = [];
  const metaReferrer: string[] = [];
  let inBody = false;
  let headClosed = false;
  // The base URL once the first <base href> is seen.
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
          base = URL.parse(attribs.href, pageUrl.href) ?? pageUrl;
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
