import { performance } from "node:perf_hooks";
import { jsonAnswer, notReady, type Answer } from "../../payment/index.js";
import type { SnapshotAdmission } from "../guards/admission.js";

/** Something paid work depends on: the facilitator's /supported, a shared store. */
export interface ReadinessCheck {
  /** Named in the 503's `down` list. */
  name: string;
  /** True when usable; false or a rejection means down. */
  check(): Promise<boolean>;
}

/** A check that has not answered by then counts as down: a load balancer's probe must not hang. */
const CHECK_TIMEOUT_MS = 2_000;

/**
 * GET /ready (docs/operations.md, "Readiness and draining"): 200 `{"status":"ready"}` when every
 * check passes and the instance is not draining, else 503 `{"status":"not_ready","down":[…]}`
 * naming each failed check, or `draining`.
 */
export async function readinessAnswer(
  checks: readonly ReadinessCheck[],
  admission: SnapshotAdmission,
): Promise<Answer> {
  const down = admission.draining ? ["draining"] : [];
  const results = await Promise.all(checks.map((c) => passes(c)));
  checks.forEach((c, i) => {
    if (!results[i]) down.push(c.name);
  });
  return down.length === 0 ? jsonAnswer(200, { status: "ready" }) : notReady(down);
}

async function passes(check: ReadinessCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.check().catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A check run in the background, every `everyMs` with `timeoutMs` to answer, whose last verdict
 * is what /ready reads: a dependency that goes away (the facilitator, the devnet's chain) turns
 * /ready 503 within one period, and neither /ready nor any other request waits on it. Until
 * the first probe has answered, /ready waits for it (bounded by the probe's own time-out).
 */
export class PeriodicCheck implements ReadinessCheck {
  private last: Promise<boolean>;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    readonly name: string,
    private readonly probe: (signal: AbortSignal) => Promise<boolean>,
    private readonly everyMs: number,
    private readonly timeoutMs: number,
  ) {
    this.last = this.run();
    this.timer = setInterval(() => this.tick(), everyMs).unref();
  }

  check(): Promise<boolean> {
    return this.last;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    // A probe still out after a whole period keeps its place: never two at once.
    if (this.running) return;
    const next = this.run();
    // The verdict changes only once the probe has answered, never to "pending".
    void next.then(() => {
      this.last = next;
    });
  }

  private async run(): Promise<boolean> {
    this.running = true;
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      return await this.probe(signal);
    } catch {
      return false;
    } finally {
      this.running = false;
    }
  }
}

/**
 * A check whose verdict is kept `ttlMs`: /ready polled by several load balancers (or a client)
 * costs the checked store at most one probe per period.
 */
export function cachedCheck(
  name: string,
  check: () => Promise<boolean>,
  ttlMs: number,
): ReadinessCheck {
  let kept: { at: number; verdict: Promise<boolean> } | undefined;
  return {
    name,
    check() {
      const now = performance.now();
      if (kept === undefined || now - kept.at >= ttlMs) {
        kept = { at: now, verdict: check().catch(() => false) };
      }
      return kept.verdict;
    },
  };
}
