import {
  RLWrapperTimeouts,
  RateLimiterMemory,
  RateLimiterRes,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";
import { jsonAnswer, type Answer } from "../payment/index.js";

/** A shared store slower than this counts as failed: a free answer never waits on it longer. */
const STORE_TIMEOUT_MS = 500;

/** Paths a load balancer polls: never limited, or a busy client could take an instance out. */
const EXEMPT_PATHS: ReadonlySet<string> = new Set(["/health", "/ready"]);

/**
 * The per-client budget of free answers (docs/operations.md, "Rate limits"): 402 challenges,
 * 400s, the demo, the OpenAPI document, the page — everything but the health checks and a
 * request carrying a payment proof, which is paid work (the payer budget bounds its refusals).
 */
export class ClientRateLimit {
  private readonly limiter: RateLimiterAbstract;

  constructor(
    limiter: RateLimiterAbstract,
    private readonly log: (line: string) => void = (line) => console.error(line),
  ) {
    // In memory, one consume stays the whole cost of the hot 402; a store out of process is bounded.
    this.limiter =
      limiter instanceof RateLimiterMemory
        ? limiter
        : new RLWrapperTimeouts({ limiter, timeoutMs: STORE_TIMEOUT_MS });
  }

  /** Paths never counted (a request carrying a payment proof is not counted either). */
  static exempt(path: string): boolean {
    return EXEMPT_PATHS.has(path);
  }

  /**
   * Takes one unit for `client`: undefined when served, else the 429. A store failure lets the
   * request through (one log line): free answers stay up while the shared store is down.
   */
  async take(client: string): Promise<Answer | undefined> {
    try {
      await this.limiter.consume(client, 1);
      return undefined;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return rateLimited(rejection.msBeforeNext);
      this.log(`rate limit store failed, request let through: ${describe(rejection)}`);
      return undefined;
    }
  }
}

function rateLimited(msBeforeNext: number): Answer {
  const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return jsonAnswer(
    429,
    {
      error: `Too many requests from this address; retry in ${seconds} s. Paid requests are not limited.`,
      error_type: "rate_limited",
    },
    { "retry-after": String(seconds) },
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
