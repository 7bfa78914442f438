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
 * 400s, the demo, the OpenAPI document, the page — everything but the health checks and a paid
 * request, which is paid work: only its refused proofs are counted, in a budget of their own.
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

  /** Paths never counted (a paid request is counted only by its refused proofs). */
  static exempt(path: string): boolean {
    return EXEMPT_PATHS.has(path);
  }

  /**
   * A paid request is refused before verification only when this client's refused proofs have
   * spent its budget: a proof that verifies is never limited, while forged proofs (each one a
   * facilitator call) stay bounded per client. The budget is the same number, counted apart.
   */
  async refusedProofsSpent(client: string): Promise<Answer | undefined> {
    const key = REFUSED_PROOF_PREFIX + client;
    if (!(this.limiter instanceof RateLimiterMemory)) {
      const until = this.blockedUntil.get(key);
      if (until === undefined || until <= Date.now()) return undefined;
      this.onLimited();
      return tooManyRefusedProofs(until - Date.now());
    }
    const spent = await this.limiter.get(key);
    if (spent === null || spent.consumedPoints < this.limiter.points) return undefined;
    this.onLimited();
    return tooManyRefusedProofs(spent.msBeforeNext);
  }

  /** Counts one proof refused with a 402 against `client`. */
  countRefusedProof(client: string): void {
    const key = REFUSED_PROOF_PREFIX + client;
    if (this.limiter instanceof RateLimiterMemory) {
      // Over budget is the expected rejection here: it is read by refusedProofsSpent.
      this.limiter.consume(key, 1).catch(() => {});
      return;
    }
    this.count(key);
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
    this.count(client);
    return undefined;
  }

  private count(key: string): void {
    this.uncounted.set(key, (this.uncounted.get(key) ?? 0) + 1);
    this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_MS).unref();
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

/** The budget of a client's refused payment proofs is kept under this prefix of its key. */
const REFUSED_PROOF_PREFIX = "proof|";

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

function tooManyRefusedProofs(msBeforeNext: number): Answer {
  const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return jsonAnswer(
    429,
    {
      error: `Too many refused payment proofs from this address; retry in ${seconds} s.`,
      error_type: "rate_limited",
    },
    { "retry-after": String(seconds) },
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
