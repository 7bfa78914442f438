/**
 * The service's signing key and what it signs (docs/proof.md): the key's loader, the signer any
 * part of the service signs with (ServiceSigner), RFC 8785 canonical JSON, and the paid
 * report's proof, made and checked.
 */
export { canonicalize } from "./jcs.js";
export { loadServiceSigner, type LoadedSigner } from "./key-source.js";
export { withProof, type SettledPayment } from "./report-proof.js";
export { newPrivateJwk, signerFromJwk, type PrivateJwk, type ServiceSigner } from "./signer.js";
export { didWebOf, serviceUrlOf } from "./service-host.js";
export { verifyReportProof } from "./verify-proof.js";
