/**
 * The page's scan form (docs/http-api.md "The scan form"), a door of the paid call: the form's
 * URL is checked as the paid route checks it (never charged when it fails), then POST
 * /demo/challenge shows the paid route's offers without paying, and POST /demo/pay-and-scan, in
 * devnet mode only, signs a proof for them from the funded devnet account with the official
 * x402 client and hands it to the payment's form door (the same core, ledger and chain).
 */
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { x402Client } from "@x402/fetch";
import type { Context, Env, Hono, MiddlewareHandler } from "hono";
import { privateKeyToAccount } from "viem/accounts";
import {
  NO_STORE,
  foreignOrigin,
  memoryPayerBudget,
  retryAfterSeconds,
  toResponse,
  verifyReportProof,
  whenSent,
  type Answer,
  type FormOutcome,
  type FormPayment,
  type ServiceSigner,
} from "../../payment/index.js";
import {
  SnapshotError,
  parseSnapshotTarget,
  type SnapshotResult,
  type SnapshotTarget,
  type UrlPolicy,
} from "../../snapshot/index.js";
import { PATHS } from "../../routes.js";
import type { SnapshotAdmission } from "../guards/admission.js";
import { readBodyText } from "../request-body.js";
import { ownOrigin } from "../guards/cors.js";
import { PAGE_SECURITY_HEADERS, renderPage, type PageFacts, type ScanOutcome } from "./home.js";
import type { SnapshotWork } from "../snapshot-work.js";

/** The form's body: one URL, urlencoded. */
const MAX_FORM_BYTES = 4 * 1024;

export interface ScanRoutes {
  /** The page's facts for this request (its base URL). */
  facts(c: Context): PageFacts;
  /** The paid route's URL rules: the form's URL is checked by them before anything else. */
  urlPolicy: UrlPolicy;
  /** The snapshot every door runs, and the slots it takes. */
  work: SnapshotWork;
  admission: SnapshotAdmission;
  /** Where a record the ledger could not write is reported. */
  log: (message: string, error?: unknown) => void;
  /** The payment's form door; without it the form shows no offers. */
  payment?: FormPayment;
  /** Devnet mode: the funded account the service pays from. */
  devnetPayer?: { privateKey: `0x${string}` };
  /** The key signing the paid reports: a paid report's proof is checked against it. */
  signer?: Promise<ServiceSigner>;
  /** Origins the form may be posted from besides the request's own (PUBLIC_URL's). */
  publicUrl?: string;
  /**
   * The address a request is counted under (src/http/guards/client-ip.ts), for the form's budget.
   */
  clientOf(c: Context): string;
  /** Failing scans the paying form runs per client and minute; default formScansPerClient(60). */
  failingScansPerClient?: number;
}

/**
 * One client's share of the devnet payer's unpaid budget (SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE):
 * the paying form pays from one account for every visitor, and that account may cause only so
 * many unpaid snapshots a minute; one client's failing scans must not spend them all and lock
 * the form for everyone (docs/security.md, "Devnet and local mode").
 */
export function formScansPerClient(refusedPerPayerPerMinute: number): number {
  return Math.max(1, Math.floor(refusedPerPayerPerMinute / CLIENTS_SHARING_THE_PAYER));
}

/** The paying form's budget is this many clients' worth of the payer's. */
const CLIENTS_SHARING_THE_PAYER = 6;

/** The payer budget's default (SNAPSHOT_REFUSED_PER_PAYER_PER_MINUTE). */
const DEFAULT_REFUSED_PER_PAYER_PER_MINUTE = 60;

