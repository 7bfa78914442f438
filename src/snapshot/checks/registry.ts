/**
 * The ten checks, one entry each, in the order of the report (docs/contract.md §2.1, §2.3).
 * Every other list of checks (names, header table, note sentences, report fields, labels) is
 * derived from this one. A new check is an entry here, its two fields in result.ts's types and
 * src/http/report-schemas.ts (test/snapshot/checks-registry.test.ts keeps them in step) and the
 * function that decides it.
 */

interface CheckBase<Name extends string> {
  /** Key in `checks`. */
  name: Name;
  /** The report field carrying the same value. */
  field: `${string}_${"ok" | "present"}`;
  /** How a person calls it (the CLI's summary). */
  label: string;
}

/** A check on the final response's headers: present when one value is non-empty. */
interface HeaderCheckSpec<Name extends string> extends CheckBase<Name> {
  kind: "header";
  /** Lower-case response header name. */
  header: string;
  /** The note when the header is missing. */
  missingNote: string;
}

/** A well-known file: true, false (no such file) or null (could not be determined). */
interface FileCheckSpec<Name extends string> extends CheckBase<Name> {
  kind: "file";
  /** The file's name in notes. */
  fileName: string;
}

interface HttpsCheckSpec<Name extends string> extends CheckBase<Name> {
  kind: "https";
}

type CheckSpec<Name extends string = string> =
  HeaderCheckSpec<Name> | FileCheckSpec<Name> | HttpsCheckSpec<Name>;

export const CHECKS = [
  { kind: "https", name: "https", field: "https_ok", label: "HTTPS with a valid certificate" },
  {
    kind: "header",
    name: "hsts",
    field: "hsts_present",
    header: "strict-transport-security",
    missingNote: "Strict-Transport-Security (HSTS) header is missing.",
    label: "Strict-Transport-Security (HSTS)",
  },
  {
    kind: "header",
    name: "csp",
    field: "csp_present",
    header: "content-security-policy",
    missingNote: "Content-Security-Policy (CSP) header is missing.",
    label: "Content-Security-Policy (CSP)",
  },
  {
    kind: "header",
    name: "x_frame_options",
    field: "x_frame_options_present",
    header: "x-frame-options",
    missingNote: "X-Frame-Options header is missing.",
    label: "X-Frame-Options",
  },
  {
    kind: "header",
    name: "x_content_type_options",
    field: "x_content_type_options_present",
    header: "x-content-type-options",
    missingNote: "X-Content-Type-Options header is missing.",
    label: "X-Content-Type-Options",
  },
  {
    kind: "header",
    name: "referrer_policy",
    field: "referrer_policy_present",
    header: "referrer-policy",
    missingNote: "Referrer-Policy header is missing.",
    label: "Referrer-Policy",
  },
  {
    kind: "header",
    name: "permissions_policy",
    field: "permissions_policy_present",
    header: "permissions-policy",
    missingNote: "Permissions-Policy header is missing.",
    label: "Permissions-Policy",
  },
  {
    kind: "file",
    name: "security_txt",
    field: "security_txt_present",
    fileName: "security.txt",
    label: "security.txt",
  },
  {
    kind: "file",
    name: "robots_txt",
    field: "robots_txt_present",
    fileName: "robots.txt",
    label: "robots.txt",
  },
  {
    kind: "file",
    name: "sitemap_xml",
    field: "sitemap_xml_present",
    fileName: "sitemap.xml",
    label: "sitemap.xml",
  },
] as const satisfies readonly CheckSpec[];

type Check = (typeof CHECKS)[number];
export type CheckName = Check["name"];
/** The report field of each check (`https_ok`, `hsts_present`, …). */
export type CheckField = Check["field"];
export type HeaderCheck = Extract<Check, { kind: "header" }>;
export type HeaderCheckName = HeaderCheck["name"];
export type FileCheck = Extract<Check, { kind: "file" }>;
export type FileCheckName = FileCheck["name"];

/** The keys of `checks`, in report order. */
export const CHECK_NAMES: readonly CheckName[] = CHECKS.map((c) => c.name);

/** The six security headers, in report order (the order of their fields and notes). */
export const HEADER_CHECKS = CHECKS.filter((c): c is HeaderCheck => c.kind === "header");

/** The three well-known files, in report order. */
export const FILE_CHECKS = CHECKS.filter((c): c is FileCheck => c.kind === "file");

/** Looks a check up by name, keeping its precise type. */
export function checkNamed<N extends CheckName>(name: N): Extract<Check, { name: N }> {
  return CHECKS.find((c) => c.name === name) as Extract<Check, { name: N }>;
}
