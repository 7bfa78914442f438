import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { ServerType } from "@hono/node-server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { Hono } from "hono";
import type { Context, Handler } from "hono";
import { bearerAuth } from "hono/bearer-auth";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { createPublicClient, http } from "viem";
import type { Address } from "viem";
import { SERVICE_VERSION } from "../version.js";
import { createX402Facilitator } from "./facilitator.js";
import type { FacilitatorOptions, X402FacilitatorHandle } from "./facilitator.js";
import { parseFacilitatorRequest } from "./requests.js";

/**
 * The facilitator's HTTP face (x402 v2 facilitator API, serving v1 payments too):
 *   GET /supported, POST /verify, POST /settle, GET /health.
 * Request bodies are `{ x402Version, paymentPayload, paymentRequirements }`, as sent by the
 * SDK's HTTPFacilitatorClient. Answers:
 *   200 VerifyResponse / SettleResponse for every payment that was evaluated (valid or not);
 *   400 with the same shape (isValid/success false, a reason) for malformed or unsupported
 *       requests; 401 missing/wrong bearer token; 413 body too large; 404 unknown;
 *   500 `{ error }` when evaluation itself failed (e.g. the RPC is unreachable).
 * A settle of an authorization already being settled gets that settlement's answer.
 */

/** Largest accepted request body. A real verify/settle body is about 2 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;

export interface RunningFacilitator {
  /** Base URL, e.g. http://127.0.0.1:4022 (no trailing slash). */
  url: string;
  host: string;
  port: number;
  /** The gas payer's address. */
  address: Address;
  chainId: number;
  close(): Promise<void>;
}

type Log = (line: string) => void;

function errorMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  // viem messages carry multi-line details (request bodies, docs links): keep the headline.
  return (message.split("\n")[0] ?? message).slice(0, 300);
}

/** Asks the RPC for its chain id, bounded, so a wrong or dead RPC fails the start clearly. */
export async function fetchRpcChainId(rpcUrl: string, timeoutMs = 5_000): Promise<number> {
  const client = createPublicClient({
    transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 0 }),
  });
  return client.getChainId();
}

/** Settling on a chain other than the networks' would fail every payment: refuse to start. */
async function checkRpcChain(rpcUrl: string, chainId: number): Promise<void> {
  let rpcChainId: number;
  try {
    rpcChainId = await fetchRpcChainId(rpcUrl);
  } catch (error) {
    throw new Error(`facilitator: RPC ${rpcUrl} did not answer: ${errorMessage(error)}`);
  }
  if (rpcChainId !== chainId) {
    throw new Error(
      `facilitator: RPC ${rpcUrl} is chain ${rpcChainId}, but the networks are eip155:${chainId}`,
    );
  }
}

/** Every answer is JSON: refusals by middleware keep theirs, anything unexpected is a 500. */
function answerErrorsAsJson(app: Hono, log: Log): void {
  app.onError((error, c) => {
    if (error instanceof HTTPException) return error.getResponse();
    log(`facilitator: unexpected error: ${errorMessage(error)}`);
    return c.json({ error: "internal error" }, 500);
  });
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404));
}

function limitBodies(app: Hono): void {
  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => c.json({ error: `request body is larger than ${MAX_BODY_BYTES} bytes` }, 413),
    }),
  );
}

/** /verify and /settle spend the gas wallet's time and money; /supported and /health stay open. */
function requireBearerToken(app: Hono, token: string): void {
  const auth = bearerAuth({
    token,
    noAuthenticationHeader: { message: { error: "missing bearer token" } },
    invalidToken: { message: { error: "invalid bearer token" } },
    invalidAuthenticationHeader: { message: { error: "invalid Authorization header" } },
  });
  app.use("/verify", auth);
  app.use("/settle", auth);
}

async function readJson(c: Context): Promise<{ ok: true; body: unknown } | { ok: false }> {
  try {
    return { ok: true, body: await c.req.json() };
  } catch {
    return { ok: false };
  }
}

function verifyHandler(handle: X402FacilitatorHandle, log: Log): Handler {
  return async (c) => {
    const body = await readJson(c);
    if (!body.ok) {
      return c.json(
        { isValid: false, invalidReason: "invalid_payload", invalidMessage: "body is not JSON" },
        400,
      );
    }
    const parsed = parseFacilitatorRequest(body.body, handle.networks, handle.networksV1);
    if (!parsed.ok) {
      return c.json(
        { isValid: false, invalidReason: parsed.reason, invalidMessage: parsed.message },
        400,
      );
    }
    const { paymentPayload, paymentRequirements } = parsed.request;
    try {
      return c.json(await handle.facilitator.verify(paymentPayload, paymentRequirements));
    } catch (error) {
      log(`facilitator: verify failed: ${errorMessage(error)}`);
      return c.json({ error: `verification could not be completed: ${errorMessage(error)}` }, 500);
    }
  };
}

/** A /settle answer: the SettleResponse (200), or why none could be had (500). */
interface SettleAnswer {
  status: 200 | 500;
  body: object;
}

