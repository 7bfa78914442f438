/**
 * The notes of a report (docs/contract.md §4.6): which findings a snapshot notes, and the one
 * table that turns them into sentences. Missing headers come first, in report order; every other
 * finding follows in the order it is listed in `findNotes`. Nothing is said about what is fine.
 */
import type { HeaderPresence } from "./checks/headers.js";
import type { Finding } from "./findings/finding.js";
import type { HttpsVerdict } from "./checks/https.js";
import { FILE_CHECKS, HEADER_CHECKS, checkNamed } from "./checks/registry.js";
import type { FileCheckName, HeaderCheckName } from "./checks/registry.js";
import type { FileVerdict, FileVerdicts } from "./checks/well-known.js";
import { requestFailureOf } from "./types.js";
import type { Capped, Chain, RequestFailure, Undecodable } from "./types.js";

/** Why a request produced no response, as noted: every RequestFailure, and two more. */
type FailureCause =
  RequestFailure | { kind: "no_response" } | { kind: "redirect_cap"; max: number };

type Note =
  | { code: "header_missing"; header: HeaderCheckName }
  | { code: "https_failed"; url: string; failure: FailureCause }
  | { code: "http_final_although_https_works"; url: string }
  | { code: "hsts_over_http" }
  | { code: "chain_broken"; url: string; failure: FailureCause }
  | { code: "redirect_cap"; url: string; max: number }
  | { code: "file"; file: FileCheckName; verdict: FileVerdict };

type NoteOf<C extends Note["code"]> = Extract<Note, { code: C }>;

/** "our limit of N … was reached": a request a cap stopped, in words that blame nobody else. */
function capReached({ limit, max }: Capped): string {
  const what = limit === "requests" ? "request" : "host name";
  return `our limit of ${max} ${what}${max === 1 ? "" : "s"} per snapshot was reached`;
}

/** "…because <cause>": why a request produced no HTTP response. */
function cause(f: FailureCause): string {
  switch (f.kind) {
    case "tls":
      switch (f.reason) {
        case "expired":
          return "the TLS certificate has expired";
        case "not_yet_valid":
          return "the TLS certificate is not valid yet";
        case "wrong_name":
          return "the TLS certificate does not match the host name";
        case "self_signed":
          return "the TLS certificate is self-signed";
        case "untrusted":
          return "the TLS certificate is not issued by a trusted certificate authority";
        case "handshake":
          return `the TLS handshake failed${f.code ? ` (${f.code})` : ""}`;
      }
      break;
    case "dns":
      return "the host name does not resolve";
    case "refused":
      return "the connection was refused";
    case "reset":
      return "the connection was closed before any response";
    case "closed":
      return "the connection was closed before a complete response";
    case "network":
      return `the network could not reach the host${f.code ? ` (${f.code})` : ""}`;
    case "timeout":
      return "no response arrived before the deadline";
    case "protocol":
      // Parser and client error codes are ours, not the site's: only plain words go out.
      return f.code === "UND_ERR_HEADERS_OVERFLOW"
        ? "the server's answer was not valid HTTP (its headers are too large)"
        : "the server's answer was not valid HTTP";
    case "blocked":
      return "the target is not allowed";
    case "no_response":
      return "there was no response";
    case "capped":
      return capReached(f);
    case "redirect_cap":
      return `it redirects more than ${f.max} times`;
  }
}

/** A coding token as the site sent it, if it is short and plain enough to repeat in a note. */
function codingName(coding: string): string | null {
  return /^[a-z0-9][a-z0-9._+-]{0,31}$/i.test(coding) ? coding : null;
}

/** "…could not be checked: <why>". */
function undecodableReason(u: Undecodable): string {
  switch (u.why) {
    case "too_many_codings":
      return `its Content-Encoding lists ${u.count} codings (at most ${u.max} are decoded)`;
    case "unsupported_coding": {
      const name = codingName(u.coding);
      return name
        ? `its Content-Encoding "${name}" is not supported`
        : "its Content-Encoding is not supported";
    }
    case "corrupt": {
      const name = codingName(u.coding);
      return name
        ? `its content could not be decoded as ${name}`
        : "its content could not be decoded";
    }
  }
}

