import {
  RLWrapperTimeouts,
  RateLimiterMemory,
  RateLimiterRes,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";
import { rateLimited, tooManyRefusedProofs, type Answer } from "../../payment/index.js";
import { PATHS } from "../../routes.js";

/** A shared store slower than this counts as failed: a free answer never waits on it longer. */
const STORE_TIMEOUT_MS = 500;

/** Paths a load balancer polls: never limited, or a busy client could take an instance out. */
const EXEMPT_PATHS: ReadonlySet<string> = new Set([PATHS.health, PATHS.ready]);

/**
 * The per-client budget of free answers (docs/operations.md, "Rate limits"): 402 challenges,
 * 400s, the demo, the OpenAPI document, the page — everything but the health checks and a paid
 * request, which is paid work: only its refused proofs are counted, in a budget of their own.
 */
export class ClientRateLimit {
  private readonly limiter: RateLimiterAbstract;
  /** Answers per client and window (the wrapper of a shared store forgets them). */
  private readonly points: number;
  /** Shared store only: clients it said are over budget, until when (epoch ms). */
  private readonly blockedUntil = new Map<string, number>();
  /** Shared store only: per client, the requests waiting for the store's next word. */
  private readonly waiting = new Map<string, ClientQueue>();
  /** Shared store only: after a failure, free answers pass without asking it until then. */
  private storeDownUntil = 0;

  constructor(
    limiter: RateLimiterAbstract,
    private readonly log: (line: string) => void = (line) => console.error(line),
    /** Told of every 429 (a metric). */
    private readonly onLimited: () => void = () => {},
  ) {
    this.points = limiter.points;
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
    if (spent === null || spent.consumedPoints < this.points) return undefined;
    this.onLimited();
    return tooManyRefusedProofs(spent.msBeforeNext);
  }

  /** Counts one proof refused with a 402 against `client`. */
  countRefusedProof(client: string): void {
    const key = REFUSED_PROOF_PREFIX + client;
    // Over budget is the expected rejection here: it is read by refusedProofsSpent.
    this.limiter.consume(key, 1).catch((rejection: unknown) => {
      if (this.limiter instanceof RateLimiterMemory) return;
      if (rejection instanceof RateLimiterRes) this.block(key, rejection.msBeforeNext);
      else this.log(`rate limit store failed, proof not counted: ${describe(rejection)}`);
    });
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
   * With a shared store, every free answer is counted there before it is given, so the budget
   * is one budget across instances, exact (docs/operations.md, "Rate limits"). The cost stays
   * one store call per client at a time, not per request: the requests of one client that
   * arrive while its call is out wait together for the next, which takes them all in one
   * `consume(client, n)`; the store's count says how many of them fit. A client the store said
   * is over budget is refused here until its window ends, without asking again.
   */
  private takeShared(client: string): Promise<Answer | undefined> | Answer | undefined {
    const now = Date.now();
    const until = this.blockedUntil.get(client);
    if (until !== undefined) {
      if (until > now) {
        this.onLimited();
        return rateLimited(until - now);
      }
      this.blockedUntil.delete(client);
    }
    if (now < this.storeDownUntil) return undefined;
    return new Promise((resolve) => {
      let queue = this.waiting.get(client);
      if (queue === undefined) {
        queue = { asking: false, next: [] };
        this.waiting.set(client, queue);
      }
      queue.next.push(resolve);
      if (!queue.asking) void this.ask(client, queue);
    });
  }

  /** One store call for every request of `client` waiting now; again while more arrived meanwhile. */
  private async ask(client: string, queue: ClientQueue): Promise<void> {
    queue.asking = true;
    while (queue.next.length > 0) {
      const batch = queue.next;
      queue.next = [];
      const verdicts = await this.consumeShared(client, batch.length);
      batch.forEach((resolve, i) => resolve(verdicts(i)));
    }
    queue.asking = false;
    this.waiting.delete(client);
  }

  /** Consumes `n` units; the verdict of the i-th of them (served first to last). */
  private async consumeShared(
    client: string,
    n: number,
  ): Promise<(i: number) => Answer | undefined> {
    try {
      await this.limiter.consume(client, n);
      return () => undefined;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) {
        this.log(`rate limit store failed, request let through: ${describe(rejection)}`);
        this.storeDownUntil = Date.now() + STORE_RETRY_MS;
        return () => undefined;
      }
      // The count after this call: the units before it that were within budget are served.
      const fits = Math.max(0, this.points - (rejection.consumedPoints - n));
      this.block(client, rejection.msBeforeNext);
      return (i) => {
        if (i < fits) return undefined;
        this.onLimited();
        return rateLimited(rejection.msBeforeNext);
      };
    }
  }

  private block(key: string, msBeforeNext: number): void {
    if (this.blockedUntil.size >= MAX_BLOCKED) this.forgetExpired();
    this.blockedUntil.set(key, Date.now() + msBeforeNext);
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

/** One client's requests waiting on the shared store (at most one call out per client). */
interface ClientQueue {
  asking: boolean;
  next: Array<(verdict: Answer | undefined) => void>;
}

/** After a shared store failed, how long free answers pass without asking it. */
const STORE_RETRY_MS = 1_000;

/** The budget of a client's refused payment proofs is kept under this prefix of its key. */
const REFUSED_PROOF_PREFIX = "proof|";

/** Bound on the local memory of blocked clients (shared store only). */
const MAX_BLOCKED = 100_000;

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
