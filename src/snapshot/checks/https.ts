import type { HttpsProbe, RequestFailure } from "../types.js";

export type HttpsVerdict =
  { ok: true } | { ok: false; failure: RequestFailure | { kind: "no_response" }; url: string };

export interface HttpsEvidence {
  finalUrl: URL;
  /** The last URL requested produced an HTTP response (any status, a redirect included). */
  finalAnswered: boolean;
  /** Why the last request produced no response, if it did not. */
  finalFailure: RequestFailure | null;
  /** Outcome of `GET https://<final host>:<probe port>/`; needed only for an http final URL. */
  probe: HttpsProbe | null;
  probeUrl: string;
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
  return {
    ok: false,
    failure: e.probe ? e.probe.failure : { kind: "no_response" },
    url: e.probeUrl,
  };
}