function fileSentence(n: NoteOf<"file">): string | null {
  const name = checkNamed(n.file).fileName;
  const v = n.verdict;
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

function httpsFailedSentence(n: NoteOf<"https_failed">): string {
  // Our cap stopped the request: nothing was learned about the site's HTTPS.
  if (n.failure.kind === "capped") return `HTTPS was not checked (${n.url}): ${cause(n.failure)}.`;
  return `HTTPS does not work (${n.url}): ${cause(n.failure)}.`;
}

/** THE table: one sentence (or none) per finding. */
const SENTENCES: { [C in Note["code"]]: (n: NoteOf<C>) => string | null } = {
  header_missing: (n) => checkNamed(n.header).missingNote,
  https_failed: (n) => httpsFailedSentence(n),
  http_final_although_https_works: (n) =>
    `The site ends on plain HTTP (${n.url}) although HTTPS works; it should redirect to HTTPS.`,
  hsts_over_http: () =>
    "Strict-Transport-Security is sent over plain HTTP, where browsers ignore it.",
  chain_broken: (n) =>
    n.failure.kind === "capped"
      ? `No final response: the redirect from ${n.url} was not followed: ${cause(n.failure)}.`
      : `No final response: the request to ${n.url} failed because ${cause(n.failure)}.`,
  redirect_cap: (n) =>
    `No final response: the site redirects more than ${n.max} times (stopped at ${n.url}).`,
  file: fileSentence,
};

function sentence<C extends Note["code"]>(n: NoteOf<C>): string | null {
  return (SENTENCES[n.code] as (n: NoteOf<C>) => string | null)(n);
}

/** The note of a failed https check; its finding says the same words (findings/https.ts). */
export function httpsFailedNote(https: Extract<HttpsVerdict, { ok: false }>): string {
  return httpsFailedSentence({ code: "https_failed", url: https.url, failure: https.failure });
}

/** The note of a well-known file's verdict (none when it is fine). */
export function fileNote(file: FileCheckName, verdict: FileVerdict): string | null {
  return fileSentence({ code: "file", file, verdict });
}

/** The sentences: missing headers first in report order, then the other findings in order. */
export function renderNotes(notes: readonly Note[]): string[] {
  const order: readonly HeaderCheckName[] = HEADER_CHECKS.map((h) => h.name);
  const headers = notes
    .filter((n): n is NoteOf<"header_missing"> => n.code === "header_missing")
    .sort((a, b) => order.indexOf(a.header) - order.indexOf(b.header));
  const others = notes.filter((n) => n.code !== "header_missing");
  return [...headers, ...others].map((n) => sentence(n)).filter((s): s is string => s !== null);
}

/** A note for every header that is absent, in report order. */
function missingHeaderNotes(presence: HeaderPresence): Note[] {
  return HEADER_CHECKS.filter((h) => !presence[h.name]).map((h) => ({
    code: "header_missing" as const,
    header: h.name,
  }));
}

/** What the notes of a live report are drawn from. */
export interface NoteEvidence {
  chain: Chain;
  headers: HeaderPresence;
  https: HttpsVerdict;
  /** The well-known files of the final origin; null when the site was not reachable. */
  files: FileVerdicts | null;
}

/** Which findings a live report notes, and in what order. */
function findNotes({ chain, headers, https, files }: NoteEvidence): Note[] {
  const finalUrl = chain.finalUrl.href;
  const isHttpFinal = chain.finalUrl.protocol === "http:";
  const requestFailure = requestFailureOf(chain);
  const notes = missingHeaderNotes(headers);
  // A chain our cap stopped says so itself; HTTPS of that same unsent request was not checked.
  const chainCapped = requestFailure?.kind === "capped";
  if (!https.ok && !(chainCapped && https.url === finalUrl)) {
    notes.push({ code: "https_failed", url: https.url, failure: https.failure });
  }
  if (chain.failure?.kind === "redirect_cap") {
    notes.push({ code: "redirect_cap", url: finalUrl, max: chain.failure.max });
  } else if (requestFailure && (chainCapped || !(!https.ok && https.url === finalUrl))) {
    // A failed https final request is already explained by the HTTPS note.
    notes.push({ code: "chain_broken", url: finalUrl, failure: requestFailure });
  }
  if (chain.final !== null && isHttpFinal && https.ok) {
    notes.push({ code: "http_final_although_https_works", url: finalUrl });
  }
  if (isHttpFinal && headers.hsts) notes.push({ code: "hsts_over_http" });
  if (files) {
    for (const { name } of FILE_CHECKS) {
      notes.push({ code: "file", file: name, verdict: files[name] });
    }
  }
  return notes;
}

/**
 * The notes of a live report: today's sentences, then each finding's message not already said
 * (a finding that repeats a note, such as a missing header, is said once).
 */
export function snapshotNotes(evidence: NoteEvidence, findings: readonly Finding[] = []): string[] {
  return withFindings(renderNotes(findNotes(evidence)), findings);
}

function withFindings(notes: string[], findings: readonly Finding[]): string[] {
  const said = new Set(notes);
  for (const { message } of findings) {
    if (!said.has(message)) notes.push(message);
    said.add(message);
  }
  return notes;
}

/** The notes of a report whose only findings are its headers (the demo and sample reports). */
export function headerNotes(headers: HeaderPresence, findings: readonly Finding[] = []): string[] {
  return withFindings(renderNotes(missingHeaderNotes(headers)), findings);
}
