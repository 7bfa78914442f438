import type { IncomingMessage, ServerResponse } from "node:http";
import type { UrlPolicy } from "../snapshot/url-rules.js";
import { CORS_HEADERS } from "./app.js";
import { readNodeBody } from "./body.js";
import { NO_STORE } from "./errors.js";
import {
  MAX_BODY_BYTES,
  checkSnapshotRequest,
  snapshotErrorAnswer,
  type PreparedAnswer,
} from "./snapshot-input.js";

/** Answers a Node request itself and returns true, or returns false and leaves it untouched. */
export type NodeFront = (req: IncomingMessage, res: ServerResponse) => boolean;

export interface ChallengeFastPathOptions {
  urlPolicy: UrlPolicy;
  /** The payment gate's prepared challenge for a resource URL (PaymentGate.unpaidChallenge). */
  unpaidChallenge(
    resourceUrl: string,
    header: (name: string) => string | undefined,
  ): PreparedAnswer | undefined;
  log?: (message: string, error?: unknown) => void;
}

const SNAPSHOT_PATH = "/v1/snapshot";
/**
 * Hosts that @hono/node-server puts into the request URL exactly as sent (its own test): for
 * these, `http://<host>/v1/snapshot` is the URL the Hono route sees, so the gate's challenge
 * cache answers for both paths alike. Any other spelling goes through Hono.
 */
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;

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

/** A prepared answer as Node writes it: the header object and the body bytes. */
interface WireAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: Buffer;
}

function toWire(answer: PreparedAnswer): WireAnswer {
  const body = Buffer.from(answer.body);
  const headers = { ...CORS_HEADERS, ...answer.headers, "content-length": String(body.length) };
  return { status: answer.status, headers, body };
}

/** Made once per prepared answer; the cached challenge is the same object on every request. */
const wireAnswers = new WeakMap<PreparedAnswer, WireAnswer>();

/**
 * One header object per answer, reused: building a fresh one per request (spreading the CORS and
 * answer headers) held the 402 at 0.62 of GET /health's requests per second, the reused object at
 * 0.74-0.80 (wrk, both in one process). Node only reads the object it is given.
 * The body goes out as a Buffer, not a string, so Node writes the head as its own latin1 chunk
 * instead of joining it to the body and encoding the ~3 KB of headers again as UTF-8.
 */
function send(res: ServerResponse, answer: PreparedAnswer): void {
  let wire = wireAnswers.get(answer);
  if (!wire) wireAnswers.set(answer, (wire = toWire(answer)));
  res.writeHead(wire.status, wire.headers).end(wire.body);
}

/**
 * The unpaid POST /v1/snapshot without the framework. Issue 3 asks the 402 challenge to serve
 * ≥ 70% of GET /health's requests per second; through Hono on @hono/node-server any POST route
 * reaches only about 0.6 of its own GET on this machine (docs/benchmarks.md), so the one hot
 * unpaid answer is served here, in front of Hono, from the same parts the route uses:
 * checkSnapshotRequest for SPEC §2 (so a bad input gets the route's own 400) and the gate's
 * prepared challenge (so the 402 is byte for byte the SDK's). It takes a request only when the
 * answer cannot differ from the route's: no payment header, not a browser, a plain Host, a
 * declared Content-Length within the limit, and a challenge already prepared for that URL
 * (the first unpaid request, and everything else, goes through Hono).
 */
export function createChallengeFastPath(options: ChallengeFastPathOptions): NodeFront {
  const log = options.log ?? ((message, error) => console.error(message, error ?? ""));

  return (req, res) => {
    if (req.method !== "POST" || req.url !== SNAPSHOT_PATH) return false;
    const host = req.headers.host;
    if (host === undefined || !PLAIN_HOST.test(host)) return false;
    const declared = req.headers["content-length"];
    if (declared === undefined || req.headers["transfer-encoding"] !== undefined) return false;
    if (!(Number(declared) <= MAX_BODY_BYTES)) return false;
    const challenge = options.unpaidChallenge(`http://${host}${SNAPSHOT_PATH}`, (name) => {
      const value = req.headers[name];
      return typeof value === "string" ? value : undefined;
    });
    if (!challenge) return false;

    void readNodeBody(req, MAX_BODY_BYTES).then((read) => {
      try {
        const checked = checkSnapshotRequest(
          joinedHeader(req, "content-type"),
          read,
          options.urlPolicy,
        );
        send(res, checked.ok ? challenge : snapshotErrorAnswer(checked.error));
      } catch (err) {
        log("unhandled error on the unpaid challenge path", err);
        send(res, {
          status: 500,
          headers: { "content-type": "application/json", "cache-control": NO_STORE },
          body: JSON.stringify({ error: "internal error" }),
        });
      }
    });
    return true;
  };
}
