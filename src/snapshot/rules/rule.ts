/**
 * What one rule module is: everything about one topic (docs/snapshot-engine.md "Adding a topic").
 * The registry (rules/registry.ts) lists the modules; the report's checks, its notes, the judges'
 * order, the OpenAPI enum of finding ids, docs/findings.md's table and the demo follow from it.
 */
import type { Evidence } from "./evidence.js";
import type { Finding, FindingDef } from "./finding.js";

interface CheckBase {
  /** Key in `checks`. */
  name: string;
  /** The report field carrying the same value. */
  field: `${string}_${"ok" | "present"}`;
  /** How a person calls it (the CLI's summary, the page). */
  label: string;
}

/** A check on the final response's headers: present when one value is non-empty. */
export interface HeaderCheckSpec extends CheckBase {
  kind: "header";
  /** Lower-case response header name. */
  header: string;
  /** Its finding (and note, in the same words) when the header is missing. */
  missing: FindingDef;
  /** What protects although the header is missing, so `missing` is not found (the field stays). */
  waived?: (e: Evidence) => boolean;
}

/** A well-known file: true, false (no such file) or null (could not be determined). */
export interface FileCheckSpec extends CheckBase {
  kind: "file";
  /** The file's name in notes. */
  fileName: string;
}

export interface HttpsCheckSpec extends CheckBase {
  kind: "https";
}

export type CheckSpec = HeaderCheckSpec | FileCheckSpec | HttpsCheckSpec;

/** One judge: a pure function from the evidence of a snapshot to the findings of its topic. */
export type Judge = (e: Evidence) => Finding[];

/**
 * A section of the report of the topic's own (docs/contract.md §9), after the fields of §2.1 and
 * the grade, in registry order. Its type is a member of `ReportSections` (result.ts) and its zod
 * schema sits beside the report's in src/http/documents/report-schemas.ts (the engine loads no
 * schema library); `tsc` holds the three together.
 */
export interface Section<K extends string = string> {
  /** The report key. */
  key: K;
  /** Its value on one snapshot (null when it does not apply, e.g. no TLS answer). */
  of: (e: Evidence) => unknown;
}

export interface Rule {
  /** The topic: the `check` of each of its findings. */
  topic: string;
  /** Its entry in `checks` when the topic is one of the ten (docs/contract.md §2.3). */
  check?: CheckSpec;
  /** Every finding it can give, in the order its judge gives them. */
  findings: readonly FindingDef[];
  /** Its findings on one snapshot: a pure function of the evidence. A missing header's finding
   * is not its judge's: it follows from `check.missing`. */
  judge?: Judge;
  /** Its notes that are not findings (e.g. HSTS sent over plain HTTP), as sentences. */
  notes?: (e: Evidence) => string[];
  /** Its own section of the report, if it has one. */
  section?: Section;
}

/** A rule, its literal names kept (the registry derives the report's check names from them). */
export function defineRule<const R extends Rule>(rule: R): R {
  return rule;
}
