import { performance } from "node:perf_hooks";
import type { x402HTTPResourceServer } from "@x402/core/server";
import { describeError } from "../describe-error.js";
import type { ResilientFacilitatorClient } from "./client.js";
import { FacilitatorMismatchError, checkSupport, type PaymentKind } from "./support.js";

/**
 * The facilitator's /supported, fetched once and checked against what the route offers, then
 * handed to the SDK. A failure is remembered for `retryMs` so a dead facilitator costs no round
 * trip per request, and retried after. Each failure is logged once, not once per retry.
 */
export class FacilitatorReadiness {
  private ready = false;
  private pending: Promise<boolean> | undefined;
  private lastFailureAt = -Infinity;
  private lastLogged: string | undefined;

  constructor(
    private readonly httpServer: x402HTTPResourceServer,
    private readonly facilitator: ResilientFacilitatorClient,
    private readonly required: readonly PaymentKind[],
    private readonly retryMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Fetches /supported now (once at a time). False while the facilitator is unreachable (logged
   * once); a FacilitatorMismatchError, unlogged, when it can never serve this configuration.
   */
  warmUp(): Promise<boolean> {
    if (this.ready) return Promise.resolve(true);
    this.pending ??= this.initialize().then(
      () => {
        this.ready = true;
        this.pending = undefined;
        if (this.lastLogged !== undefined) {
          this.log(`x402 facilitator answers now (${this.facilitator.url})`);
        }
        return true;
      },
      (error: unknown) => {
        this.lastFailureAt = performance.now();
        this.pending = undefined;
        if (error instanceof FacilitatorMismatchError) throw error;
        this.logOnce(
          `x402 facilitator not usable yet (${this.facilitator.url}): ${describeError(error)}; ` +
            "paid requests get 503 until it answers",
        );
        return false;
      },
    );
    return this.pending;
  }

  /** Whether /supported is known now (check() would answer true at once). */
  get readyNow(): boolean {
    return this.ready;
  }

  /** Ready now, or after one attempt unless one failed within `retryMs`. */
  async check(): Promise<boolean> {
    if (this.ready) return true;
    if (performance.now() - this.lastFailureAt < this.retryMs) return false;
    return this.warmUp().catch((error: unknown) => {
      this.logOnce(describeError(error));
      return false;
    });
  }

  private async initialize(): Promise<void> {
    // Read and checked here, so the SDK's initialize (which reuses it) neither logs nor fails.
    checkSupport(this.facilitator.url, await this.facilitator.getSupported(), this.required);
    await this.httpServer.initialize();
  }

  private logOnce(line: string): void {
    if (line === this.lastLogged) return;
    this.lastLogged = line;
    this.log(line);
  }
}
