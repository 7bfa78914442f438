import type { JWK } from "jose";
import type { SnapshotStore } from "../store/index.js";
import type { Answer } from "./answers/answer.js";
import { RpcChainReader } from "./ledger/chain-check.js";
import { PreparedChallenges } from "./x402/challenge.js";
import { snapshotOutputSchemaV1 } from "./x402/bazaar-discovery.js";
import { FacilitatorReadiness } from "./facilitator/readiness.js";
import { createFormPayment, type FormPayment } from "./doors/page-form.js";
import { requiredKinds } from "./facilitator/support.js";
import { GateAnswers } from "./answers/gate-answers.js";
import {
  DEFAULT_PAID_RECORD_TTL_MS,
  DEFAULT_PROOF_RELEASES,
  DEFAULT_SNAPSHOT_RETENTION_MS,
  facilitatorClientFor,
  payerBudgetFor,
  type PaymentGateOptions,
} from "./gate-options.js";
import { DEFAULT_LEASE_MS, PaymentLedger, type LedgerParts } from "./ledger/ledger.js";
import { createMcpPayment, type McpPayment } from "./doors/mcp-tool.js";
import { ResourceOffers } from "./x402/resource-offers.js";
import { PaidCalls } from "./paid-call.js";
import { createPaidRoute, type PaidRoute } from "./doors/http-route.js";
import { Reconciler } from "./ledger/reconciler.js";
import type { ReportSigner } from "./ledger/settled-report.js";
import { createSdkServers } from "./x402/resource-server.js";
import { NO_PAYMENT_EVENTS } from "./telemetry.js";
import { newPrivateJwk, signerFromJwk, withProof, type ServiceSigner } from "./signing/index.js";
import { OfferReceipts } from "./x402/offer-receipt.js";
import { keepingSnapshots } from "./snapshots/kept-snapshot.js";
import { describeError } from "./describe-error.js";
import { SnapshotAgain } from "./snapshots/snapshot-again.js";

export interface PaymentGate {
  /** x402 over HTTP for POST /v1/snapshot, v1 and v2 (doors/http-route.ts). */
  route: PaidRoute;
  /**
   * The 402 challenge already prepared for this resource URL (the request URL, as the Hono
   * route sees it), when the request would get exactly that answer (PreparedChallenges);
   * otherwise undefined and the request must go through `route`. For serving the unpaid
   * challenge without the framework (src/http/challenge-fast-path.ts).
   */
  unpaidChallenge(
    resourceUrl: string,
    header: (name: string) => string | undefined,
  ): Answer | undefined;
  /**
   * Fetches the facilitator's /supported once (cached): false while it is unreachable (one
   * warning line); rejects with a FacilitatorMismatchError (a ConfigError naming the variables)
   * when it lacks a configured network, scheme or protocol version.
   */
  warmUp(): Promise<boolean>;
  /**
   * Whether the facilitator's /supported is known (fetched and checked), trying again when the
   * last failure is older than `supportedRetryMs`: GET /ready's `facilitator` check.
   */
  facilitatorReady(): Promise<boolean>;
  /**
   * Resolves once no paid call is under way on this instance: on SIGTERM, after the listener
   * stopped accepting, so no settlement is cut off by the exit. Each call is bounded by its own
   * facilitator time-outs (the settle one the longest).
   */
  drain(): Promise<void>;
  /** Paid calls under way on this instance (what `drain` waits for). */
  paidCallsUnderWay(): number;
  /** Stops the background reconciler (the store is the caller's to close). */
  close(): void;
  /** x402 over MCP for POST /mcp's paid tool, on the same ledger (doors/mcp-tool.ts). */
  mcp: McpPayment;
  /** The page's devnet form, paying from the devnet account (doors/page-form.ts). */
  form: FormPayment;
  /** The key that signs the paid reports' proofs. */
  signer: Promise<ServiceSigner>;
  /**
   * What GET /.well-known/jwks.json lists: the signer's key first, then every key that signed a
   * report still kept (an earlier SIGNING_KEY, after a rotation), once each.
   */
  signingKeys(): Promise<JWK[]>;
  /** GET /v1/snapshots/{snapshot_id}: a paid report again, for its payer (snapshots/). */
  snapshots: SnapshotAgain;
}

/** Default pace of the reconciler: about one lease, so an orphaned settlement waits little. */
const DEFAULT_RECONCILE_INTERVAL_MS = 15_000;

