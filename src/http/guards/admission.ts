import { DRAINING, INSTANCE_BUSY, type Answer } from "../../payment/index.js";

/**
 * Which snapshot requests run (docs/operations.md, "Back-pressure" and "Readiness and
 * draining"): at most `maxInFlight` at once per instance, and none once draining. A request is
 * admitted or refused before anything is charged, so a refusal leaves the proof usable: a paid
 * call, by any door, before its proof is verified (the ledger takes the slot, and gives it back
 * at once when the proof fails), so a crowd the instance cannot run costs no verifications.
 */
export class SnapshotAdmission {
  private running = 0;
  private stopping = false;

  constructor(readonly maxInFlight: number = Number.POSITIVE_INFINITY) {}

  /** Snapshot requests admitted and not yet answered. */
  get inFlight(): number {
    return this.running;
  }

  get draining(): boolean {
    return this.stopping;
  }

  /** From now on /ready says draining and new snapshot requests are refused. */
  drain(): void {
    this.stopping = true;
  }

  /** Takes a slot (undefined; call `leave` once answered), or the 503 that refuses the request. */
  enter(): Answer | undefined {
    if (this.stopping) return DRAINING;
    if (this.running >= this.maxInFlight) return INSTANCE_BUSY;
    this.running++;
    return undefined;
  }

  leave(): void {
    this.running--;
  }
}
