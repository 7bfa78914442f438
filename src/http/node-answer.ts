import { ServerResponse, validateHeaderName, validateHeaderValue } from "node:http";
import type { Answer } from "../payment/index.js";
import { CORS_HEADERS } from "./cors.js";

/** Node's headers as it keeps them once set: lower-case name → [name, value]. */
type HeaderSlot = Record<string, [string, string]>;

/** An answer as Node writes it: its headers (CORS included) checked once, and its body. */
interface Encoded {
  headers: Readonly<Record<string, string>>;
  /** The same headers in the form of Node's own header slot, copied per answer. */
  slot: Readonly<HeaderSlot>;
  body: Buffer;
}

/** Made once per answer: a prepared challenge is the same object on every request. */
const encodedAnswers = new WeakMap<Answer, Encoded>();

function encode(answer: Answer): Encoded {
  const body = Buffer.from(answer.body);
  const headers = { ...CORS_HEADERS, ...answer.headers, "content-length": String(body.length) };
  const slot: HeaderSlot = {};
  for (const [name, value] of Object.entries(headers)) {
    // What Node would check on every writeHead, checked here once (it throws the same errors).
    validateHeaderName(name);
    validateHeaderValue(name, value);
    slot[name.toLowerCase()] = [name, value];
  }
  return { headers, slot, body };
}

/**
 * Node's slot for the headers set through setHeader (`kOutHeaders`, an own symbol of every
 * response). writeHead takes the headers from it without checking their characters again: they
 * were checked when set. Looked up once; undefined on a Node that keeps it otherwise.
 */
const OUT_HEADERS: symbol | undefined = Object.getOwnPropertySymbols(
  new ServerResponse({ method: "GET", httpVersionMajor: 1, httpVersionMinor: 1 } as never),
).find((s) => s.description === "kOutHeaders");

/**
 * The Node adapter: sends an answer on a raw Node response, with `requestId` as X-Request-Id.
 * All headers go in the one writeHead, and the body as a Buffer, so Node writes the head as its
 * own latin1 chunk. The headers are handed over in Node's own slot, as setHeader would leave
 * them, checked once when the answer was first sent: Node checks every character of each value
 * it is given by writeHead or setHeader, on every call, and the 402's PAYMENT-REQUIRED is
 * ≈ 3.6 KB (docs/benchmarks.md "Payment", "402 head writing"). Without that slot (another
 * Node, or headers already set on this response) the answer goes through the checking writeHead.
 */
export function sendNodeAnswer(res: ServerResponse, answer: Answer, requestId?: string): void {
  let encoded = encodedAnswers.get(answer);
  if (!encoded) encodedAnswers.set(answer, (encoded = encode(answer)));
  const own = res as unknown as Record<symbol, unknown>;
  if (OUT_HEADERS !== undefined && own[OUT_HEADERS] == null) {
    // A copy per answer: Node owns the slot of this response from here on.
    const slot: HeaderSlot = { ...encoded.slot };
    if (requestId !== undefined) slot["x-request-id"] = ["x-request-id", checked(requestId)];
    own[OUT_HEADERS] = slot;
    res.writeHead(answer.status).end(encoded.body);
    return;
  }
  if (requestId === undefined) {
    res.writeHead(answer.status, encoded.headers).end(encoded.body);
    return;
  }
  res.writeHead(answer.status, { ...encoded.headers, "x-request-id": requestId }).end(encoded.body);
}

/** A request id as Node would take it (the observer's ids are short and plain already). */
function checked(requestId: string): string {
  validateHeaderValue("x-request-id", requestId);
  return requestId;
}
