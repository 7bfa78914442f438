/**
 * HTTPS (docs/contract.md §4.4, docs/findings.md): the check of `https_ok`, `https-failed` in the
 * words of its note, and the notes about reaching the final response (a broken chain, the
 * redirect cap, a plain-HTTP end although HTTPS works).
 */
import { requestFailureOf } from "../types.js";
import type { HttpsProbe, RequestFailure } from "../types.js";
import type { Evidence, HttpsVerdict } from "./evidence.js";
import { found } from "./finding.js";
import type { Finding, FindingDef } from "./finding.js";
import { cause } from "./notes.js";
import type { FailureCause } from "./notes.js";
import { defineRule } from "./rule.js";

export interface HttpsEvidence {
  finalUrl: URL;
  /** The last URL requested produced an HTTP response (any status, a redirect included). */
  finalAnswered: boolean;
  /** Why the last request produced no response, if it did not. */
  finalFailure: RequestFailure | null;
  /** Outcome of `GET https://<final host>:<probe port>/`; needed only for an http final URL. */
  probe: HttpsProbe | null;
  probeUrl: string;
  /** Local mode, an http final URL on loopback: a secure context, its HTTPS not judged. */
  secureContext?: boolean;
}

/**
 * docs/contract.md §4.4 https_ok: an https final URL that answered is the proof (its handshake was
 * fully validated by the dispatcher); for an http final URL the port-443 probe decides.
 */
export function checkHttps(e: HttpsEvidence): HttpsVerdict {
  if (e.finalUrl.protocol === "https:") {
    if (e.finalAnswered) return { ok: true };
    return { ok: false, failure: e.finalFailure ?? { kind: "no_response" }, url: e.finalUrl.href };
  }
  if (e.probe?.ok) return { ok: true };
  if (e.secureContext === true) {
    return { ok: false, failure: { kind: "secure_context" }, url: e.finalUrl.href };
  }
  return {
    ok: false,
    failure: e.probe ? e.probe.failure : { kind: "no_response" },
    url: e.probeUrl,
  };
}

export const HTTPS_FAILED: FindingDef = {
  id: "https-failed",
  check: "https",
  severity: "high",
  gradeCap: "F",
  message: "HTTPS does not work.",
  recommendation:
    "Serve the site over HTTPS with a valid certificate for its name from a trusted certificate authority.",
};

/**
 * Whether our own limits, not the site, stopped the https check: a cap of ours, or our policy
 * refusing the probe's target (its port 443 not in SNAPSHOT_ALLOWED_PORTS, its address blocked).
 * A redirect the site chose to a refused target never gets here: that is a 400 (§4.2 row 2).
 */
export function httpsNotChecked(https: HttpsVerdict): boolean {
  return (
    !https.ok &&
    (https.failure.kind === "capped" ||
      https.failure.kind === "blocked" ||
      https.failure.kind === "secure_context")
  );
}

/** The note of a failed https check; its finding says the same words. */
function httpsFailedNote(url: string, failure: FailureCause | { kind: "secure_context" }): string {
  if (failure.kind === "secure_context") {
    return `HTTPS was not judged (${url}): in local mode a loopback site is a secure context for browsers without HTTPS, so port 443 was not asked; put HTTPS in front of it where it is served for real.`;
  }
  // Our cap or policy stopped the request: nothing was learned about the site's HTTPS.
  if (failure.kind === "capped") return `HTTPS was not checked (${url}): ${cause(failure)}.`;
  if (failure.kind === "blocked") {
    return `HTTPS was not checked (${url}): this service's settings do not allow that target (${failure.message}).`;
  }
  return `HTTPS does not work (${url}): ${cause(failure)}.`;
}

export function judgeHttps(e: Evidence): Finding[] {
  // A probe our own limits stopped learned nothing about the site: no finding against it.
  if (e.https.ok || httpsNotChecked(e.https)) return [];
  return [found(HTTPS_FAILED, httpsFailedNote(e.https.url, e.https.failure))];
}

/** HTTPS, then why there is no final response, then a plain-HTTP end although HTTPS works. */
function httpsNotes({ chain, https, input, fallbackFrom, fallbackBecause }: Evidence): string[] {
  const finalUrl = chain.finalUrl.href;
  const isHttpFinal = chain.finalUrl.protocol === "http:";
  const requestFailure = requestFailureOf(chain);
  const notes: string[] = [];
  if (fallbackFrom !== undefined) {
    const what = fallbackBecause === "not_tls" ? "answered without TLS" : "refused the connection";
    notes.push(
      `The input had no scheme and ${fallbackFrom} ${what}, so this report is of ${input.href} (plain HTTP).`,
    );
  }
  // A chain our cap stopped says so itself; HTTPS of that same unsent request was not checked.
  const chainCapped = requestFailure?.kind === "capped";
  if (!https.ok && !(chainCapped && https.url === finalUrl)) {
    notes.push(httpsFailedNote(https.url, https.failure));
  }
  if (chain.failure?.kind === "redirect_cap") {
    notes.push(
      `No final response: the site redirects more than ${chain.failure.max} times (stopped at ${finalUrl}).`,
    );
  } else if (requestFailure && (chainCapped || !(!https.ok && https.url === finalUrl))) {
    // A failed https final request is already explained by the HTTPS note.
    notes.push(
      requestFailure.kind === "capped"
        ? `No final response: the redirect from ${finalUrl} was not followed: ${cause(requestFailure)}.`
        : `No final response: the request to ${finalUrl} failed because ${cause(requestFailure)}.`,
    );
  }
  if (chain.final !== null && isHttpFinal && https.ok) {
    notes.push(
      `The site ends on plain HTTP (${finalUrl}) although HTTPS works; it should redirect to HTTPS.`,
    );
  }
  return notes;
}

export const httpsRule = defineRule({
  topic: "https",
  check: {
    kind: "https",
    name: "https",
    field: "https_ok",
    label: "HTTPS with a valid certificate",
  },
  findings: [HTTPS_FAILED],
  judge: judgeHttps,
  notes: httpsNotes,
});
