import { isIP } from "node:net";
import type { Dispatcher } from "undici";
import { withoutBrackets } from "./address-policy.js";
import type { Capped } from "../types.js";
import { UnwrapHandler } from "./undici.js";

/**
 * The per-snapshot caps on what one paid call may make the service do to the rest of the
 * internet (docs/contract.md §4.1): at most `maxRequests` HTTP requests and at most `maxNames`
 * distinct host names resolved. Counted where every request of a snapshot is dispatched (the
 * snapshot's dispatcher views, `budgetedDispatchers`) and checked again where names are
 * resolved (dialer.ts), so no check, present or future, can send around it.
 *
 * Precedence (docs/snapshot-engine.md "Per-snapshot caps"): the main chain first, then the HTTPS
 * probe, then the well-known files, then every other request (the CORS and http:// side probes,
 * and whatever a later check adds). While the chain runs, files and others may use only what the
 * chain (one request and one new name per hop it may still make) and the HTTPS probe (one
 * request) could still need; one that does not fit waits until the engine says those are
 * settled, then goes or is refused, files before others, each in the order asked. Chain and
 * HTTPS requests never wait: they go or are refused at once.
 */

type Priority = "chain" | "https" | "files" | "extra";
type CapKind = Capped["limit"];

/** A request this snapshot did not send because a cap was reached: our limit, not the site's. */
export class CapReachedError extends Error {
  readonly code = "SECSNAP_CAP";
  constructor(
    readonly limit: CapKind,
    readonly max: number,
  ) {
    const what = limit === "requests" ? "request" : "host name";
    super(`This snapshot reached its limit of ${max} ${what}${max === 1 ? "" : "s"}.`);
    this.name = "CapReachedError";
  }
}

interface BudgetLimits {
  maxRequests: number;
  maxNames: number;
}

interface Waiter {
  priority: "files" | "extra";
  host: string;
  go(): void;
  refuse(err: Error): void;
}

export class SnapshotBudget {
  private requests = 0;
  private readonly names = new Set<string>();
  /** Requests (and new names) the main chain may still make: held back from the rest. */
  private chainHeld: number;
  /** The HTTPS probe's one request, held back from the rest until the engine has decided it. */
  private httpsHeld = 1;
  /** Requests that wait for what the chain and the HTTPS probe hold: files, then others. */
  private readonly waiting: Record<Waiter["priority"], Waiter[]> = { files: [], extra: [] };

  constructor(
    private readonly limits: BudgetLimits,
    /** Requests the main chain may make: SNAPSHOT_MAX_REDIRECTS + 1. */
    chainRequests: number,
    signal: AbortSignal,
  ) {
    this.chainHeld = chainRequests;
    // Nothing waits past the snapshot: its end or deadline refuses every waiting request.
    signal.addEventListener("abort", () => this.refuseAll(signal.reason as Error), { once: true });
  }

  /**
   * The dialer's check before it resolves `host`: only a name admitted with a request of this
   * snapshot may be resolved (an IP literal needs none), whoever asks for the connection.
   */
  checkResolvable(host: string): void {
    const name = nameOf(host);
    if (isIP(name) === 0 && !this.names.has(name)) {
      throw new CapReachedError("names", this.limits.maxNames);
    }
  }

  /** The chain has ended: what it held goes to the waiting requests (the HTTPS probe's stays). */
  chainEnded(): void {
    this.chainHeld = 0;
    this.serveWaiting();
  }

  /** The HTTPS probe is sent or not needed: the rest may use everything that is left. */
  httpsDecided(): void {
    this.chainHeld = 0;
    this.httpsHeld = 0;
    this.serveWaiting();
  }

  /**
   * Admits one request to `host` now (counted), or says it must wait, or throws CapReachedError.
   */
  admit(priority: Priority, host: string): "now" | "later" {
    const verdict = this.fits(priority, host);
    if (verdict === "fits") {
      this.take(priority, host);
      return "now";
    }
    if (!isFirst(priority) && this.chainHeld + this.httpsHeld > 0) return "later";
    throw new CapReachedError(
      verdict,
      verdict === "requests" ? this.limits.maxRequests : this.limits.maxNames,
    );
  }

