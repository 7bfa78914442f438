/**
 * security.txt (docs/contract.md §4.5, docs/findings.md): the check of `security_txt`, its note,
 * `security-txt-missing` in the words of that note, and the RFC 9116 fields of one that is there.
 */
import type { FileProbe } from "../types.js";
import type { Evidence, FileVerdict, SecurityTxtFields } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { defineRule } from "./rule.js";
import { bodyText, fileNote, fileNotes, fileVerdict, isHtml, lines } from "./well-known.js";

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

/** A field line (RFC 9116 §2.5: `name: value`, the name in any case); comments start with `#`. */
const FIELD_LINE = /^\s*([A-Za-z-]+)\s*:\s*(.*?)\s*$/;

/** More `Expires` values than this are not kept: one is the rule, the rest only say "several". */
const MAX_EXPIRES_KEPT = 3;

/** The fields the judge reads, from a file that passed the content test. */
function securityTxtFields(text: string, readAt: Date): SecurityTxtFields {
  let contacts = 0;
  const expires: string[] = [];
  for (const line of lines(text)) {
    const m = FIELD_LINE.exec(line);
    const name = m?.[1]?.toLowerCase();
    if (name === "contact") contacts++;
    if (name === "expires" && expires.length < MAX_EXPIRES_KEPT) expires.push(m?.[2] ?? "");
  }
  return { contacts, expires, readAt: readAt.toISOString() };
}

/** A verdict of `probe`, with its fields when it passed. */
function verdictOf(probe: FileProbe, readAt: Date): FileVerdict {
  const v = fileVerdict(probe, securityTxtContentOk);
  if (v.value !== true || probe.kind !== "response" || probe.body === null) return v;
  return { ...v, securityTxt: securityTxtFields(bodyText(probe.body), readAt) };
}

/**
 * Precedence of docs/contract.md §4.5: true if either location passes; else null if either answer
 * is in the null column; else false. `second` is ignored unless the first location answered 4xx.
 */
export function checkSecurityTxt(
  first: FileProbe,
  second: FileProbe | null,
  readAt: Date = new Date(),
): FileVerdict {
  const a = verdictOf(first, readAt);
  if (!needsSecondLocation(first) || second === null) return a;
  const b = verdictOf(second, readAt);
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

export const SECURITY_TXT_EXPIRED: FindingDef = {
  id: "security-txt-expired",
  check: "security_txt",
  severity: "low",
  message: "security.txt has expired.",
  recommendation:
    "Set `Expires:` in security.txt to a date less than a year ahead, and renew it before then (RFC 9116 §2.5.5).",
};

export const SECURITY_TXT_INCOMPLETE: FindingDef = {
  id: "security-txt-incomplete",
  check: "security_txt",
  severity: "low",
  message: "security.txt lacks a field RFC 9116 requires.",
  recommendation:
    "Give security.txt at least one `Contact:` and exactly one `Expires:` with an RFC 3339 date (RFC 9116 §2.5).",
};

/** RFC 3339's date-time (RFC 9116 §2.5.5), e.g. `2027-01-01T00:00:00.000Z` or `…+02:00`. */
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:Z|([+-])(\d{2}):(\d{2}))$/i;

/**
 * An RFC 3339 date-time in ms since the epoch, or null for one that is not (§5.6, §5.7: each field
 * in range, the day in its month; a leap second, `:60`, is read as the end of its minute).
 * Hand-written because `Date.parse` takes `2027-02-30` (March 2nd) and `24:00`, and refuses `:60`.
 */
function rfc3339Time(value: string): number | null {
  const m = RFC3339.exec(value);
  if (!m) return null;
  const n = (i: number) => Number(m[i] ?? 0);
  const at = new Date(0);
  at.setUTCFullYear(n(1), n(2) - 1, n(3));
  at.setUTCHours(n(4), n(5), Math.min(n(6), 59), Number(m[7] ?? 0) * 1000);
  // A day or month out of range rolls over: the date read back differs.
  const real = at.getUTCMonth() === n(2) - 1 && at.getUTCDate() === n(3);
  if (!real || n(4) > 23 || n(5) > 59 || n(6) > 60 || n(9) > 23 || n(10) > 59) return null;
  return at.getTime() - (m[8] === "-" ? -1 : 1) * (n(9) * 60 + n(10)) * 60_000;
}

/** What is wrong with a security.txt that is there: expired, or a required field wrong. */
function judgeFields(f: SecurityTxtFields): Finding[] {
  const [expires, ...more] = f.expires;
  const lacking =
    f.contacts === 0
      ? "security.txt has no Contact field (RFC 9116 §2.5.3)."
      : expires === undefined
        ? "security.txt has no Expires field (RFC 9116 §2.5.5)."
        : more.length > 0
          ? "security.txt has more than one Expires field (RFC 9116 §2.5.5)."
          : rfc3339Time(expires) === null
            ? `security.txt's Expires is not an RFC 3339 date: "${expires.slice(0, 40)}".`
            : null;
  if (lacking !== null) return [found(SECURITY_TXT_INCOMPLETE, lacking)];
  const at = new Date(rfc3339Time(expires ?? "") ?? 0);
  if (at.getTime() > Date.parse(f.readAt)) return [];
  return [found(SECURITY_TXT_EXPIRED, `security.txt expired on ${at.toISOString().slice(0, 10)}.`)];
}

/**
 * A security.txt known to be absent (false, not null: one that could not be checked has its note
 * only); one that is there, judged on its Contact and Expires fields.
 */
export function judgeSecurityTxt(e: Evidence): Finding[] {
  const verdict = e.files?.security_txt;
  if (!verdict) return [];
  if (verdict.value === true) return verdict.securityTxt ? judgeFields(verdict.securityTxt) : [];
  if (verdict.value !== false) return [];
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
  findings: [SECURITY_TXT_MISSING, SECURITY_TXT_EXPIRED, SECURITY_TXT_INCOMPLETE],
  judge: judgeSecurityTxt,
  notes: (e) => fileNotes(e.files?.security_txt, "security.txt"),
});
