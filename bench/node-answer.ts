/**
 * What writing the 402's head costs Node, side by side, in one process and without sockets
 * (the part of the answer our code decides), through Node's public APIs only, each of which
 * checks every header value on every call: sendNodeAnswer (one flat list `[name, value, …]` made
 * once per answer, to writeHead), a header object to writeHead, and setHeaders with a Map then
 * writeHead — for the challenge the route sends (one network, with the output example), the
 * same challenge cut to the size it had without the example, and GET /health's answer.
 * Alternating batches; medians of µs per answer and of the paired ratios. No target: it
 * explains the `payment` part's 402 line.
 *
 *   tsx bench/node-answer.ts
 */
import { ServerResponse } from "node:http";
import { sendNodeAnswer } from "../src/http/node-answer.js";
import { challengeExample, type Answer } from "../src/payment/index.js";
import { ANY_ORIGIN_CORS, CORS_HEADERS } from "../src/http/guards/cors.js";
import { summarise } from "./lib/stats.js";

const BATCH = 20_000;
const ROUNDS = 25;

const example = challengeExample(
  {
    payTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    networks: ["eip155:84532"],
    priceUsdc: "0.05",
    devnet: true,
  },
  "http://127.0.0.1:8080",
);
const challenge: Answer = {
  status: 402,
  headers: {
    "content-type": "application/json",
    "payment-required": example.header,
    "cache-control": "no-store",
  },
  body: JSON.stringify(example.v1),
};
/** The same answer at the size it had without the output example (1,800 characters). */
const withoutExample: Answer = {
  ...challenge,
  headers: { ...challenge.headers, "payment-required": example.header.slice(0, 1_800) },
};
const health: Answer = {
  status: 200,
  headers: { "content-type": "application/json", "cache-control": "no-store" },
  body: JSON.stringify({ status: "ok", version: "1.0.0" }),
};

const request = { method: "POST", httpVersionMajor: 1, httpVersionMinor: 1, headers: {} };
const newResponse = () => new ServerResponse(request as never);

/** An answer's headers (CORS included) and body, made once per answer for the other writers. */
const plainHeaders = new WeakMap<Answer, { headers: Record<string, string>; body: Buffer }>();
function plain(answer: Answer): { headers: Record<string, string>; body: Buffer } {
  let encoded = plainHeaders.get(answer);
  if (!encoded) {
    const body = Buffer.from(answer.body);
    const headers = { ...CORS_HEADERS, ...answer.headers, "content-length": String(body.length) };
    plainHeaders.set(answer, (encoded = { headers, body }));
  }
  return encoded;
}

/** Every header through writeHead's argument, as an object. */
function sendObject(res: ServerResponse, answer: Answer, requestId: string): void {
  const { headers, body } = plain(answer);
  res.writeHead(answer.status, { ...headers, "x-request-id": requestId }).end(body);
}

/** Every header through setHeaders (a Map), then a bare writeHead. */
function sendSetHeaders(res: ServerResponse, answer: Answer, requestId: string): void {
  const { headers, body } = plain(answer);
  const map = new Map(Object.entries(headers)).set("x-request-id", requestId);
  res.setHeaders(map).writeHead(answer.status).end(body);
}

/** sendNodeAnswer as the fast path calls it in production. */
const sendFlat = (res: ServerResponse, answer: Answer, requestId: string) =>
  sendNodeAnswer(res, answer, requestId, ANY_ORIGIN_CORS);

type Send = (res: ServerResponse, answer: Answer, requestId: string) => void;

/** µs per answer over one batch. */
function batch(send: Send, answer: Answer): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < BATCH; i++) send(newResponse(), answer, "0123456789abcdef");
  return Number(process.hrtime.bigint() - start) / BATCH / 1_000;
}

const arms: Array<[string, Send, Answer]> = [
  ["402, flat list (sendNodeAnswer)", sendFlat, challenge],
  ["402, header object (writeHead)", sendObject, challenge],
  ["402, setHeaders(Map) + writeHead", sendSetHeaders, challenge],
  ["402 without example, flat list", sendFlat, withoutExample],
  ["/health, flat list", sendFlat, health],
];
for (let warm = 0; warm < 3; warm++) for (const [, send, answer] of arms) batch(send, answer);
const times = arms.map((): number[] => []);
for (let round = 0; round < ROUNDS; round++) {
  arms.forEach(([, send, answer], i) => times[i]!.push(batch(send, answer)));
}
console.log(
  `Writing one answer's head and body on a Node response, no socket (${ROUNDS} alternating rounds of ${BATCH}); PAYMENT-REQUIRED ${example.header.length} characters`,
);
arms.forEach(([name], i) => {
  const s = summarise(times[i]!);
  console.log(
    `  ${name.padEnd(38)} ${s.median.toFixed(2).padStart(7)} µs  (min ${s.min.toFixed(2)}, max ${s.max.toFixed(2)})`,
  );
});
const paired = (a: number, b: number) =>
  summarise(times[a]!.map((t, i) => t / times[b]![i]!)).median.toFixed(2);
console.log(`  402 flat list / header object                ${paired(0, 1)} (paired)`);
console.log(`  402 flat list / setHeaders                   ${paired(0, 2)} (paired)`);
console.log(`  402 flat list / without example              ${paired(0, 3)} (paired)`);
console.log(`  402 flat list / /health flat list            ${paired(0, 4)} (paired)`);
