import type { FileProbe } from "../types.js";
import type { FileVerdict, FileWhy } from "./evidence.js";
import { capReached, undecodableReason } from "./notes.js";

/**
 * What the three well-known file rules share: the status column of the table of
 * docs/contract.md §4.5, the "HTML" definition, text decoding and the sentence of a verdict. Each
 * file's own content test lives in its own module.
 */

export type ContentTest = (text: string, contentType: string | undefined) => boolean;

/** The body as text: UTF-8, without a BOM. */
export function bodyText(body: Buffer): string {
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

/** The note of a file's verdict (none when it is fine), `name` as people know the file. */
export function fileNote(name: string, v: FileVerdict): string | null {
  switch (v.why) {
    case "ok":
      return null;
    case "missing":
      return `${name} is missing (HTTP ${v.status ?? "?"}).`;
    case "soft_404":
      return `${name} answers 200 but does not look like a real ${name} (soft 404).`;
    case "denied":
      return `${name} could not be checked: access was refused (HTTP ${v.status ?? "?"}).`;
    case "server_error":
      return `${name} could not be checked: the server failed (HTTP ${v.status ?? "?"}).`;
    case "unexpected_status":
      return `${name} could not be checked: unexpected HTTP ${v.status ?? "?"}.`;
    case "body_unreadable":
      return `${name} could not be checked: its content could not be read.`;
    case "body_undecodable":
      return v.undecodable
        ? `${name} could not be checked: ${undecodableReason(v.undecodable)}.`
        : `${name} could not be checked: its content could not be decoded.`;
    case "blocked":
      return `${name} could not be checked: it redirects to a target that is not allowed.`;
    case "too_many_redirects":
      return `${name} could not be checked: it redirects more than 3 times.`;
    case "timeout":
      return `${name} could not be checked: no answer before the deadline.`;
    case "network":
      return `${name} could not be checked: a network error occurred.`;
    case "capped":
      return v.capped
        ? `${name} was not checked: ${capReached(v.capped)}.`
        : `${name} was not checked: our per-snapshot limit was reached.`;
  }
}

/** The notes of a file rule: its verdict's sentence, when the final origin was asked. */
export function fileNotes(verdict: FileVerdict | undefined, name: string): string[] {
  const note = verdict ? fileNote(name, verdict) : null;
  return note === null ? [] : [note];
}
