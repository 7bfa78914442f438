import type { SettleResponse } from "@x402/core/types";
import type { PaymentRecord, PaymentRecordStore } from "../../store/index.js";
import { authorizationOf, type Authorization } from "./authorization.js";
import type { ChainReader } from "./chain-check.js";
import { describeError } from "../describe-error.js";
import { settledReport, type ReportSigner } from "./settled-report.js";

/**
 * The background reconciler (docs/payment.md, "The reconciler"): records whose settlement had no
 * known outcome, and whose request is gone, are settled by the chain's word, not by a retry that
 * may never come. The transfer that paid us found on chain makes the record `settled` (its report
 * kept for the retry); a nonce canceled, or used by a transaction that paid us nothing, or an
 * authorization past its validBefore with nothing used, makes it `free`. It never settles:
 * moving money is a request's decision, with its client waiting for the answer.
 */

/** Records read per pass: a pass stays short whatever the backlog. */
const BATCH = 100;
/** Clock skew allowed before an expired authorization is taken as unusable on chain. */
const EXPIRY_MARGIN_S = 60;

export interface ReconcilerParts {
  store: PaymentRecordStore;
  chain: ChainReader;
  leaseMs: number;
  recordTtlMs: number;
  newOwner: () => string;
  /** Signs the report of a record it settles, as the ledger does (ledger/settled-report.ts). */
  sign?: ReportSigner;
  log: (line: string) => void;
  now?: () => number;
}

/** What one pass did, for tests and the log. */
export interface ReconcileCounts {
  settled: number;
  freed: number;
}

export class Reconciler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ReconcileCounts> | undefined;

  constructor(private readonly parts: ReconcilerParts) {}

  /** Runs a pass every `intervalMs`, not keeping the process alive. */
  start(intervalMs: number): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      void this.once();
    }, intervalMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One pass (one at a time); a failing store or chain only ends the pass early. */
  once(): Promise<ReconcileCounts> {
    this.running ??= this.pass()
      .catch((error: unknown) => {
        this.parts.log(`payment reconciler failed: ${describeError(error)}`);
        return { settled: 0, freed: 0 };
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<ReconcileCounts> {
    const counts = { settled: 0, freed: 0 };
    for (const record of await this.parts.store.unresolved(BATCH)) {
      const moved = await this.reconcile(record);
      if (moved === "settled") counts.settled++;
      if (moved === "free") counts.freed++;
    }
    return counts;
  }

  private async reconcile(found: PaymentRecord): Promise<"settled" | "free" | undefined> {
    const { store, chain, leaseMs, recordTtlMs } = this.parts;
    const owner = this.parts.newOwner();
    const acquired = await store.acquire(found.key, owner, leaseMs, {
      fingerprint: found.fingerprint,
      version: found.version,
    });
    // A request holds it: that request decides.
    if (acquired.held) return undefined;
    try {
      const record = acquired.record;
      if (record?.state !== "settling" && record?.state !== "report_kept") return undefined;
      const requirements = record.requirements as
        { network: string; asset: string; payTo: string; amount: string } | undefined;
      const auth = requirements && authorizationOf(record.payload, requirements);
      if (!auth) return undefined;
      const answer = await chain.read(auth, requirements, record.transaction);
      if (answer.kind === "used") {
        const next = await this.settled(record, auth, requirements.network, answer.transaction);
        return (await store.write(record.key, owner, next, recordTtlMs)) ? "settled" : undefined;
      }
      const nowS = (this.parts.now ?? Date.now)() / 1000;
      const expired = auth.validBefore !== undefined && nowS > auth.validBefore + EXPIRY_MARGIN_S;
      const nothingCanMove =
        answer.kind === "canceled" ||
        answer.kind === "used_elsewhere" ||
        (expired && (answer.kind === "unused" || answer.kind === "pending"));
      if (nothingCanMove) {
        const next: PaymentRecord = { ...record, state: "free" };
        return (await store.write(record.key, owner, next, recordTtlMs)) ? "free" : undefined;
      }
      return undefined;
    } finally {
      await store.release(found.key, owner).catch(() => {});
    }
  }

  /** The record settled by the transfer found on chain, its report signed as the ledger signs it. */
  private async settled(
    record: PaymentRecord,
    auth: Authorization,
    network: string,
    transaction: string,
  ): Promise<PaymentRecord> {
    const settlement: SettleResponse = {
      success: true,
      transaction,
      network: network as SettleResponse["network"],
      payer: auth.from,
    };
    const { sign, log } = this.parts;
    return {
      ...record,
      ...(record.report && {
        report: await settledReport(
          record.report,
          { key: record.key, auth, transaction },
          sign,
          log,
        ),
      }),
      state: "settled",
      settlement,
      transaction,
      delivered: false,
    };
  }
}
