import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type {
  FacilitatorOperation,
  FacilitatorResult,
  PaymentEvents,
  PaymentOutcome,
  ProtocolVersion,
} from "../payment/index.js";
import { SnapshotError, type SnapshotEngine } from "../snapshot/index.js";
import type { FetchApp } from "./server.js";

/** Seconds; from a cached 402 (sub-millisecond) to a whole snapshot with its settlement. */
const REQUEST_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const SNAPSHOT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 60];
const FACILITATOR_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 130];

/** A counter and a histogram child for one (route, status): bound once, then only incremented. */
interface RequestChildren {
  count: Counter.Internal;
  duration: Histogram.Internal<"route" | "status">;
}

/**
 * The service's Prometheus metrics (docs/operations.md, "Metrics"), in a registry of their own
 * (not prom-client's global one, so two services in one process never mix). Implements the
 * payment layer's PaymentEvents; the Redis store and the rate limiters call `redisError` and
 * `rateLimited`.
 */
export class ServiceMetrics implements PaymentEvents {
  readonly registry = new Registry();
  private readonly requests: Counter<"route" | "status">;
  private readonly requestDuration: Histogram<"route" | "status">;
  private readonly snapshotDuration: Histogram<"outcome">;
  private readonly inFlight: Gauge;
  private readonly payments: Counter<"version" | "outcome">;
  private readonly facilitator: Histogram<"operation" | "result">;
  private readonly redisErrors: Counter;
  private readonly limited: Counter<"limit">;
  /** By route, then status: prom-client's labels() hashes its arguments on every call. */
  private readonly children = new Map<string, Map<number, RequestChildren>>();

  constructor() {
    const registers = [this.registry];
    this.requests = new Counter({
      name: "secsnap_http_requests_total",
      help: "HTTP requests answered, by route pattern and status",
      labelNames: ["route", "status"] as const,
      registers,
    });
    this.requestDuration = new Histogram({
      name: "secsnap_http_request_duration_seconds",
      help: "Time from a request's arrival to the end of its answer, by route pattern and status",
      labelNames: ["route", "status"] as const,
      buckets: REQUEST_BUCKETS,
      registers,
    });
    this.snapshotDuration = new Histogram({
      name: "secsnap_snapshot_duration_seconds",
      help: "Duration of one snapshot, by outcome (report, or the SnapshotError's error_type)",
      labelNames: ["outcome"] as const,
      buckets: SNAPSHOT_BUCKETS,
      registers,
    });
    this.inFlight = new Gauge({
      name: "secsnap_snapshots_in_flight",
      help: "Snapshots running now in this instance",
      registers,
    });
    this.payments = new Counter({
      name: "secsnap_payments_total",
      help: "x402 payment events, by protocol version and outcome",
      labelNames: ["version", "outcome"] as const,
      registers,
    });
    this.facilitator = new Histogram({
      name: "secsnap_facilitator_request_duration_seconds",
      help: "Facilitator calls, by operation and result (ok, rejected, unavailable)",
      labelNames: ["operation", "result"] as const,
      buckets: FACILITATOR_BUCKETS,
      registers,
    });
    this.redisErrors = new Counter({
      name: "secsnap_redis_errors_total",
      help: "Failed Redis commands (connection lost, timeout, error reply)",
      registers,
    });
    this.limited = new Counter({
      name: "secsnap_rate_limited_total",
      help: "Requests refused by a rate limit: ip (per client address) or payer (unpaid budget)",
      labelNames: ["limit"] as const,
      registers,
    });
    // Zero series exist from the start, so a rate() or an alert sees 0 rather than nothing.
    this.redisErrors.inc(0);
    for (const limit of ["ip", "payer"]) this.limited.labels(limit).inc(0);
    for (const version of ["1", "2"]) {
      for (const outcome of PAYMENT_OUTCOMES) this.payments.labels(version, outcome).inc(0);
    }
    this.inFlight.set(0);
    collectDefaultMetrics({ register: this.registry });
  }

  /** One answered request; `route` is a route pattern or "other", never a raw path. */
  request(route: string, status: number, seconds: number): void {
    let byStatus = this.children.get(route);
    if (!byStatus) this.children.set(route, (byStatus = new Map()));
    let child = byStatus.get(status);
    if (!child) {
      const labels = [route, String(status)] as const;
      child = {
        count: this.requests.labels(...labels),
        duration: this.requestDuration.labels(...labels),
      };
      byStatus.set(status, child);
    }
    child.count.inc();
    child.duration.observe(seconds);
  }

  payment(version: ProtocolVersion, outcome: PaymentOutcome): void {
    this.payments.labels(version, outcome).inc();
  }

  facilitatorCall(operation: FacilitatorOperation, result: FacilitatorResult, seconds: number) {
    this.facilitator.labels(operation, result).observe(seconds);
  }

  rateLimited(limit: "ip" | "payer"): void {
    this.limited.labels(limit).inc();
  }

  /** For the shared store: one failed Redis command. */
  redisError(): void {
    this.redisErrors.inc();
  }

  /** The engine, its snapshots timed by outcome and counted while they run. */
  instrumentEngine(engine: SnapshotEngine): SnapshotEngine {
    return {
      snapshot: async (rawUrl, options) => {
        const end = this.snapshotDuration.startTimer();
        this.inFlight.inc();
        try {
          const result = await engine.snapshot(rawUrl, options);
          end({ outcome: "report" });
          return result;
        } catch (error) {
          end({ outcome: error instanceof SnapshotError ? error.errorType : "error" });
          throw error;
        } finally {
          this.inFlight.dec();
        }
      },
      close: () => engine.close(),
    };
  }
}

const PAYMENT_OUTCOMES: readonly PaymentOutcome[] = [
  "verified",
  "settled",
  "refused",
  "replayed",
  "idempotent_hit",
  "unknown_settlement",
  "recovered",
];

/** The metrics listener's app: GET /metrics in Prometheus text, 404 for anything else. */
export function metricsApp(metrics: ServiceMetrics): FetchApp {
  return {
    async fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname !== "/metrics") return new Response("not found\n", { status: 404 });
      if (request.method !== "GET" && request.method !== "HEAD") {
        return new Response("method not allowed\n", { status: 405, headers: { allow: "GET" } });
      }
      const body = await metrics.registry.metrics();
      return new Response(request.method === "HEAD" ? null : body, {
        headers: { "content-type": metrics.registry.contentType },
      });
    },
  };
}
