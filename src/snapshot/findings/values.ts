/** Reading the final response's headers for the judges. */
import type { Evidence } from "./finding.js";

/** Every non-blank instance of a header on the final response, trimmed; [] when there is none. */
export function finalHeader(e: Evidence, name: string): string[] {
  return (e.chain.final?.headers[name] ?? []).map((v) => v.trim()).filter((v) => v !== "");
}

/** Whether the final response was received over https. */
export function finalIsHttps(e: Evidence): boolean {
  return e.chain.final !== null && e.chain.finalUrl.protocol === "https:";
}
