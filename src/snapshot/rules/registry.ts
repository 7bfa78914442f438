/**
 * The registry: every rule module, one line each. Its order is the report's: the ten checks
 * first, in the order of `checks` (docs/contract.md §2.1, §2.3), then the topics of their own.
 * Within a severity, findings come in this order (missing headers first); notes too.
 * Everything else is derived from this list: the check names, fields and labels, the notes, the
 * finding ids of the OpenAPI document, docs/findings.md's table (a test holds it here) and the
 * demo. A new topic is one module in this folder and one line here (docs/snapshot-engine.md).
 */
import type { FileVerdicts } from "./evidence.js";
import type { FindingDef } from "./finding.js";
import type { Rule } from "./rule.js";
import { cookiesRule } from "./cookies.js";
import { corsRule } from "./cors.js";
import { crossOriginRule } from "./cross-origin.js";
import { cspRule } from "./csp.js";
import { disclosureRule } from "./disclosure.js";
import { dnsRule } from "./dns.js";
import { hstsRule } from "./hsts.js";
import { httpSideRule } from "./http-side.js";
import { httpsRule } from "./https.js";
import { mixedContentRule } from "./mixed-content.js";
import { permissionsPolicyRule } from "./permissions-policy.js";
import { redirectsRule } from "./redirects.js";
import { referrerPolicyRule } from "./referrer-policy.js";
import { robotsTxtRule } from "./robots-txt.js";
import { securityTxtRule } from "./security-txt.js";
import { sitemapXmlRule } from "./sitemap-xml.js";
import { sriRule } from "./sri.js";
import { tlsRule } from "./tls.js";
import { x402Rule } from "./x402.js";
import { xContentTypeOptionsRule } from "./x-content-type-options.js";
import { xFrameOptionsRule } from "./x-frame-options.js";

export const RULES = [
  httpsRule,
  hstsRule,
  cspRule,
  xFrameOptionsRule,
  xContentTypeOptionsRule,
  referrerPolicyRule,
  permissionsPolicyRule,
  securityTxtRule,
  robotsTxtRule,
  sitemapXmlRule,
  cookiesRule,
  httpSideRule,
  redirectsRule,
  sriRule,
  mixedContentRule,
  corsRule,
  disclosureRule,
  tlsRule,
  dnsRule,
  crossOriginRule,
  x402Rule,
] as const satisfies readonly Rule[];

type Check = Extract<(typeof RULES)[number], { check: unknown }>["check"];
export type CheckName = Check["name"];
/** The report field of each check (`https_ok`, `hsts_present`, …). */
export type CheckField = Check["field"];
export type HeaderCheck = Extract<Check, { kind: "header" }>;
export type HeaderCheckName = HeaderCheck["name"];
type FileCheck = Extract<Check, { kind: "file" }>;

/** The ten checks, one entry each, in the order of the report. */
export const CHECKS: readonly Check[] = RULES.flatMap((r): Check[] =>
  "check" in r ? [r.check] : [],
);

/** The keys of `checks`, in report order. */
export const CHECK_NAMES: readonly CheckName[] = CHECKS.map((c) => c.name);

/** The six security headers, in report order (the order of their fields and notes). */
export const HEADER_CHECKS = CHECKS.filter((c): c is HeaderCheck => c.kind === "header");

/** Every finding a report can carry, topic by topic; ids are unique (a test holds the doc to it). */
export const ALL_FINDINGS: readonly FindingDef[] = RULES.flatMap((r) => r.findings);

/** True when A and B are the same type. */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

// Compile-time only: the file checks are the three files the evidence carries.
const _fileChecksAreTheFiles: Same<FileCheck["name"], keyof FileVerdicts> = true;