  /**
   * Admits one connection of the lowest class that is no HTTP request (a bare TLS handshake,
   * docs/snapshot-engine.md "TLS facts"): counted as a request, waiting like the others.
   * Rejects with CapReachedError, or with `signal`'s reason when it aborts first.
   */
  admitExtra(host: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    try {
      if (this.admit("extra", host) === "now") return Promise.resolve();
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        leave();
        reject(signal.reason as Error);
      };
      const leave = this.wait({
        priority: "extra",
        host,
        go: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
        refuse: (err) => {
          signal.removeEventListener("abort", onAbort);
          reject(err);
        },
      });
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Queues a request that was told "later" until what is held back is released. */
  wait(waiter: Waiter): () => void {
    const queue = this.waiting[waiter.priority];
    queue.push(waiter);
    return () => {
      const i = queue.indexOf(waiter);
      if (i >= 0) queue.splice(i, 1);
    };
  }

  /** "fits", or the cap that stops a request of `priority` to `host` now. */
  private fits(priority: Priority, host: string): "fits" | CapKind {
    const heldRequests =
      priority === "chain" ? 0 : this.chainHeld + (isFirst(priority) ? 0 : this.httpsHeld);
    // The HTTPS probe asks a host the chain has named already; only chain hops bring new names.
    const heldNames = priority === "chain" ? 0 : this.chainHeld;
    if (this.requests + heldRequests >= this.limits.maxRequests) return "requests";
    const name = nameOf(host);
    const isNew = isIP(name) === 0 && !this.names.has(name);
    if (isNew && this.names.size + heldNames >= this.limits.maxNames) return "names";
    return "fits";
  }

  private take(priority: Priority, host: string): void {
    this.requests++;
    const name = nameOf(host);
    if (isIP(name) === 0) this.names.add(name);
    if (priority === "chain") this.chainHeld = Math.max(0, this.chainHeld - 1);
  }

  /** Serves waiting requests, files first, each in the order asked, while they fit; refuses
   * the others once nothing is held back any more (nothing will be freed later). */
  private serveWaiting(): void {
    for (;;) {
      const queue = this.waiting.files.length > 0 ? this.waiting.files : this.waiting.extra;
      const next = queue[0];
      if (!next) return;
      const verdict = this.fits(next.priority, next.host);
      if (verdict !== "fits" && this.chainHeld + this.httpsHeld > 0) return;
      queue.shift();
      if (verdict === "fits") {
        this.take(next.priority, next.host);
        next.go();
      } else {
        const max = verdict === "requests" ? this.limits.maxRequests : this.limits.maxNames;
        next.refuse(new CapReachedError(verdict, max));
      }
    }
  }

  private refuseAll(reason: Error): void {
    for (const w of [...this.waiting.files.splice(0), ...this.waiting.extra.splice(0)]) {
      w.refuse(reason);
    }
  }
}

/** The chain and the HTTPS probe: they never wait and take what the others leave them. */
function isFirst(priority: Priority): boolean {
  return priority === "chain" || priority === "https";
}

/** A host as the resolver sees it: no IPv6 brackets (WHATWG hosts are lower-case already). */
function nameOf(host: string): string {
  return withoutBrackets(host);
}

interface BudgetedDispatchers {
  /** For the main chain's requests. */
  chain: Dispatcher;
  /** For the HTTPS probe. */
  https: Dispatcher;
  /** For the well-known files and their redirects. */
  files: Dispatcher;
  /** For everything else: the default, so a new kind of request is counted without asking. */
  other: Dispatcher;
}

/**
 * Views of the snapshot's one dispatcher that admit each request through `budget` before it is
 * dispatched: a refused request fails with CapReachedError like a connection error, a waiting
 * one is dispatched when admitted, or fails with its signal's reason if that aborts first.
 */
export function budgetedDispatchers(
  agent: Dispatcher,
  budget: SnapshotBudget,
): BudgetedDispatchers {
  const view = (priority: Priority): Dispatcher => {
    const dispatch: Dispatcher["dispatch"] = (opts, handler) => {
      const fail = (err: Error) => {
        (UnwrapHandler.unwrap(handler) as { onError(err: Error): void }).onError(err);
      };
      const host = new URL(String(opts.origin)).hostname;
      let admitted: "now" | "later";
      try {
        admitted = budget.admit(priority, host);
      } catch (err) {
        fail(err as Error);
        return false;
      }
      if (admitted === "now") return agent.dispatch(opts, handler);
      // request() passes its signal on in the dispatch options (undici's types omit it).
      const given = (opts as { signal?: unknown }).signal;
      const signal = given instanceof AbortSignal ? given : undefined;
      if (signal?.aborted) {
        fail(signal.reason as Error);
        return false;
      }
      const onAbort = () => {
        leave();
        fail((signal?.reason as Error | undefined) ?? new Error("aborted"));
      };
      const leave = budget.wait({
        priority: priority === "files" ? "files" : "extra",
        host,
        go: () => {
          signal?.removeEventListener("abort", onAbort);
          agent.dispatch(opts, handler);
        },
        refuse: (err) => {
          signal?.removeEventListener("abort", onAbort);
          fail(err);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      return true;
    };
    // undici's own compose() wraps a dispatcher the same way; everything else is the agent's.
    return new Proxy(agent, {
      get: (target, key) => {
        if (key === "dispatch") return dispatch;
        const value: unknown = Reflect.get(target, key);
        return typeof value === "function" ? (value as () => unknown).bind(target) : value;
      },
    });
  };
  return {
    chain: view("chain"),
    https: view("https"),
    files: view("files"),
    other: view("extra"),
  };
}
