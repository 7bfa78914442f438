/**
 * The rules applied to one snapshot: its findings (docs/findings.md) and its notes
 * (docs/contract.md §4.6), both in the order of the registry. What snapshot.ts and demo.ts use.
 */
import { finalHeader } from "./evidence.js";
import type { Evidence } from "./evidence.js";
import { bySeverity, found } from "./finding.js";
import type { Finding } from "./finding.js";
import { ALL_FINDINGS, HEADER_CHECKS, RULES } from "./registry.js";
import type { HeaderCheckName } from "./registry.js";
import type { HeaderMap } from "../types.js";
import type { ReportSections } from "../result.js";
import type { Rule } from "./rule.js";

/** Whether each of the six headers is present on the final response. */
export type HeaderPresence = Record<HeaderCheckName, boolean>;

/** docs/contract.md §4.3: present when one instance at least is non-empty after trimming. */
function isHeaderPresent(headers: HeaderMap, name: string): boolean {
  return (headers[name] ?? []).some((v) => v.trim() !== "");
}

/** Presence of each header on the FINAL response; all false when there is none. */
export function checkHeaders(finalHeaders: HeaderMap | null): HeaderPresence {
  const out = {} as HeaderPresence;
  for (const { name, header } of HEADER_CHECKS) {
    out[name] = finalHeaders !== null && isHeaderPresent(finalHeaders, header);
  }
  return out;
}

const SUPERSEDED_BY = new Map(ALL_FINDINGS.map((d) => [d.id, d.supersedes ?? []]));

/** A finding another one of the report says more precisely is dropped (`supersedes`). */
export function withoutSuperseded(findings: Finding[]): Finding[] {
  const dropped = new Set(findings.flatMap((f) => SUPERSEDED_BY.get(f.id) ?? []));
  return dropped.size === 0 ? findings : findings.filter((f) => !dropped.has(f.id));
}

/** The missing-header findings of `presence`, in report order, except those `waived`. */
function missingHeaderFindings(
  presence: HeaderPresence,
  waived: (check: (typeof HEADER_CHECKS)[number]) => boolean = () => false,
): Finding[] {
  return HEADER_CHECKS.filter((c) => !presence[c.name] && !waived(c)).map((c) => found(c.missing));
}

/** The findings of one snapshot, most severe first; within a severity, missing headers first,
 * then each rule's in registry order. */
export function judge(e: Evidence): Finding[] {
  const presence = {} as HeaderPresence;
  for (const { name, header } of HEADER_CHECKS) presence[name] = finalHeader(e, header).length > 0;
  // Without a final response no header was seen: the notes say so, but nothing is held against
  // the site (a chain our caps cut would otherwise cost it every header).
  const missing =
    e.chain.final === null
      ? []
      : missingHeaderFindings(presence, (c) => "waived" in c && c.waived(e));
  const judged = RULES.flatMap((r) => ("judge" in r ? r.judge(e) : []));
  return bySeverity(withoutSuperseded([...missing, ...judged]));
}

/** The findings of a sample report that knows only which headers are present (the demo). */
export function headerFindings(presence: HeaderPresence): Finding[] {
  return bySeverity(missingHeaderFindings(presence));
}

/** A note for every header that is absent, in report order: its missing finding's words. */
function missingHeaderNotes(presence: HeaderPresence): string[] {
  return HEADER_CHECKS.filter((c) => !presence[c.name]).map((c) => c.missing.message);
}

/** Each finding's message not already said (a finding that repeats a note is said once). */
function withFindings(notes: string[], findings: readonly Finding[]): string[] {
  const said = new Set(notes);
  for (const { message } of findings) {
    if (!said.has(message)) notes.push(message);
    said.add(message);
  }
  return notes;
}

/**
 * The notes of a live report: missing headers in report order (only when a final response was
 * read: without one no header was seen missing), each rule's notes in registry order, then each
 * finding's message not already said.
 */
export function snapshotNotes(e: Evidence, findings: readonly Finding[] = []): string[] {
  const notes = [
    ...(e.chain.final === null ? [] : missingHeaderNotes(checkHeaders(e.chain.final.headers))),
    ...RULES.flatMap((r) => ("notes" in r ? r.notes(e) : [])),
  ];
  return withFindings(notes, findings);
}

/** The notes of a report whose only findings are its headers (the demo and sample reports). */
export function headerNotes(headers: HeaderPresence, findings: readonly Finding[] = []): string[] {
  return withFindings(missingHeaderNotes(headers), findings);
}

/** Each rule's own section of the report, in registry order (rule.ts, `Section`). */
export function reportSections(e: Evidence): ReportSections {
  const sections: Record<string, unknown> = {};
  for (const rule of RULES as readonly Rule[]) {
    // A section that does not apply may be left out (undefined) rather than null (`x402`).
    const value = rule.section?.of(e);
    if (rule.section && value !== undefined) sections[rule.section.key] = value;
  }
  return sections as unknown as ReportSections;
}
