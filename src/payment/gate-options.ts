import type { Network } from "@x402/core/types";
import { NETWORK_IDS } from "../config.js";
import type { PaymentConfig } from "../config.js";
import type { PaymentRecordStore } from "../store/index.js";
import { createCdpAuthHeaders } from "./facilitator/cdp-auth.js";
import {
  DEFAULT_FACILITATOR_TIMEOUT_MS,
  ResilientFacilitatorClient,
} from "./facilitator/client.js";
import type { FacilitatorClientOptions } from "./facilitator/client.js";
import { memoryPayerBudget, type PayerBudget } from "./ledger/payer-budget.js";
import type { RouteOffer } from "./x402/priced-route.js";
import type { OfferReceiptKey } from "./x402/offer-receipt.js";
import type { PaymentEvents } from "./telemetry.js";

/** What the payment gate is told, its defaults, and how the validated environment fills it. */

const DEFAULT_SETTLE_TIMEOUT_MS = 130_000;
export const DEFAULT_PROOF_RELEASES = 3;
const DEFAULT_REFUSED_PER_PAYER_PER_MINUTE = 60;
/** Records of paid requests (kept answers, unsettled payments) live at least this long. */
export const DEFAULT_PAID_RECORD_TTL_MS = 60 * 60_000;
const DAY_MS = 24 * 60 * 60_000;
/** Paid reports are kept for their payers this long unless told (SNAPSHOT_RETENTION_DAYS). */
export const DEFAULT_SNAPSHOT_RETENTION_MS = 30 * DAY_MS;

export interface PaidRequestTimings {
  /** The record's lease and facilitator /verify. */
  verifyMs: number;
  /** The snapshot handler (everything downstream of this middleware). */
  handlerMs: number;
  /** Facilitator /settle; 0 when the answer was not 200 and nothing was settled. */
  settleMs: number;
  totalMs: number;
  /** Final status sent to the client. */
  status: number;
}

export interface PaymentGateOptions extends RouteOffer {
  facilitatorUrl: string;
  /** Sent on every facilitator call (hosted facilitators that need auth). */
  facilitatorHeaders?: Record<string, string>;
  /** Per-request auth headers (e.g. CDP JWTs); see FacilitatorClientOptions.createAuthHeaders. */
  facilitatorAuth?: FacilitatorClientOptions["createAuthHeaders"];
  /** Bound on /supported and /verify; default 10 s. */
  facilitatorTimeoutMs?: number;
  /**
   * Bound on /settle; default 130 s. Longer than the others on purpose: a settle that times out
   * here may still land on chain, charging a client who gets no report, and a facilitator waits
   * up to 120 s for the receipt on Base.
   */
  facilitatorSettleTimeoutMs?: number;
  /** After a failed /supported fetch, unpaid requests answer 503 without retrying for this long. */
  supportedRetryMs?: number;
  /** `Retry-After` (seconds) on 503 answers. */
  retryAfterSeconds?: number;
  /**
   * The durable payment records (docs/payment.md, "The payment record"): one per authorization,
   * written before each outside step. The embedded database, Redis, or memory in tests.
   */
  store: PaymentRecordStore;
  /** How long a payment record lives after its last write; default 1 h. */
  paidRecordTtlMs?: number;
  /**
   * How long a paid report is kept for its payer (GET /v1/snapshots/{id},
   * SNAPSHOT_RETENTION_DAYS); default 30 days, 0 none.
   */
  snapshotRetentionMs?: number;
  /** How long a request's claim on a proof lives unrenewed; default 15 s. */
  leaseMs?: number;
  /** How often the reconciler reads the chain for unresolved settlements; default 15 s, 0 off. */
  reconcileIntervalMs?: number;
  /**
   * JSON-RPC URL per network id (CAIP-2), to read on chain whether an unsettled payment was
   * made (EIP-3009 authorizationState); without one a retry settles again.
   */
  rpcUrls?: Readonly<Record<string, string>>;
  /**
   * How many times one proof may be released after a snapshot it did not pay for (refused, or
   * the client hung up) before it is refused with a 402; default 3 (SNAPSHOT_PROOF_RELEASES).
   */
  proofReleases?: number;
  /** Unpaid snapshots per payer and minute before a 429; default 60. With `payerBudget`, only said. */
  refusedPerPayerPerMinute?: number;
  /** Where the per-payer count lives; default in memory (SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE). */
  payerBudget?: PayerBudget;
  /** Called once per paid request that reached the handler (benchmarks, metrics). */
  onPaidRequest?: (timings: PaidRequestTimings) => void;
  /**
   * The service's Ed25519 key (loadServiceSigner: SIGNING_KEY or the key kept in DATA_DIR): it
   * signs each paid report's proof, the 402's offers and the settlements' receipts (x402
   * offer-receipt); default a key made in memory for this gate.
   */
  signingKey?: OfferReceiptKey;
  /** Payment outcomes, facilitator latency and payer limits, for metrics; default none. */
  events?: PaymentEvents;
  log?: (line: string) => void;
}

