/** The scan form's routes (page-scan.ts), which the page names in its form. */

/** Devnet mode only: pays from the funded devnet account on the server's side, then scans. */
export const PAY_AND_SCAN_PATH = "/demo/pay-and-scan";
/** Any mode: asks the paid route without paying, and shows its 402 challenge. */
export const CHALLENGE_PATH = "/demo/challenge";