/** Mounts the form's routes; POST /demo/pay-and-scan only when a devnet payer is given. */
export function addScanRoutes<E extends Env>(app: Hono<E>, routes: ScanRoutes): void {
  const publicOrigin = routes.publicUrl !== undefined ? new URL(routes.publicUrl).origin : "";
  // A form post from another site is refused: it could spend the client's budget.
  const sameOrigin = formOriginCheck(
    (origin, requestUrl) =>
      origin !== undefined &&
      origin !== "" &&
      (origin === publicOrigin || origin === new URL(requestUrl).origin),
  );
  app.post(PATHS.challenge, sameOrigin, async (c) => {
    const form = await readForm(c, routes);
    if (form.kind === "refused") return page(form.facts, form.outcome, form.outcome.status);
    const { facts, url } = form;
    const offered = await routes.payment?.offers(`${facts.serviceUrl}${PATHS.snapshot}`);
    if (!offered) return page(facts, paymentDown(url), 503);
    const offers = offered.accepts.map((a) => ({
      network: a.network,
      amount: a.amount,
      asset: a.asset,
      payTo: a.payTo,
    }));
    return page(facts, { kind: "challenge", url, offers }, 200);
  });
  if (routes.devnetPayer) addPayAndScan(app, routes, routes.devnetPayer);
}

/**
 * POST /demo/pay-and-scan: only a page of this service, at a host the Host rule allows, spends
 * the devnet's money — not a page on a name its attacker rebinds to this machine, whose origin
 * is the request's own.
 */
function addPayAndScan<E extends Env>(
  app: Hono<E>,
  routes: ScanRoutes,
  payer: { privateKey: `0x${string}` },
): void {
  const { payment } = routes;
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(payer.privateKey) });
  const ownPage = formOriginCheck(ownOrigin(routes.publicUrl));
  const budget = memoryPayerBudget(
    routes.failingScansPerClient ?? formScansPerClient(DEFAULT_REFUSED_PER_PAYER_PER_MINUTE),
  );
  app.post(PATHS.payAndScan, ownPage, async (c) => {
    const form = await readForm(c, routes);
    if (form.kind === "refused") return page(form.facts, form.outcome, form.outcome.status);
    const { facts, url, target, body } = form;
    const visitor = routes.clientOf(c);
    const reserved = await budget.reserve(visitor);
    if (!reserved.ok) {
      const answer = page(facts, overBudget(url, reserved.retryAfterMs), 429);
      answer.headers.set("retry-after", String(retryAfterSeconds(reserved.retryAfterMs)));
      return answer;
    }
    // Without payment the service is free, the form too (as POST /v1/snapshot then).
    if (!payment) {
      const scanned = await unpaidScan(c, routes, form);
      return page(facts, scanned, scanned.kind === "refused" ? scanned.status : 200);
    }
    const resourceUrl = `${facts.serviceUrl}${PATHS.snapshot}`;
    const offered = await payment.offers(resourceUrl);
    if (!offered) {
      await budget.refund(visitor);
      return page(facts, paymentDown(url), 503);
    }
    const outcome = await payment.call({
      resourceUrl,
      target,
      body,
      payload: await client.createPaymentPayload(offered),
      run: (signal) => routes.work(target, signal),
      signal: c.req.raw.signal,
      admission: routes.admission,
    });
    // Counted only when the payer's budget was: a proof was sent and nothing was paid.
    if (outcome.kind !== "paid") {
      return page(facts, refused(url, outcome.answer), outcome.answer.status);
    }
    await budget.refund(visitor);
    return paidPage(c, routes, facts, url, outcome);
  });
}

/**
 * The report paid for, with its receipt, and its verified badge when its proof checks out
 * against the service's own keys; the ledger is told once the page was sent.
 */
async function paidPage(
  c: Context,
  routes: ScanRoutes,
  facts: PageFacts,
  url: string,
  outcome: Extract<FormOutcome, { kind: "paid" }>,
): Promise<Response> {
  whenSent(c, (delivered) => {
    outcome
      .finish(delivered)
      .catch((error: unknown) => routes.log("payment record store failed", error));
  });
  const report = JSON.parse(outcome.report.body) as SnapshotResult;
  const { transaction, payer } = outcome.settlement;
  const receipt = { transaction, ...(payer !== undefined && { payer }) };
  const verified = await verifiedProof(report, routes.signer);
  return page(facts, { kind: "report", url, report, receipt, ...(verified && { verified }) }, 200);
}

/** What the badge names, when the report's proof verifies against the service's public keys. */
async function verifiedProof(
  report: SnapshotResult,
  signer: Promise<ServiceSigner> | undefined,
): Promise<{ snapshotId: string; kid: string } | undefined> {
  if (!signer) return undefined;
  const check = await verifyReportProof(report, { keys: (await signer).publicJwks() });
  return check.ok ? { snapshotId: check.proof.snapshot_id, kid: check.proof.kid } : undefined;
}

