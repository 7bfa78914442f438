import type { Capped, FileProbe, Undecodable } from "../types.js";
import type { FileCheckName } from "./registry.js";

/**
 * What the three well-known file checks share: the status column of the table of
 * docs/contract.md §4.5, the "HTML" definition and text decoding. Each file's own content test
 * lives in its own module.
 */

type FileWhy =
  | "ok"
  | "missing" // 404/410/other 4xx (false)
  | "soft_404" // 200 that fails the content test (false)
  | "denied" // 401/403/429 (null)
  | "server_error" // 5xx (null)
  | "unexpected_status" // 1xx/3xx without a usable Location (null)
  | "body_unreadable" // 200 whose body broke off (null)
  | "body_undecodable" // 200 whose content coding could not be decoded (null)
  | "blocked"
  | "too_many_redirects"
  | "timeout"
  | "capped" // not asked: the snapshot reached one of our caps (null, never the site's fault)
  | "network"; // DNS, refused, reset, TLS, bad HTTP (null)

export interface FileVerdict {
  value: boolean | null;
  why: FileWhy;
  /** The final status, when there was a response. */
  status?: number;
  /** Why the body could not be decoded, for "body_undecodable". */
  undecodable?: Undecodable;
  /** Which of our caps stopped it, for "capped". */
  capped?: Capped;
}

/** The verdict on each well-known file of one origin. */
export type FileVerdicts = Record<FileCheckName, FileVerdict>;

export type ContentTest = (text: string, contentType: string | undefined) => boolean;

/** The body as text: UTF-8, without a BOM. */
function bodyText(body: Buffer): string {
  return new TextDecoder("utf-8").decode(body).replace(/^\uFEFF/, "");
}

/** The lines of a text file, whatever its line ends. */
export function lines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/**
 * docs/contract.md §4.5 "HTML": Content-Type text/html…, or a body starting with `<!doctype
 * html`/`<html`.
 */
export function isHtml(text: string, contentType: string | undefined): boolean {
  if (contentType !== undefined && /^\s*text\/html/i.test(contentType)) return true;
  return /^[\s\uFEFF]*(<!doctype\s+html|<html)/i.test(text);
}

/** The status column of the table, then `contentTest` for a readable 200. */
export function fileVerdict(probe: FileProbe, contentTest: ContentTest): FileVerdict {
  if (probe.kind === "failed") {
    if (probe.capped) return { value: null, why: "capped", capped: probe.capped };
    const why: FileWhy =
      probe.reason === "blocked" ||
      probe.reason === "too_many_redirects" ||
      probe.reason === "timeout"
        ? probe.reason
        : "network";
    return { value: null, why };
  }
  const { status } = probe;
  if (status === 200) {
    if (probe.undecodable) {
      return { value: null, why: "body_undecodable", status, undecodable: probe.undecodable };
    }
    if (probe.body === null) return { value: null, why: "body_unreadable", status };
    return contentTest(bodyText(probe.body), probe.contentType)
      ? { value: true, why: "ok", status }
      : { value: false, why: "soft_404", status };
  }
  if (status === 401 || status === 403 || status === 429)
    return { value: null, why: "denied", status };
  if (status >= 500) return { value: null, why: "server_error", status };
  // 4xx, and 2xx other than 200 (e.g. 204 No Content): the server answered and there is no file.
  if (status >= 400 || (status >= 200 && status < 300))
    return { value: false, why: "missing", status };
  return { value: null, why: "unexpected_status", status };
}
