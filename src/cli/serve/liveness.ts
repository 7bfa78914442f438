/**
 * What `serve`'s /ready re-checks in the background (docs/operations.md, "Readiness and
 * draining"): that the facilitator, and in devnet mode the chain it settles on, are still
 * there. The facilitator's /supported is fetched and checked once (the payment gate keeps it),
 * so without these a facilitator or devnet that went away later left /ready at 200.
 */
import { PeriodicCheck } from "../../http/index.js";
import type { PaymentSetup } from "./payment.js";

/** How often each is asked, and how long it has to answer: a short check, not a payment. */
const EVERY_MS = 2_000;
const TIMEOUT_MS = 1_000;

/**
 * The facilitator answers HTTP at all: any answer below 500 to GET /supported (a hosted one may
 * want its auth header and say 401; it is there). Refused, reset, silent or 5xx: gone.
 */
async function facilitatorAnswers(url: string, signal: AbortSignal): Promise<boolean> {
  const response = await fetch(`${url.replace(/\/+$/, "")}/supported`, { signal });
  await response.body?.cancel();
  return response.status < 500;
}

/** The chain answers a JSON-RPC `eth_chainId` with a result. */
async function chainAnswers(rpcUrl: string, signal: AbortSignal): Promise<boolean> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal,
  });
  if (!response.ok) {
    await response.body?.cancel();
    return false;
  }
  const body = (await response.json()) as { result?: unknown };
  return typeof body.result === "string";
}

/** The background checks of one payment setup; `stop` them on shutdown. */
export function livenessChecks(payment: PaymentSetup): {
  facilitator: PeriodicCheck;
  devnet: PeriodicCheck | undefined;
} {
  const { facilitatorUrl, devnetRpcUrl } = payment;
  return {
    facilitator: new PeriodicCheck(
      "facilitator",
      (signal) => facilitatorAnswers(facilitatorUrl, signal),
      EVERY_MS,
      TIMEOUT_MS,
    ),
    devnet:
      devnetRpcUrl === undefined
        ? undefined
        : new PeriodicCheck(
            "devnet",
            (signal) => chainAnswers(devnetRpcUrl, signal),
            EVERY_MS,
            TIMEOUT_MS,
          ),
  };
}
