import type { HeaderMap } from "../types.js";

/** The six security headers, in the order of the result fields and of the notes. */
export const SECURITY_HEADERS = [
  { check: "hsts", header: "strict-transport-security" },
  { check: "csp", header: "content-security-policy" },
  { check: "x_frame_options", header: "x-frame-options" },
  { check: "x_content_type_options", header: "x-content-type-options" },
  { check: "referrer_policy", header: "referrer-policy" },
  { check: "permissions_policy", header: "permissions-policy" },
] as const;

export type HeaderCheck = (typeof SECURITY_HEADERS)[number]["check"];
export type HeaderPresence = Record<HeaderCheck, boolean>;

/** SPEC §3: present when at least one instance has a non-empty value after trimming. */
export function isHeaderPresent(headers: HeaderMap, name: string): boolean {
  return (headers[name.toLowerCase()] ?? []).some((v) => v.trim() !== "");
}

/** Presence of each header on the FINAL response; all false when there is none. */
export function checkHeaders(finalHeaders: HeaderMap | null): HeaderPresence {
  const out = {} as HeaderPresence;
  for (const { check, header } of SECURITY_HEADERS) {
    out[check] = finalHeaders !== null && isHeaderPresent(finalHeaders, header);
  }
  return out;
}

/** The six `*_present` fields of a report, from the header check (live reports and the demo). */
export function headerPresenceFields(presence: HeaderPresence) {
  return {
    hsts_present: presence.hsts,
    csp_present: presence.csp,
    x_frame_options_present: presence.x_frame_options,
    x_content_type_options_present: presence.x_content_type_options,
    referrer_policy_present: presence.referrer_policy,
    permissions_policy_present: presence.permissions_policy,
  };
}
