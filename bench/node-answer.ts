/**
 * What writing the 402's head costs Node, side by side, in one process and without sockets
 * (the part of the answer our code decides; docs/benchmarks-history.md "The 402 with the output
 * example"): sendNodeAnswer, which hands Node the headers checked once, against the plain
 * `writeHead(status, headers)` it replaced, which Node checks on every call — for the challenge
 * the route sends (one network, with the output example), the same challenge cut to the size it
 * had without the example, and GET /health's answer. Alternating batches; medians of µs per
 * answer and of the paired ratios. No target: it explains the `payment` part's 402 line.
 *
 *   tsx bench/node-answer.ts
 */
import { ServerResponse } from "node:http";
import { sendNodeAnswer } from "../src/http/node-answer.js";
import { challengeExample, type Answer } from "../src/payment/index.js";
import { CORS_HEADERS } from "../src/http/cors.js";
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

/** The writer sendNodeAnswer replaced: every header through writeHead's argument. */
const plainHeaders = new WeakMap<Answer, { headers: Record<string, string>; body: Buffer }>();
function sendPlain(res: ServerResponse, answer: Answer, requestId: string): void {
  let encoded = plainHeaders.get(answer);
  if (!encoded) {
    const body = Buffer.from(answer.body);
    const headers = { ...CORS_HEADERS, ...answer.headers, "content-length": String(body.length) };
    plainHeaders.set(answer, (encoded = { headers, body }));
  }
  res.writeHead(answer.status, { ...encoded.headers, "x-request-id": requestId }).end(encoded.body);
}

type Send = (res: ServerResponse, answer: Answer, requestId: string) => void;

/** µs per answer over one batch. */
function batch(send: Send, answer: Answer): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < BATCH; i++) send(newResponse(), answer, "0123456789abcdef");
  return Number(process.hrtime.bigint() - start) / BATCH / 1_000;
}

const arms: Array<[string, Send, Answer]> = [
  ["402, checked once (sendNodeAnswer)", sendNodeAnswer, challenge],
  ["402, checked per call (writeHead)", sendPlain, challenge],
  ["402 without example, per call", sendPlain, withoutExample],
  ["/health, checked once", sendNodeAnswer, health],
  ["/health, checked per call", sendPlain, health],
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
console.log(`  402 checked once / checked per call          ${paired(0, 1)} (paired)`);
console.log(`  402 checked once / without example, per call ${paired(0, 2)} (paired)`);
console.log(`  402 checked once / /health checked once      ${paired(0, 3)} (paired)`);
