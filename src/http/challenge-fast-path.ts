import type { IncomingMessage, ServerResponse } from "node:http";
import type { PaymentGate } from "../payment/index.js";
import type { UrlPolicy } from "../snapshot/index.js";
import { PATHS } from "../routes.js";
import type { Answer } from "../payment/index.js";
import { readNodeBody, type BodyText } from "./request-body.js";
import { TrustedProxies, clientAddress } from "./guards/client-ip.js";
import { nodeCors } from "./guards/cors.js";
import { INTERNAL_ERROR } from "./errors.js";
import { sendNodeAnswer } from "./node-answer.js";
import type { ClientRateLimit } from "./guards/rate-limit.js";
import { MAX_BODY_BYTES, checkSnapshotRequest, snapshotErrorAnswer } from "./snapshot-input.js";

/**
 * Answers a Node request itself and returns true, or returns false and leaves it untouched.
 * `requestId`, when given, is sent as `X-Request-Id` on the answer (createRequestObserver).
 */
export type NodeFront = (req: IncomingMessage, res: ServerResponse, requestId?: string) => boolean;

export interface ChallengeFastPathOptions {
  urlPolicy: UrlPolicy;
  /** The payment gate's prepared challenge for a request (PaymentGate.unpaidChallenge). */
  unpaidChallenge: PaymentGate["unpaidChallenge"];
  log?: (message: string, error?: unknown) => void;
  /** The app's per-client budget, taken here too: these answers are free (RATE_LIMIT_PER_MINUTE). */
  rateLimit?: ClientRateLimit;
  /** CIDRs of the proxies whose X-Forwarded-For names the client (TRUSTED_PROXIES); default none. */
  trustedProxies?: readonly string[];
  /**
   * Devnet and local mode, as the app's `devnet` (docs/security.md, "Devnet and local mode"):
   * the answers carry the app's own-origin CORS instead of `*`. The app's Host rule needs no
   * copy here: a Host it refuses never reaches the gate, so no challenge is prepared for it.
   */
  devnet?: boolean;
  /** PUBLIC_URL: its origin is the service's own too (devnet mode). */
  publicUrl?: string;
}

const SNAPSHOT_PATH = PATHS.snapshot;
/**
 * Hosts that @hono/node-server puts into the request URL exactly as sent (its own test): for
 * these, `http://<host>/v1/snapshot` is the URL the Hono route sees, so the gate's prepared
 * challenge answers for both paths alike. Any other spelling goes through Hono.
 */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;

/**
 * The one rule for which requests the fast path takes: those whose answer cannot differ from the
 * route's. Hono must see the same request (POST to the exact path, a plain Host, a declared
 * Content-Length within the body limit, no chunked body), and the gate must have the answer
 * prepared for it (PaymentGate.unpaidChallenge: no proof, not a browser, challenge built).
 * Returns the prepared challenge, or undefined to leave the request to Hono.
 */
function preparedChallengeFor(
  req: IncomingMessage,
  unpaidChallenge: PaymentGate["unpaidChallenge"],
): ReturnType<PaymentGate["unpaidChallenge"]> {
  if (req.method !== "POST" || req.url !== SNAPSHOT_PATH) return undefined;
  const host = req.headers.host;
  if (host === undefined || !PLAIN_HOST.test(host)) return undefined;
  const declared = req.headers["content-length"];
  if (declared === undefined || req.headers["transfer-encoding"] !== undefined) return undefined;
  if (!(Number(declared) <= MAX_BODY_BYTES)) return undefined;
  return unpaidChallenge(`http://${host}${SNAPSHOT_PATH}`, (name) => {
    const value = req.headers[name];
    return typeof value === "string" ? value : undefined;
  });
}

/** X-Forwarded-For as one list (Node joins repeats, but its type allows an array). */
function forwardedFor(req: IncomingMessage): string | undefined {
  const value = req.headers["x-forwarded-for"];
  return Array.isArray(value) ? value.join(", ") : value;
}

/** One header as @hono/node-server's c.req.header() joins repeats (content-type is not merged by Node). */
function joinedHeader(req: IncomingMessage, name: string): string | undefined {
  let value: string | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name) {
      value = value === undefined ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
    }
  }
  return value;
}

/**
 * The unpaid POST /v1/snapshot without the framework: Hono's POST costs too much for the one hot
 * unpaid answer to reach its throughput target (docs/benchmarks.md "Payment"). It is served here,
 * in front of Hono, from the same parts the route uses: checkSnapshotRequest for
 * docs/contract.md §3 (so a bad input gets the route's own 400), the gate's prepared
 * challenge (so the 402 is byte for byte the SDK's) and the app's CORS for the mode
 * (guards/cors.ts). Everything else, and the first unpaid request per URL, goes through Hono.
 */
export function createChallengeFastPath(options: ChallengeFastPathOptions): NodeFront {
  const log = options.log ?? ((message, error) => console.error(message, error ?? ""));
  const verdicts = new InputVerdicts(options.urlPolicy);
  const { rateLimit } = options;
  const trusted = new TrustedProxies(options.trustedProxies ?? []);
  const noLimit = Promise.resolve(undefined);
  const corsFor = nodeCors(options.devnet === true, options.publicUrl);

  return (req, res, requestId) => {
    const challenge = preparedChallengeFor(req, options.unpaidChallenge);
    if (!challenge) return false;
    // The URL the app sees for this request (PLAIN_HOST), which its CORS checks the origin against.
    const cors = corsFor(joinedHeader(req, "origin"), `http://${req.headers.host}${SNAPSHOT_PATH}`);

    // Counted while the body arrives: one consume, no extra wait for the memory limiter.
    const limited = rateLimit
      ? rateLimit.take(clientAddress(req.socket.remoteAddress, forwardedFor(req), trusted))
      : noLimit;
    void Promise.all([readNodeBody(req, MAX_BODY_BYTES), limited]).then(([read, tooMany]) => {
      try {
        const refusal = tooMany ?? verdicts.refusal(joinedHeader(req, "content-type"), read);
        sendNodeAnswer(res, refusal ?? challenge, requestId, cors);
      } catch (err) {
        log("unhandled error on the unpaid challenge path", err);
        sendNodeAnswer(res, INTERNAL_ERROR, requestId, cors);
      }
    });
    return true;
  };
}

/** Distinct (content type, body) pairs whose verdict is remembered. */
const REMEMBERED_VERDICTS = 256;

/**
 * The input check's verdict (docs/contract.md §3) per (content type, body): the check is pure
 * (no DNS, no clock), so an identical unpaid request — a client polling the price — gets the
 * remembered answer instead of parsing JSON and a URL again. Bounded; cleared when full.
 */
class InputVerdicts {
  private readonly byRequest = new Map<string, Answer | null>();

  constructor(private readonly policy: UrlPolicy) {}

  /** The 400 for this request, or null when it passes the input check. */
  refusal(contentType: string | undefined, read: BodyText): Answer | null {
    if (!read.ok) return this.check(contentType, read);
    const key = `${contentType ?? ""}\n${read.text}`;
    let verdict = this.byRequest.get(key);
    if (verdict === undefined) {
      verdict = this.check(contentType, read);
      if (this.byRequest.size >= REMEMBERED_VERDICTS) this.byRequest.clear();
      this.byRequest.set(key, verdict);
    }
    return verdict;
  }

  private check(contentType: string | undefined, read: BodyText): Answer | null {
    const checked = checkSnapshotRequest(contentType, read, this.policy);
    return checked.ok ? null : snapshotErrorAnswer(checked.error);
  }
}
