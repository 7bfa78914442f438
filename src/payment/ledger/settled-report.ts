import type { KeptAnswer } from "../../store/index.js";
import { describeError } from "../describe-error.js";
import type { SettledPayment } from "../signing/index.js";
import type { Authorization } from "./authorization.js";

/** Adds the signed `proof` to a paid report (signing/report-proof.ts `withProof`). */
export type ReportSigner = (report: KeptAnswer, settled: SettledPayment) => Promise<KeptAnswer>;

/**
 * The report a record keeps once its payment settled, whoever learnt it (the call, or the
 * reconciler from the chain): signed for that settlement, and kept in the record so every later
 * answer serves the same bytes. A signature that fails (it cannot, short of a bug) is logged and
 * the report kept unsigned: a paid report is never withheld.
 */
export async function settledReport(
  report: KeptAnswer,
  paid: { key: string; auth: Authorization; transaction: string },
  sign: ReportSigner | undefined,
  log: (line: string) => void,
): Promise<KeptAnswer> {
  if (!sign || report.status !== 200) return report;
  const { key, auth, transaction } = paid;
  try {
    return await sign(report, {
      network: auth.network,
      payer: auth.from,
      transaction,
      recordKey: key,
    });
  } catch (error) {
    log(`report signature failed: ${describeError(error)}`);
    return report;
  }
}
