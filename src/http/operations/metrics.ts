import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type Metric,
  type MetricObjectWithValues,
  type MetricValueWithName,
} from "prom-client";
import type {
  FacilitatorOperation,
  FacilitatorResult,
  PaymentEvents,
  PaymentOutcome,
  ProtocolVersion,
} from "../../payment/index.js";
import { SnapshotError, type SnapshotEngine } from "../../snapshot/index.js";
import type { FetchApp } from "../server.js";

/** Seconds; from a cached 402 (sub-millisecond) to a whole snapshot with its settlement. */
const REQUEST_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const SNAPSHOT_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 60];
const FACILITATOR_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 130];

/** The answered requests of one (route, status), as plain numbers. */
interface RequestTally {
  labels: { route: string; status: string };
  count: number;
  sum: number;
  /** Observations per bucket of REQUEST_BUCKETS (not cumulative), then one for +Inf. */
  buckets: number[];
}

type MetricText = MetricObjectWithValues<MetricValueWithName<string>>;

/**
 * secsnap_http_requests_total and its duration histogram, tallied by hand in plain numbers and
 * formatted by prom-client's registry: prom-client hashes the labels on every inc/observe, even
 * of a bound child, which cost ~14 µs a request (docs/benchmarks.md "Telemetry"); here a request
 * is two Map lookups and three additions.
 */
class RequestTallies {
  private readonly byRoute = new Map<string, Map<number, RequestTally>>();

  add(route: string, status: number, seconds: number): void {
    let byStatus = this.byRoute.get(route);
    if (!byStatus) this.byRoute.set(route, (byStatus = new Map()));
    let tally = byStatus.get(status);
    if (!tally) {
      tally = {
        labels: { route, status: String(status) },
        count: 0,
        sum: 0,
        buckets: new Array<number>(REQUEST_BUCKETS.length + 1).fill(0),
      };
      byStatus.set(status, tally);
    }
    tally.count++;
    tally.sum += seconds;
    let i = 0;
    while (i < REQUEST_BUCKETS.length && seconds > REQUEST_BUCKETS[i]!) i++;
    tally.buckets[i]!++;
  }

  private *tallies(): Generator<RequestTally> {
    for (const byStatus of this.byRoute.values()) yield* byStatus.values();
  }

  /** Both metrics, registered in `registry` as prom-client metrics are. */
  register(registry: Registry): void {
    const metric = (
      name: string,
      help: string,
      type: "counter" | "histogram",
      values: () => MetricText["values"],
    ) =>
      ({
        name,
        help,
        type,
        aggregator: "sum",
        collect: () => {},
        get: () =>
          Promise.resolve({
            name,
            help,
            type,
            aggregator: "sum",
            collect: () => {},
            values: values(),
          }),
      }) as unknown as Metric;
    registry.registerMetric(
      metric(
        "secsnap_http_requests_total",
        "HTTP requests answered, by route pattern and status",
        "counter",
        () => [...this.tallies()].map((t) => ({ labels: t.labels, value: t.count })),
      ),
    );
    registry.registerMetric(
      metric(
        "secsnap_http_request_duration_seconds",
        "Time from a request's arrival to the end of its answer, by route pattern and status",
        "histogram",
        () =>
          [...this.tallies()].flatMap((t) =>
            histogramValues("secsnap_http_request_duration_seconds", t),
          ),
      ),
    );
  }
}

/** One tally as Prometheus histogram series: cumulative buckets, +Inf, sum and count. */
function histogramValues(name: string, tally: RequestTally): MetricText["values"] {
  const values: MetricText["values"] = [];
  let cumulative = 0;
  REQUEST_BUCKETS.forEach((le, i) => {
    cumulative += tally.buckets[i]!;
    values.push({
      metricName: `${name}_bucket`,
      labels: { le, ...tally.labels },
      value: cumulative,
    });
  });
  values.push({
    metricName: `${name}_bucket`,
    labels: { le: "+Inf", ...tally.labels },
    value: tally.count,
  });
  values.push({ metricName: `${name}_sum`, labels: tally.labels, value: tally.sum });
  values.push({ metricName: `${name}_count`, labels: tally.labels, value: tally.count });
  return values;
}

/**
 * The service's Prometheus metrics (docs/operations.md, "Metrics"), in a registry of their own
 * (not prom-client's global one, so two services in one process never mix). Implements the
 * payment layer's PaymentEvents; the Redis store and the rate limiters call `redisError` and
 * `rateLimited`.
 */
export class ServiceMetrics implements PaymentEvents {
  readonly registry = new Registry();
  private readonly requests = new RequestTallies();
  private readonly snapshotDuration: Histogram<"outcome">;
  private readonly inFlight: Gauge;
  private readonly payments: Counter<"version" | "outcome">;
  private readonly facilitator: Histogram<"operation" | "result">;
  private readonly redisErrors: Counter;
  private readonly limited: Counter<"limit">;

  constructor() {
    const registers = [this.registry];
    this.requests.register(this.registry);
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
    this.requests.add(route, status, seconds);
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
  storeError(): void {
    this.redisError();
  }

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
