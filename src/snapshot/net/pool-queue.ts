import { Pool } from "./undici.js";

/**
 * Requests waiting for a free connection of one origin: the three methods undici's Pool uses on
 * its queue. Hand-written because Pool's own queue allocates a large buffer up front, paid by
 * every origin of every snapshot though a snapshot rarely queues a request (docs/benchmarks.md
 * "Fleet").
 */
class WaitingRequests<T> {
  private items: (T | undefined)[] = [];
  private head = 0;
  isEmpty(): boolean {
    return this.head === this.items.length;
  }
  push(item: T): void {
    this.items.push(item);
  }
  shift(): T | null {
    if (this.isEmpty()) return null;
    const item = this.items[this.head] as T;
    this.items[this.head++] = undefined;
    if (this.isEmpty()) {
      this.items = [];
      this.head = 0;
    }
    return item;
  }
}

/**
 * Gives `pool` a WaitingRequests queue in place of undici's preallocated one, while it is still
 * empty. Returns false (and leaves the pool as it is) if this undici keeps its queue elsewhere.
 */
export function lightenPoolQueue(pool: Pool): boolean {
  const key = Object.getOwnPropertySymbols(pool).find((s) => s.description === "queue");
  const record = pool as unknown as Record<symbol, unknown>;
  const queue = key && (record[key] as Partial<WaitingRequests<unknown>> | undefined);
  const fits =
    typeof queue?.isEmpty === "function" &&
    typeof queue.push === "function" &&
    typeof queue.shift === "function" &&
    queue.isEmpty();
  if (!key || !fits) return false;
  record[key] = new WaitingRequests();
  return true;
}

/** An origin's pool, as an Agent's `factory`: undici's Pool with the lighter queue. */
export function poolWithLightQueue(origin: string | URL, options: object): Pool {
  const pool = new Pool(origin, options);
  lightenPoolQueue(pool);
  return pool;
}