/** A settlement under way: what it was asked (payload and requirements) and its answer to come. */
interface Settling {
  request: string;
  answer: Promise<SettleAnswer>;
}

async function settleOnce(
  handle: X402FacilitatorHandle,
  request: { paymentPayload: PaymentPayload; paymentRequirements: PaymentRequirements },
  amount: string,
  log: Log,
): Promise<SettleAnswer> {
  try {
    const result = await handle.facilitator.settle(
      request.paymentPayload,
      request.paymentRequirements,
    );
    log(
      result.success
        ? `facilitator: settled ${amount} on ${result.network} in ${result.transaction}`
        : `facilitator: settlement refused: ${result.errorReason ?? "unknown reason"}`,
    );
    return { status: 200, body: result };
  } catch (error) {
    log(`facilitator: settle failed: ${errorMessage(error)}`);
    return {
      status: 500,
      body: { error: `settlement could not be completed: ${errorMessage(error)}` },
    };
  }
}

function settleHandler(handle: X402FacilitatorHandle, log: Log): Handler {
  // Settlements in progress, by authorization. The same request again while one runs (a retry
  // whose first answer was lost while the transfer waits for its receipt) gets that one's answer
  // when it comes: a refusal then would be false, as the first may still move the money. Another
  // request for the same authorization waits for it to end, then is settled on its own (the
  // token then says whether the authorization is used).
  const settling = new Map<string, Settling>();
  return async (c) => {
    const body = await readJson(c);
    const network =
      (body.ok &&
        (body.body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements
          ?.network) ||
      "";
    const failure = (errorReason: string, errorMessage: string) => ({
      success: false,
      errorReason,
      errorMessage,
      transaction: "",
      network: typeof network === "string" ? network : "",
    });
    if (!body.ok) return c.json(failure("invalid_payload", "body is not JSON"), 400);
    const parsed = parseFacilitatorRequest(body.body, handle.networks, handle.networksV1);
    if (!parsed.ok) return c.json(failure(parsed.reason, parsed.message), 400);

    const { paymentPayload, paymentRequirements, authorizationKey, amount } = parsed.request;
    const request = JSON.stringify([paymentPayload, paymentRequirements]);
    let running = settling.get(authorizationKey);
    while (running && running.request !== request) {
      await running.answer;
      running = settling.get(authorizationKey);
    }
    if (running) {
      log("facilitator: this settlement is under way: answering with its outcome");
      const shared = await running.answer;
      return c.json(shared.body, shared.status);
    }
    const answer = settleOnce(handle, { paymentPayload, paymentRequirements }, amount, log);
    const entry = { request, answer };
    settling.set(authorizationKey, entry);
    // Gone as soon as it is answered, before any waiter looks again.
    void answer.then(() => {
      if (settling.get(authorizationKey) === entry) settling.delete(authorizationKey);
    });
    const own = await answer;
    return c.json(own.body, own.status);
  };
}

function facilitatorApp(handle: X402FacilitatorHandle, opts: FacilitatorOptions): Hono {
  const log = opts.log ?? (() => {});
  const app = new Hono();
  answerErrorsAsJson(app, log);
  limitBodies(app);
  if (opts.authToken) requireBearerToken(app, opts.authToken);
  app.get("/health", (c) =>
    c.json({
      status: "ok",
      version: SERVICE_VERSION,
      networks: handle.networks,
      signer: handle.address,
    }),
  );
  app.get("/supported", (c) => c.json(handle.facilitator.getSupported()));
  app.post("/verify", verifyHandler(handle, log));
  app.post("/settle", settleHandler(handle, log));
  return app;
}

function listen(app: Hono, host: string, port: number): Promise<ServerType> {
  return new Promise<ServerType>((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname: host, port });
    server.once("listening", () => resolve(server));
    // The code is kept so that the caller can name its own variable (listenError).
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        Object.assign(
          new Error(
            error.code === "EADDRINUSE"
              ? `facilitator: ${host}:${port} is already in use`
              : `facilitator: cannot listen on ${host}:${port}: ${error.message}`,
          ),
          { code: error.code },
        ),
      ),
    );
  });
}

/**
 * Starts the facilitator on host:port (port 0 picks a free port), once the RPC has answered
 * with the networks' chain id.
 */
export async function startFacilitator(
  opts: FacilitatorOptions & { host: string; port: number },
): Promise<RunningFacilitator> {
  const handle = createX402Facilitator(opts);
  await checkRpcChain(opts.rpcUrl, handle.chainId);
  const server = await listen(facilitatorApp(handle, opts), opts.host, opts.port);
  const { port } = server.address() as AddressInfo;
  const urlHost = opts.host.includes(":") ? `[${opts.host}]` : opts.host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    host: opts.host,
    port,
    address: handle.address,
    chainId: handle.chainId,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections would hold close() open; in-flight requests are cut.
        if ("closeAllConnections" in server) server.closeAllConnections();
      });
      return closing;
    },
  };
}