/**
 * x402 payment for the paid call: the core (paid-call.ts) over the payment ledger
 * (ledger/ledger.ts), the state machine that owns each step over its durable record, with a door
 * per transport — POST /v1/snapshot (doors/http-route.ts) and MCP (doors/mcp-tool.ts).
 *
 * Why not @x402/hono's middleware: it runs verify → handler → settle as one opaque step, so
 * nothing can be written between them, a lost or `settlement_pending` settle answer becomes a
 * refusal, and its settlePayment retries a pending settlement on its own. Here the SDK does what
 * it is good at — building the 402 challenge (x402HTTPResourceServer), matching a proof to an
 * offer (findMatchingRequirements) and verifying (verifyPayment) — and /settle is called through
 * our facilitator client directly, so the ledger reads every answer itself.
 *
 * Beside it: a proof nobody can read is a 402 saying why; the facilitator down is a 503 +
 * Retry-After, and a dead one costs no /supported round trip per request; the unpaid challenge
 * is built once per resource URL (x402/challenge.ts); x402 v1 is served beside v2 (x402/v1.ts).
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const log = options.log ?? ((line: string) => console.error(line));
  const { budget, perMinute } = payerBudgetFor(options);
  const events = options.events ?? NO_PAYMENT_EVENTS;
  const answers = new GateAnswers(String(options.retryAfterSeconds ?? 5), perMinute, events);
  const facilitator = facilitatorClientFor(options, events);
  const signing = signingParts(options, log);
  const { offerReceipts, signer, retentionMs } = signing;
  const { resourceServer, httpServer } = createSdkServers(options, facilitator, offerReceipts);
  const readiness = new FacilitatorReadiness(
    httpServer,
    facilitator,
    requiredKinds(options.networks),
    options.supportedRetryMs ?? 1000,
    log,
  );
  const { ledger, reconciler } = ledgerParts(options, {
    verify: (payload, requirements) => resourceServer.verifyPayment(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    budget,
    events,
    sign: signing.sign,
    log,
  });
  const challenges = new PreparedChallenges();
  const calls = new PaidCalls({ readiness, resourceServer, ledger, events, offerReceipts, log });
  const offers = new ResourceOffers(resourceServer, options, log);
  const v1OutputSchema = snapshotOutputSchemaV1();
  return {
    route: createPaidRoute({ calls, challenges, httpServer, answers, v1OutputSchema, log }),
    unpaidChallenge: (resourceUrl, header) => challenges.get(resourceUrl, header),
    warmUp: () => readiness.warmUp(),
    facilitatorReady: () => readiness.check(),
    drain: () => ledger.drain(),
    paidCallsUnderWay: () => ledger.underWay,
    close: () => reconciler.stop(),
    form: createFormPayment(calls, offers, answers),
    signer,
    signingKeys: () => listedKeys(signer, options.store, log),
    snapshots: new SnapshotAgain({
      store: options.store,
      retentionMs,
      publicUrl: options.publicUrl,
      networks: options.networks,
      log,
    }),
    mcp: createMcpPayment({ offers, readiness, calls, answers, events, v1OutputSchema, log }),
  };
}

/**
 * The service's one key and what signs with it: the reports' proofs (kept for their payers as
 * they are served, snapshots/kept-snapshot.ts), the 402's offers and the receipts.
 */
function signingParts(options: PaymentGateOptions, log: (line: string) => void) {
  // Without a key given (tests, benchmarks): a key of this gate's own, in memory.
  const key = Promise.resolve(
    options.signingKey ?? newPrivateJwk().then((privateJwk) => ({ privateJwk })),
  );
  const signer = key.then(({ privateJwk }) => signerFromJwk(privateJwk));
  const retentionMs = options.snapshotRetentionMs ?? DEFAULT_SNAPSHOT_RETENTION_MS;
  const signingKey = signer.then((current) => ({ ...current.publicJwks()[0], kid: current.kid }));
  const sign: ReportSigner = keepingSnapshots(
    async (report, settled) => withProof(report, settled, await signer),
    { store: options.store, retentionMs, signingKey, log },
  );
  return { offerReceipts: new OfferReceipts(key, options.publicUrl), signer, sign, retentionMs };
}

/**
 * The signer's keys, then those the store remembers for the reports it keeps, once per kid. A
 * store that fails is logged and the key in use is listed alone: new reports still verify.
 */
async function listedKeys(
  signer: Promise<ServiceSigner>,
  store: SnapshotStore,
  log: (line: string) => void,
): Promise<JWK[]> {
  const [current, remembered] = await Promise.all([
    signer,
    store.signingKeys().catch((error: unknown) => {
      log(`signing keys not read: ${describeError(error)}`);
      return [];
    }),
  ]);
  const listed = current.publicJwks();
  const kids = new Set(listed.map((key) => key.kid));
  for (const key of remembered) {
    if (!kids.has(key.kid)) listed.push({ ...key });
    kids.add(key.kid);
  }
  return listed;
}

/** The payment ledger over the record store, and the reconciler beside it (started) on its chain. */
function ledgerParts(
  options: PaymentGateOptions,
  parts: Pick<LedgerParts, "verify" | "settle" | "budget" | "events" | "sign" | "log">,
) {
  const recordTtlMs = options.paidRecordTtlMs ?? DEFAULT_PAID_RECORD_TTL_MS;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const chain = new RpcChainReader(options.rpcUrls ?? {});
  const ledger = new PaymentLedger({
    ...parts,
    store: options.store,
    chain,
    maxReleases: options.proofReleases ?? DEFAULT_PROOF_RELEASES,
    recordTtlMs,
    leaseMs,
    ...(options.onPaidRequest && { onPaidRequest: options.onPaidRequest }),
  });
  const reconciler = new Reconciler({
    store: options.store,
    chain,
    leaseMs,
    recordTtlMs,
    newOwner: () => ledger.newOwner("reconciler"),
    ...(parts.sign && { sign: parts.sign }),
    log: parts.log,
  });
  const interval = options.reconcileIntervalMs ?? DEFAULT_RECONCILE_INTERVAL_MS;
  if (interval > 0) reconciler.start(interval);
  return { ledger, reconciler };
}
