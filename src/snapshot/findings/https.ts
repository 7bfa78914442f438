/** HTTPS and the well-known files (docs/findings.md), in the words of their notes. */
import { fileNote, httpsFailedNote } from "../notes.js";
import { found } from "./finding.js";
import type { Evidence, Finding, FindingDef } from "./finding.js";

export const HTTPS_FAILED: FindingDef = {
  id: "https-failed",
  check: "https",
  severity: "high",
  message: "HTTPS does not work.",
  recommendation:
    "Serve the site over HTTPS with a valid certificate for its name from a trusted certificate authority.",
};
export const SECURITY_TXT_MISSING: FindingDef = {
  id: "security-txt-missing",
  check: "security_txt",
  severity: "info",
  message: "security.txt is missing.",
  recommendation:
    "Publish `/.well-known/security.txt` (RFC 9116) with at least `Contact:` and `Expires:`.",
};

export const HTTPS_FINDINGS: readonly FindingDef[] = [HTTPS_FAILED, SECURITY_TXT_MISSING];

export function judgeHttps(e: Evidence): Finding[] {
  // A probe our own cap stopped learned nothing about the site: no finding against it.
  if (e.https.ok || e.https.failure.kind === "capped") return [];
  return [found(HTTPS_FAILED, httpsFailedNote(e.https))];
}

/** Only a security.txt known to be absent (false), not one that could not be checked (null). */
export function judgeSecurityTxt(e: Evidence): Finding[] {
  const verdict = e.files?.security_txt;
  if (!verdict || verdict.value !== false) return [];
  return [found(SECURITY_TXT_MISSING, fileNote("security_txt", verdict) ?? undefined)];
}
