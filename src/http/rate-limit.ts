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
  /** Shared store only: clients it last said are over budget, until when (epoch ms). */
  private readonly blockedUntil = new Map<string, number>();
  /** Shared store only: answers served per client since the last flush. */
  private uncounted = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    limiter: RateLimiterAbstract,
    private readonly log: (line: string) => void = (line) => console.error(line),
    /** Told of every 429 (a metric). */
    private readonly onLimited: () => void = () => {},
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
    if (!(this.limiter instanceof RateLimiterMemory)) return this.takeShared(client);
    try {
      await this.limiter.consume(client, 1);
      return undefined;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        this.onLimited();
        return rateLimited(rejection.msBeforeNext);
      }
      this.log(`rate limit store failed, request let through: ${describe(rejection)}`);
      return undefined;
    }
  }

  /**
   * With a shared store no free answer waits for it (a 402 stays a local answer): the request is
   * decided by what the store last said of this client, and counted in the background, in one
   * call per client every FLUSH_MS. Across instances the budget holds to within the requests of
   * one such interval.
   */
  private takeShared(client: string): Answer | undefined {
    const now = Date.now();
    const until = this.blockedUntil.get(client);
    if (until !== undefined) {
      if (until > now) {
        this.onLimited();
        return rateLimited(until - now);
      }
      this.blockedUntil.delete(client);
    }
    this.uncounted.set(client, (this.uncounted.get(client) ?? 0) + 1);
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
    return undefined;
  }

  /** Sends what this instance served since the last flush to the shared store. */
  private flush(): void {
    this.flushTimer = undefined;
    const batch = this.uncounted;
    this.uncounted = new Map();
    for (const [client, served] of batch) {
      this.limiter.consume(client, served).catch((rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) {
          if (this.blockedUntil.size >= MAX_BLOCKED) this.forgetExpired();
          this.blockedUntil.set(client, Date.now() + rejection.msBeforeNext);
        } else {
          this.log(`rate limit store failed, request let through: ${describe(rejection)}`);
        }
      });
    }
  }

  private forgetExpired(): void {
    const now = Date.now();
    for (const [client, until] of this.blockedUntil)
      if (until <= now) this.blockedUntil.delete(client);
    // Still full: a flood of distinct addresses; the oldest entries go (the store still counts).
    for (const client of this.blockedUntil.keys()) {
      if (this.blockedUntil.size < MAX_BLOCKED) break;
      this.blockedUntil.delete(client);
    }
  }
}

/** How often a shared store is told what this instance served (one call per client). */
const FLUSH_MS = 50;

/** Bound on the local memory of blocked clients (shared store only). */
const MAX_BLOCKED = 100_000;

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
