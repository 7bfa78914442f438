/**
 * What each HTML element makes a browser fetch (page.ts's parse asks it of every start tag): the
 * URL as written and the Fetch destination HTML gives the request, which mixed-content blocking
 * goes by (rules/mixed-content.ts). Pure tables and functions of an element's attributes.
 */
import type { Destination, LinkFetch } from "./rules/evidence.js";

/** Whether a lowercased MIME type essence is a JavaScript MIME type (MIME Sniffing). */
function isJavaScriptMime(essence: string): boolean {
  return (
    /^(text|application)\/(x-)?(java|ecma)script$/.test(essence) ||
    /^text\/(javascript1\.[0-5]|jscript|livescript)$/.test(essence)
  );
}

/** Script types a browser runs (HTML §4.12.1: a JavaScript MIME type, "module" or none). */
export function runsScript(type: string | undefined): boolean {
  if (type === undefined) return true;
  const t = type.trim().toLowerCase();
  return t === "" || t === "module" || isJavaScriptMime(t);
}

/** The URLs of a `srcset` (each candidate is a URL then optional descriptors, comma-separated). */
export function srcsetUrls(srcset: string): string[] {
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
export function subresourceRefs(
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
