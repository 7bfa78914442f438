import type { ServerResponse } from "node:http";
import type { Answer } from "../payment/index.js";
import { ANY_ORIGIN_CORS } from "./guards/cors.js";

/** An answer as Node writes it: its headers as one flat list `[name, value, …]`, and its body. */
interface Encoded {
  head: readonly string[];
  body: Buffer;
}

/** Made once per answer: a prepared challenge is the same object on every request. */
const encodedAnswers = new WeakMap<Answer, Encoded>();

function encode(answer: Answer): Encoded {
  const body = Buffer.from(answer.body);
  const headers = { ...answer.headers, "content-length": String(body.length) };
  return { head: Object.entries(headers).flat(), body };
}

/**
 * The Node adapter: sends an answer on a raw Node response, with `cors` (a flat list of the CORS
 * headers for this request, guards/cors.ts) and `requestId` as X-Request-Id. All headers go in the
 * one writeHead, as the flat list Node takes publicly, and the body as a Buffer, so Node writes the
 * head as its own latin1 chunk; Node checks each header as it writes it. Headers set on the
 * response before are kept, unless the answer names them too.
 */
export function sendNodeAnswer(
  res: ServerResponse,
  answer: Answer,
  requestId?: string,
  cors: readonly string[] = ANY_ORIGIN_CORS,
): void {
  let encoded = encodedAnswers.get(answer);
  if (!encoded) encodedAnswers.set(answer, (encoded = encode(answer)));
  const head = [...cors, ...encoded.head];
  if (requestId !== undefined) head.push("x-request-id", requestId);
  res.writeHead(answer.status, head).end(encoded.body);
}
