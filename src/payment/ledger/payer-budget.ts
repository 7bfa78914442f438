import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import type { RateLimiterAbstract } from "rate-limiter-flexible";

export type Reservation = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * How many snapshots one payer may have refused (not paid for) per window. A snapshot reserves a
 * unit before it runs and gives it back once it is paid for, so only unpaid work — refused
 * targets, hang-ups, failed settlements — stays counted, and a burst of concurrent requests
 * cannot run past the limit before the first of them is refused.
 *
 * An interface so a shared store can replace the in-memory one when the service runs as several
 * processes.
 */
export interface PayerBudget {
  /** Takes one unit for `payer` before a snapshot runs; refused when none is left. */
  reserve(payer: string): Promise<Reservation>;
  /** Gives the unit back: the snapshot was paid for. */
  refund(payer: string): Promise<void>;
}

/**
 * A PayerBudget over any rate-limiter-flexible limiter (RateLimiterMemory in one process; its
 * Redis twin has the same API). Keys are lower-case addresses.
 */
export class RateLimiterPayerBudget implements PayerBudget {
  constructor(private readonly limiter: RateLimiterAbstract) {}

  async reserve(payer: string): Promise<Reservation> {
    const key = payer.toLowerCase();
    try {
      await this.limiter.consume(key, 1);
      return { ok: true };
    } catch (rejection) {
      // Anything but the limiter's "no points left" is a store failure: the caller's to handle.
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      // A refused consume still counted its point; give it back so the count stays what ran.
      await this.limiter.reward(key, 1);
      return { ok: false, retryAfterMs: rejection.msBeforeNext };
    }
  }

  async refund(payer: string): Promise<void> {
    const key = payer.toLowerCase();
    // Not into a fresh window: a unit taken in the last one must not become a spare in this one.
    const current = await this.limiter.get(key);
    if (current && current.consumedPoints > 0) await this.limiter.reward(key, 1);
  }
}

/** `perMinute` unpaid snapshots per payer and minute, in this process's memory. */
export function memoryPayerBudget(perMinute: number): PayerBudget {
  return new RateLimiterPayerBudget(new RateLimiterMemory({ points: perMinute, duration: 60 }));
}
