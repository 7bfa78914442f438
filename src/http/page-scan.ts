/**
 * The page's scan form (docs/http-api.md "The scan form"). Each route asks the service's own
 * paid route in-process, so the whole path runs (input check, admission, payment, snapshot):
 * POST /demo/challenge without paying, to show the 402 challenge; POST /demo/pay-and-scan, in
 * devnet mode only, paying from the funded devnet account through the official x402 client.
 */
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import type { Context, Env, Hono, MiddlewareHandler } from "hono";
import { privateKeyToAccount } from "viem/accounts";
import {
  NO_STORE,
  carriesProof,
  foreignOrigin,
  memoryPayerBudget,
  retryAfterSeconds,
  toResponse,
} from "../payment/index.js";
import type { SnapshotResult } from "../snapshot/index.js";
import { PATHS } from "../routes.js";
import { readBodyText } from "./body.js";
import { ownOrigin } from "./cors.js";
import { PAGE_SECURITY_HEADERS, renderPage, type PageFacts, type ScanOutcome } from "./page.js";

/** The form's body: one URL, urlencoded. */
const MAX_FORM_BYTES = 4 * 1024;

/**
 * Marks a request the service makes of itself: the visitor's form post was already counted
 * against its budget of free answers, so the inner calls are not counted again. A symbol, so no
 * request from outside can carry it.
 */
const SELF_CALL = Symbol("secsnap self call");

/** Whether this request is one the service made of itself (the rate limit lets it pass). */
export function isSelfCall(c: Context): boolean {
  return (c.env as Record<symbol, unknown> | undefined)?.[SELF_CALL] === true;
}

export interface ScanRoutes {
  /** The page's facts for this request (its base URL). */
  facts(c: Context): PageFacts;
  /** The app itself, called in-process. */
  app: { fetch(request: Request, env: unknown): Response | Promise<Response> };
  /** Devnet mode: the funded account the service pays from. */
  devnetPayer?: { privateKey: `0x${string}` };
  /** Origins the form may be posted from besides the request's own (PUBLIC_URL's). */
  publicUrl?: string;
  /** The address a request is counted under (client-ip.ts), for the form's budget. */
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
  const selfFetch =
    (outer: Context): typeof fetch =>
    (input, init) =>
      // The visitor leaving ends the scan: nobody waits for it, and nobody pays for it.
      Promise.resolve(
        routes.app.fetch(new Request(input, { ...init, signal: outer.req.raw.signal }), {
          [SELF_CALL]: true,
        }),
      );

  app.post(PATHS.challenge, sameOrigin, async (c) => {
    const url = await formUrl(c);
    const facts = routes.facts(c);
    if (url === undefined) return page(facts, missingUrl(), 400);
    const res = await selfFetch(c)(`${facts.serviceUrl}${PATHS.snapshot}`, snapshotRequest(url));
    const header = res.headers.get("payment-required");
    if (res.status === 402 && header) {
      const offers = decodePaymentRequiredHeader(header).accepts.map((a) => ({
        network: a.network,
        amount: a.amount,
        asset: a.asset,
        payTo: a.payTo,
      }));
      return page(facts, { kind: "challenge", url, offers }, 200);
    }
    return page(facts, await refused(url, res), res.status);
  });

  const payer = routes.devnetPayer;
  if (!payer) return;
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(payer.privateKey) });
  // Only a page of this service, at a host the Host rule allows, spends the devnet's money: not
  // a page on a name its attacker rebinds to this machine, whose origin is the request's own.
  const ownPage = formOriginCheck(ownOrigin(routes.publicUrl));
  const budget = memoryPayerBudget(
    routes.failingScansPerClient ?? formScansPerClient(DEFAULT_REFUSED_PER_PAYER_PER_MINUTE),
  );
  app.post(PATHS.payAndScan, ownPage, async (c) => {
    const url = await formUrl(c);
    const facts = routes.facts(c);
    if (url === undefined) return page(facts, missingUrl(), 400);
    const visitor = routes.clientOf(c);
    const reserved = await budget.reserve(visitor);
    if (!reserved.ok) {
      const answer = page(facts, overBudget(url, reserved.retryAfterMs), 429);
      answer.headers.set("retry-after", String(retryAfterSeconds(reserved.retryAfterMs)));
      return answer;
    }
    let proofSent = false;
    const pay = wrapFetchWithPayment((input, init) => {
      const request = new Request(input, init);
      proofSent ||= carriesProof((name) => request.headers.get(name) ?? undefined);
      return selfFetch(c)(request);
    }, client);
    const res = await pay(`${facts.serviceUrl}${PATHS.snapshot}`, snapshotRequest(url));
    // Counted only when the payer's budget was: a proof was sent and nothing was paid.
    if (!proofSent || res.status === 200) await budget.refund(visitor);
    if (res.status !== 200) return page(facts, await refused(url, res), res.status);
    const report = (await res.json()) as SnapshotResult;
    const receipt = res.headers.get("payment-response");
    const settled = receipt ? decodePaymentResponseHeader(receipt) : undefined;
    return page(
      facts,
      {
        kind: "report",
        url,
        report,
        ...(settled && {
          receipt: {
            transaction: settled.transaction,
            ...(settled.payer !== undefined && { payer: settled.payer }),
          },
        }),
      },
      200,
    );
  });
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

function snapshotRequest(url: string): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url }),
  };
}

/** The form's `url` field, trimmed; undefined when absent, empty or the body unreadable. */
async function formUrl(c: Context): Promise<string | undefined> {
  const read = await readBodyText(c, MAX_FORM_BYTES);
  if (!read.ok) return undefined;
  const url = new URLSearchParams(read.text).get("url")?.trim();
  return url ? url : undefined;
}

function missingUrl(): ScanOutcome {
  return {
    kind: "refused",
    url: "",
    status: 400,
    message: "The form needs a URL (at most 2048 characters).",
    errorType: "invalid_url",
  };
}

/** An answer other than the one hoped for, in the words of its JSON body. */
async function refused(url: string, res: Response): Promise<ScanOutcome> {
  const body = (await res.json().catch(() => ({}))) as { error?: unknown; error_type?: unknown };
  return {
    kind: "refused",
    url,
    status: res.status,
    message: typeof body.error === "string" ? body.error : `answer ${res.status}`,
    ...(typeof body.error_type === "string" && { errorType: body.error_type }),
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
