/**
 * The words the rules' notes share (docs/contract.md §4.6): why a request got no response, a cap
 * of ours, a body that could not be decoded. Each note's sentence is in its rule module.
 */
import type { Capped, RequestFailure, Undecodable } from "../types.js";

/** Why a request produced no response, as noted: every RequestFailure, and two more. */
export type FailureCause =
  RequestFailure | { kind: "no_response" } | { kind: "redirect_cap"; max: number };

/** "our limit of N … was reached": a request a cap stopped, in words that blame nobody else. */
export function capReached({ limit, max }: Capped): string {
  const what = limit === "requests" ? "request" : "host name";
  return `our limit of ${max} ${what}${max === 1 ? "" : "s"} per snapshot was reached`;
}
/** "…because <cause>": why a request produced no HTTP response. */
export function cause(f: FailureCause): string {
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
export function undecodableReason(u: Undecodable): string {
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
