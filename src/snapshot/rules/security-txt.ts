/**
 * security.txt (docs/contract.md §4.5, docs/findings.md): the check of `security_txt`, its note,
 * and `security-txt-missing` in the words of that note.
 */
import type { FileProbe } from "../types.js";
import type { Evidence, FileVerdict } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";
import { fileNote, fileNotes, fileVerdict, isHtml, lines } from "./well-known.js";

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

export const SECURITY_TXT_MISSING: FindingDef = {
  id: "security-txt-missing",
  check: "security_txt",
  severity: "info",
  message: "security.txt is missing.",
  recommendation:
    "Publish `/.well-known/security.txt` (RFC 9116) with at least `Contact:` and `Expires:`.",
};

/** Only a security.txt known to be absent (false), not one that could not be checked (null). */
export function judgeSecurityTxt(e: Evidence): Finding[] {
  const verdict = e.files?.security_txt;
  if (!verdict || verdict.value !== false) return [];
  return [found(SECURITY_TXT_MISSING, fileNote("security.txt", verdict) ?? undefined)];
}

export const securityTxtRule = defineRule({
  topic: "security_txt",
  check: {
    kind: "file",
    name: "security_txt",
    field: "security_txt_present",
    fileName: "security.txt",
    label: "security.txt",
  },
  findings: [SECURITY_TXT_MISSING],
  judge: judgeSecurityTxt,
  notes: (e) => fileNotes(e.files?.security_txt, "security.txt"),
});
