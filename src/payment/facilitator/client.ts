import { performance } from "node:perf_hooks";
import { HTTPFacilitatorClient, FacilitatorResponseError } from "@x402/core/server";
import type { FacilitatorClient, FacilitatorConfig } from "@x402/core/server";
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from "@x402/core/types";
import { SettleError, VerifyError } from "@x402/core/types";
import type { FacilitatorOperation, FacilitatorResult } from "../telemetry.js";
import { toFacilitatorV1 } from "../x402/v1.js";

/**
 * The facilitator could not give an answer about the payment (down, slow, 5xx, garbage).
 * Extends the SDK's FacilitatorResponseError so x402HTTPResourceServer rethrows it instead of
 * turning it into a 402 ("your payment is bad"); the middleware answers 503 for it.
 */
export class FacilitatorUnavailableError extends FacilitatorResponseError {
  constructor(operation: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`payment facilitator ${operation} unavailable: ${why}`);
    this.name = "FacilitatorUnavailableError";
    this.cause = cause;
  }
}

export interface FacilitatorClientOptions {
  url: string;
  /** Bound on each verify/settle/supported call; the SDK default (90 s) is too long to hold a client. */
  timeoutMs?: number;
  /**
   * Bound on settle alone; default `timeoutMs`. A settle that times out is an unknown outcome
   * (the transfer may still land, leaving the client charged without a report), so this should
   * exceed the facilitator's own wait for the receipt (this project's: 120 s on a real chain).
   */
  settleTimeoutMs?: number;
  /** Extra headers sent on every call, e.g. `Authorization` for a hosted facilitator. */
  headers?: Record<string, string>;
  /**
   * Per-call auth headers, keyed by facilitator path, as the SDK's FacilitatorConfig takes them:
   * for facilitators that want a fresh token per request (e.g. Coinbase CDP's JWTs, from
   * `@coinbase/x402`'s `createAuthHeaders`). Used instead of `headers` when given.
   */
  createAuthHeaders?: FacilitatorConfig["createAuthHeaders"];
  /** Called after each call with how it ended and how long it took (metrics). */
  onCall?: (operation: FacilitatorOperation, result: FacilitatorResult, seconds: number) => void;
}

export const DEFAULT_FACILITATOR_TIMEOUT_MS = 10_000;

/**
 * The SDK's HTTPFacilitatorClient, with failures sorted into two kinds: a facilitator that
 * answered about the payment (VerifyError/SettleError below 500: pass through; a verify's is a
 * 402, a settle's is sorted by its reason in src/payment/ledger/ledger.ts), and everything else
 * (network error, timeout, 5xx, unparsable body: FacilitatorUnavailableError, 503).
 */
export class ResilientFacilitatorClient implements FacilitatorClient {
  readonly url: string;
  private readonly inner: HTTPFacilitatorClient;
  /** The same facilitator with the settle bound (the SDK client has one timeout for all calls). */
  private readonly settler: HTTPFacilitatorClient;
  private supported: SupportedResponse | undefined;
  private readonly onCall: NonNullable<FacilitatorClientOptions["onCall"]>;

  constructor(options: FacilitatorClientOptions) {
    this.onCall = options.onCall ?? (() => {});
    const headers = options.headers ?? {};
    const hasHeaders = Object.keys(headers).length > 0;
    const timeoutMs = options.timeoutMs ?? DEFAULT_FACILITATOR_TIMEOUT_MS;
    const client = (bound: number) =>
      new HTTPFacilitatorClient({
        url: options.url,
        timeoutMs: bound,
        ...(options.createAuthHeaders && { createAuthHeaders: options.createAuthHeaders }),
        ...(hasHeaders &&
          !options.createAuthHeaders && {
            // The SDK wants headers per facilitator path.
            createAuthHeaders: () =>
              Promise.resolve({ verify: headers, settle: headers, supported: headers }),
          }),
      });
    this.inner = client(timeoutMs);
    const settleTimeoutMs = options.settleTimeoutMs ?? timeoutMs;
    this.settler = settleTimeoutMs === timeoutMs ? this.inner : client(settleTimeoutMs);
    this.url = this.inner.url;
  }

  /** A v1 payment goes down the facilitator's v1 path, in v1 form (src/payment/x402/v1.ts). */
  verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const sent = toFacilitatorV1(payload, requirements);
    return this.guard("verify", () => this.inner.verify(sent.payload, sent.requirements));
  }

  settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const sent = toFacilitatorV1(payload, requirements);
    return this.guard("settle", () => this.settler.settle(sent.payload, sent.requirements));
  }

  /** /supported, kept once it answered: the gate checks it first, then the SDK reads it. */
  async getSupported(): Promise<SupportedResponse> {
    this.supported ??= await this.guard("supported", () => this.inner.getSupported());
    return this.supported;
  }

  private async guard<T>(operation: FacilitatorOperation, call: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      const answer = await call();
      this.onCall(operation, "ok", (performance.now() - started) / 1000);
      return answer;
    } catch (error) {
      const answeredAboutPayment =
        (error instanceof VerifyError || error instanceof SettleError) && error.statusCode < 500;
      const seconds = (performance.now() - started) / 1000;
      this.onCall(operation, answeredAboutPayment ? "rejected" : "unavailable", seconds);
      if (answeredAboutPayment) throw error;
      throw new FacilitatorUnavailableError(operation, error);
    }
  }
}