/** The gate's options from the validated environment; devnet supplies payTo and facilitator. */
export function paymentGateOptionsFromConfig(
  config: PaymentConfig,
  devnet?: { payTo: `0x${string}`; facilitatorUrl: string; network: Network },
): Pick<
  PaymentGateOptions,
  | "payTo"
  | "networks"
  | "priceUsdc"
  | "facilitatorUrl"
  | "facilitatorHeaders"
  | "facilitatorAuth"
  | "devnet"
> {
  if (devnet) {
    return {
      payTo: devnet.payTo,
      networks: [devnet.network],
      devnet: true,
      priceUsdc: config.priceUsdc,
      facilitatorUrl: devnet.facilitatorUrl,
    };
  }
  if (!config.payTo || !config.facilitatorUrl) {
    throw new Error("payment configuration needs X402_PAY_TO and X402_FACILITATOR_URL");
  }
  return {
    payTo: config.payTo,
    networks: config.networks.map((name) => NETWORK_IDS[name]),
    priceUsdc: config.priceUsdc,
    facilitatorUrl: config.facilitatorUrl,
    ...(config.facilitatorHeaders && { facilitatorHeaders: config.facilitatorHeaders }),
    ...(config.cdpApiKey && {
      facilitatorAuth: createCdpAuthHeaders({
        ...config.cdpApiKey,
        facilitatorUrl: config.facilitatorUrl,
      }),
    }),
  };
}

/**
 * How long paid records live and where the chain is read (docs/payment.md, "Paying once"); in
 * devnet mode its anvil is the chain.
 */
export function paidRecordOptionsFromConfig(
  config: PaymentConfig,
  devnet?: { network: Network; rpcUrl: string },
): Pick<PaymentGateOptions, "paidRecordTtlMs" | "snapshotRetentionMs" | "rpcUrls"> {
  const rpcUrls: Record<string, string> = devnet ? { [devnet.network]: devnet.rpcUrl } : {};
  if (!devnet) {
    for (const [name, url] of Object.entries(config.rpcUrls)) {
      rpcUrls[NETWORK_IDS[name as keyof typeof NETWORK_IDS]] = url;
    }
  }
  return {
    paidRecordTtlMs: config.paidRecordTtlSeconds * 1000,
    snapshotRetentionMs: config.snapshotRetentionDays * DAY_MS,
    rpcUrls,
  };
}

/** The facilitator client the options describe, its calls told to `events`. */
export function facilitatorClientFor(
  options: PaymentGateOptions,
  events: PaymentEvents,
): ResilientFacilitatorClient {
  return new ResilientFacilitatorClient({
    onCall: (operation, result, seconds) => events.facilitatorCall(operation, result, seconds),
    url: options.facilitatorUrl,
    timeoutMs: options.facilitatorTimeoutMs ?? DEFAULT_FACILITATOR_TIMEOUT_MS,
    settleTimeoutMs: options.facilitatorSettleTimeoutMs ?? DEFAULT_SETTLE_TIMEOUT_MS,
    ...(options.facilitatorHeaders && { headers: options.facilitatorHeaders }),
    ...(options.facilitatorAuth && { createAuthHeaders: options.facilitatorAuth }),
  });
}

/**
 * The payer budget the options describe, and the limit a 429 names: a given budget's own limit
 * is named only when `refusedPerPayerPerMinute` says it too.
 */
export function payerBudgetFor(options: PaymentGateOptions): {
  budget: PayerBudget;
  perMinute: number | undefined;
} {
  const perMinute = options.refusedPerPayerPerMinute ?? DEFAULT_REFUSED_PER_PAYER_PER_MINUTE;
  const budget = options.payerBudget ?? memoryPayerBudget(perMinute);
  const known = !options.payerBudget || options.refusedPerPayerPerMinute !== undefined;
  return { budget, perMinute: known ? perMinute : undefined };
}