/** The scan of a service without payment: as its free POST /v1/snapshot, under the same slots. */
async function unpaidScan(
  c: Context,
  routes: ScanRoutes,
  { url, target }: { url: string; target: SnapshotTarget },
): Promise<ScanOutcome> {
  const busy = routes.admission.enter();
  if (busy) return refused(url, busy);
  try {
    const answer = await routes.work(target, c.req.raw.signal);
    if (answer.status !== 200) return refused(url, answer);
    return { kind: "report", url, report: JSON.parse(answer.body) as SnapshotResult };
  } finally {
    routes.admission.leave();
  }
}

type FormRead =
  | { kind: "refused"; facts: PageFacts; outcome: ScanOutcome & { status: number } }
  | { kind: "read"; facts: PageFacts; url: string; target: SnapshotTarget; body: Uint8Array };

/** The form's URL, checked by the paid route's rules: a URL they refuse is never charged. */
async function readForm(c: Context, routes: ScanRoutes): Promise<FormRead> {
  const facts = routes.facts(c);
  const read = await readBodyText(c, MAX_FORM_BYTES);
  const url = read.ok ? new URLSearchParams(read.text).get("url")?.trim() : undefined;
  if (!read.ok || !url) return { kind: "refused", facts, outcome: missingUrl() };
  try {
    const target = parseSnapshotTarget(url, routes.urlPolicy);
    return { kind: "read", facts, url, target, body: read.bytes };
  } catch (err) {
    if (!(err instanceof SnapshotError)) throw err;
    const outcome = {
      kind: "refused" as const,
      url,
      status: 400,
      message: err.message,
      errorType: err.errorType,
    };
    return { kind: "refused", facts, outcome };
  }
}

/** The payment's offers cannot be built now (the facilitator unreachable). */
function paymentDown(url: string): ScanOutcome {
  return {
    kind: "refused",
    url,
    status: 503,
    message: "Payment is unavailable right now (the facilitator cannot be reached); retry soon.",
    errorType: "facilitator_unavailable",
  };
}

/**
 * The form is posted only from the service's own page: its `Origin` must be there (browsers send
 * it with every form post) and `allowed`. Any content type: the body is read as a form anyway.
 */
function formOriginCheck(
  allowed: (origin: string | undefined, requestUrl: string) => boolean,
): MiddlewareHandler {
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (allowed(origin, c.req.url)) return next();
    return toResponse(foreignOrigin(origin));
  };
}

/** The visitor's failing scans have spent its share of the devnet payer's unpaid budget. */
function overBudget(url: string, retryAfterMs: number): ScanOutcome {
  const seconds = retryAfterSeconds(retryAfterMs);
  return {
    kind: "refused",
    url,
    status: 429,
    message:
      `This address has had its share of failing scans paid by the form this minute; retry in ${seconds} s. ` +
      "Others can still use the form.",
    errorType: "rate_limited",
  };
}

function missingUrl(): ScanOutcome & { status: number } {
  return {
    kind: "refused",
    url: "",
    status: 400,
    message: "The form needs a URL (at most 2048 characters).",
    errorType: "invalid_url",
  };
}

/** An answer other than the report, in the words of its JSON body. */
function refused(url: string, answer: Answer): ScanOutcome {
  let body: { error?: unknown; error_type?: unknown; code?: unknown } = {};
  try {
    body = JSON.parse(answer.body) as typeof body;
  } catch {
    // Not JSON: the status says it.
  }
  const errorType = typeof body.error_type === "string" ? body.error_type : body.code;
  return {
    kind: "refused",
    url,
    status: answer.status,
    message: typeof body.error === "string" ? body.error : `answer ${answer.status}`,
    ...(typeof errorType === "string" && { errorType }),
  };
}

function page(facts: PageFacts, outcome: ScanOutcome, status: number): Response {
  return new Response(renderPage(facts, outcome), {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      // The outcome of one visitor's scan is theirs: never kept.
      "cache-control": NO_STORE,
      ...PAGE_SECURITY_HEADERS,
    },
  });
}
