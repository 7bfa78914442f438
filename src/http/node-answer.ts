import type { ServerResponse } from "node:http";
import type { Answer } from "../payment/index.js";
import { CORS_HEADERS } from "./cors.js";

/** An answer as Node writes it: one header object (CORS included) and the body bytes. */
interface Encoded {
  headers: Readonly<Record<string, string>>;
  body: Buffer;
}

/** Made once per answer: a prepared challenge is the same object on every request. */
const encodedAnswers = new WeakMap<Answer, Encoded>();

function encode(answer: Answer): Encoded {
  const body = Buffer.from(answer.body);
  const headers = { ...CORS_HEADERS, ...answer.headers, "content-length": String(body.length) };
  return { headers, body };
}

/**
 * The Node adapter: sends an answer on a raw Node response. The header object is reused (Node
 * only reads it) and the body goes out as a Buffer, so Node writes the head as its own latin1
 * chunk; both keep the hot 402 cheap (docs/benchmarks.md, payment, items 9 and 10).
 */
export function sendNodeAnswer(res: ServerResponse, answer: Answer): void {
  let encoded = encodedAnswers.get(answer);
  if (!encoded) encodedAnswers.set(answer, (encoded = encode(answer)));
  res.writeHead(answer.status, encoded.headers).end(encoded.body);
}
