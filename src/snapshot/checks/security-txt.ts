import type { FileProbe } from "../types.js";
import { fileVerdict, isHtml, lines } from "./well-known.js";
import type { FileVerdict } from "./well-known.js";

export const SECURITY_TXT_PATHS = ["/.well-known/security.txt", "/security.txt"] as const;

const CONTACT_LINE = /^\s*contact\s*:\s*\S/i;

/** 200, not HTML, with a `Contact:` line (RFC 9116's only required field). */
function securityTxtContentOk(text: string, contentType: string | undefined): boolean {
  if (isHtml(text, contentType)) return false;
  return lines(text).some((line) => CONTACT_LINE.test(line));
}

/** docs/contract.md §4.5: the second location is consulted only when the first answered 4xx. */
export function needsSecondLocation(first: FileProbe): boolean {
  return first.kind === "response" && first.status >= 400 && first.status < 500;
}

/**
 * Precedence of docs/contract.md §4.5: true if either location passes; else null if either answer
 * is in the null column; else false. `second` is ignored unless the first location answered 4xx.
 */
export function checkSecurityTxt(first: FileProbe, second: FileProbe | null): FileVerdict {
  const a = fileVerdict(first, securityTxtContentOk);
  if (!needsSecondLocation(first) || second === null) return a;
  const b = fileVerdict(second, securityTxtContentOk);
  if (a.value === true) return a;
  if (b.value === true) return b;
  if (a.value === null) return a;
  if (b.value === null) return b;
  return a;
}
