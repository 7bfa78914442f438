import type { HeaderMap } from "../types.js";
import { HEADER_CHECKS } from "./registry.js";
import type { HeaderCheckName } from "./registry.js";

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
