import type { Dispatcher as UndiciDispatcher } from "undici";
import { Client, Dispatcher, errors } from "./undici.js";

type DispatchOptions = UndiciDispatcher.DispatchOptions;
type DispatchHandler = UndiciDispatcher.DispatchHandler;

/**
 * Requests waiting for a free connection of one origin, in order. Hand-written because undici's
 * Pool keeps its queue in a buffer of 2,048 slots allocated up front, paid by every origin of
 * every snapshot though a snapshot rarely queues a request (docs/benchmarks.md, "Changelog").
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
  shift(): T | undefined {
    if (this.isEmpty()) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.isEmpty()) {
      this.items = [];
      this.head = 0;
    }
    return item;
  }
}

/**
 * One origin's connections, as an Agent's `factory` builds them: up to `connections` undici
 * Clients (one connection each), made as requests need them, and the requests waiting for one
 * in a WaitingRequests. Built on undici's public Dispatcher and Client only: what undici's Pool
 * does, without its preallocated queue. Each Client's events reach the Agent as a Pool's would,
 * so the Agent counts the origin's connections and closes it when the last one is gone.
 */
export class OriginConnections extends Dispatcher {
  private readonly clients: Client[] = [];
  /** Clients that take no more requests until their 'drain' (their dispatch returned false). */
  private readonly full = new Set<Client>();
  private readonly waiting = new WaitingRequests<[DispatchOptions, DispatchHandler]>();
  private state: "open" | "closing" | "destroyed" = "open";
  private closing: Promise<void> | undefined;
  private whenDrained: (() => void) | undefined;

  constructor(
    private readonly origin: string | URL,
    private readonly options: Client.Options,
    private readonly connections: number,
  ) {
    super();
  }

  get closed(): boolean {
    return this.state !== "open";
  }

  get destroyed(): boolean {
    return this.state === "destroyed";
  }

  override dispatch(options: DispatchOptions, handler: DispatchHandler): boolean {
    if (this.state !== "open") {
      const err =
        this.state === "destroyed"
          ? new errors.ClientDestroyedError()
          : new errors.ClientClosedError();
      if (typeof handler.onError !== "function") throw err;
      handler.onError(err);
      return false;
    }
    const client = this.freeClient();
    if (client === undefined) {
      this.waiting.push([options, handler]);
      return false;
    }
    if (!client.dispatch(options, handler)) this.full.add(client);
    return true;
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    if (this.state === "open") this.state = "closing";
    this.closing ??= this.drained().then(async () => {
      await Promise.all(this.clients.map((client) => client.close()));
    });
    if (!callback) return this.closing;
    void this.closing.then(callback, callback);
  }

  override destroy(): Promise<void>;
  override destroy(err: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(err: Error | null, callback: () => void): void;
  override destroy(
    errOrCallback?: Error | null | (() => void),
    maybeCallback?: () => void,
  ): Promise<void> | void {
    const callback = typeof errOrCallback === "function" ? errOrCallback : maybeCallback;
    const err = typeof errOrCallback === "function" ? null : (errOrCallback ?? null);
    this.state = "destroyed";
    // The waiting requests never got a connection: they fail as a destroyed Pool fails them.
    const reason = err ?? new errors.ClientDestroyedError();
    for (let item = this.waiting.shift(); item; item = this.waiting.shift()) {
      item[1].onError?.(reason);
    }
    this.whenDrained?.();
    const done = Promise.all(this.clients.map((client) => client.destroy(err))).then(() => {});
    if (!callback) return done;
    void done.then(callback, callback);
  }

  /** A client that takes a request now: an idle one, else a new one while under the limit. */
  private freeClient(): Client | undefined {
    const idle = this.clients.find((client) => !this.full.has(client));
    if (idle || this.clients.length >= this.connections) return idle;
    const client = new Client(this.origin, this.options);
    client
      .on("drain", () => this.onDrain(client))
      .on("connect", (origin, targets) => this.emit("connect", origin, [this, ...targets]))
      .on("disconnect", (origin, targets, err) =>
        this.emit("disconnect", origin, [this, ...targets], err),
      )
      .on("connectionError", (origin, targets, err) =>
        this.emit("connectionError", origin, [this, ...targets], err),
      );
    this.clients.push(client);
    return client;
  }

  /** A client took its requests: it takes the waiting ones, as many as it accepts. */
  private onDrain(client: Client): void {
    this.full.delete(client);
    if (this.state === "destroyed") return;
    while (!this.full.has(client)) {
      const next = this.waiting.shift();
      if (!next) break;
      if (!client.dispatch(next[0], next[1])) this.full.add(client);
    }
    if (this.waiting.isEmpty()) this.whenDrained?.();
  }

  /** Resolves once no request is waiting for a connection. */
  private drained(): Promise<void> {
    if (this.waiting.isEmpty()) return Promise.resolve();
    return new Promise((resolve) => (this.whenDrained = resolve));
  }
}

/** An Agent's `factory`: each origin's OriginConnections, up to the Agent's `connections`. */
export function originConnections(origin: string | URL, options: object): OriginConnections {
  const { connections, ...clientOptions } = options as Client.Options & { connections?: number };
  return new OriginConnections(origin, clientOptions, connections ?? 1);
}
