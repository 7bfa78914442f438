import type { ServerResponse } from "node:http";
import type { Answer } from "../payment/index.js";
import { CORS_HEADERS } from "./cors.js";

/** An answer as Node writes it: its headers (CORS included) as one object and as a flat list. */
interface Encoded {
  headers: Readonly<Record<string, string>>;
  /** The same headers as `[name, value, …]`, copied to add a request id. */
  list: readonly string[];
  body: Buffer;
}

/** Made once per answer: a prepared challenge is the same object on every request. */
const encodedAnswers = new WeakMap<Answer, Encoded>();

function encode(answer: Answer): Encoded {
  const body = Buffer.from(answer.body);
  const headers = { ...CORS_HEADERS, ...answer.headers, "content-length": String(body.length) };
  return { headers, list: Object.entries(headers).flat(), body };
}

/**
 * The Node adapter: sends an answer on a raw Node response, with `requestId` as X-Request-Id.
 * All headers go in the one writeHead (nothing set before it, which would make Node set each
 * header one by one), from a prepared object or list, and the body as a Buffer, so Node writes
 * the head as its own latin1 chunk; all keep the hot 402 cheap (docs/benchmarks.md, payment).
 */
export function sendNodeAnswer(res: ServerResponse, answer: Answer, requestId?: string): void {
  let encoded = encodedAnswers.get(answer);
  if (!encoded) encodedAnswers.set(answer, (encoded = encode(answer)));
  if (requestId === undefined) {
    res.writeHead(answer.status, encoded.headers).end(encoded.body);
    return;
  }
  const list = encoded.list.slice();
  list.push("x-request-id", requestId);
  res.writeHead(answer.status, list).end(encoded.body);
}
