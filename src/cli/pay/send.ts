/**
 * The sends of `secsnap pay`: one POST, the bounded resends of one signed proof, and what
 * Ctrl-C does meanwhile (docs/payment.md, "Paying from the command line").
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { CliOutput } from "../command.js";

/** An answer of the API, with its body read (JSON, else the text). */
export interface Answer {
  response: Response;
  body: unknown;
}

/** Sends of one signed proof at most. */
export const MAX_SENDS = 8;
/** Default of `--timeout`: seconds for the paid sends, waits included. */
export const DEFAULT_PAY_TIMEOUT_S = 300;
/**
 * Longest wait for one answer: above the service's own bound on a settlement (130 s), so a
 * slow settlement is waited for, not sent again.
 */
export const ANSWER_TIMEOUT_S = 150;
/** Longest wait honoured from a `Retry-After`, so a hostile value cannot hold the command. */
const MAX_RETRY_WAIT_S = 30;
/** First wait after a lost answer (no `Retry-After` to honour); it doubles on each loss. */
const LOST_ANSWER_WAIT_S = 2;
/**
 * A repeat within this long is the same Ctrl-C: the terminal signals the process group and a
 * wrapper in it (npm, npx) forwards the signal once more, within milliseconds. A person who reads
 * "Ctrl-C again" and presses it takes longer, and that press must count.
 */
const SAME_CTRL_C_MS = 200;

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** One POST of the target to the snapshot route, with a proof's headers or none. */
export async function ask(
  endpoint: URL,
  target: string,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<Answer> {
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json", ...headers },
    body: JSON.stringify({ url: target }),
    signal,
  });
  return { response, body: await readBody(response) };
}

/** Why a send got no answer, in a few words: the error and its cause. */
export function noAnswer(err: unknown): string {
  const error = err as Error;
  if (error.name === "TimeoutError") return "no answer in time";
  const cause = (error as { cause?: unknown }).cause;
  return `${error.message}${cause instanceof Error ? ` (${cause.message})` : ""}`;
}

/** `Retry-After` in seconds, within MAX_RETRY_WAIT_S; undefined when absent or a date. */
export function retryAfter(response: Response): number | undefined {
  const header = response.headers.get("retry-after")?.trim() ?? "";
  return /^\d+$/.test(header) ? Math.min(Number(header), MAX_RETRY_WAIT_S) : undefined;
}

/** A 409 that asks to come back: the same payment id is still being served. */
export function inProgress(answer: Answer): boolean {
  return answer.response.status === 409 && retryAfter(answer.response) !== undefined;
}

/**
 * Ctrl-C while paying. Before the proof leaves: stop, nothing was charged. After: the first
 * Ctrl-C stops the resends but waits for the answer in flight (it tells whether the payment was
 * made); the second stops waiting; one more cuts the chain reading short. Each ends with the
 * line saying what was charged.
 */
export class Interrupts {
  private phase: "unsent" | "sending" | "reading" = "unsent";
  private lastPress = -Infinity;
  private readonly early = new AbortController();
  private readonly finish = new AbortController();
  private readonly stop = new AbortController();
  private readonly reading = new AbortController();

  constructor(private readonly stderr: CliOutput) {
    process.on("SIGINT", this.onSignal);
  }

  dispose(): void {
    process.off("SIGINT", this.onSignal);
  }

  /** Aborted by a Ctrl-C before the proof was sent. */
  get beforeSending(): AbortSignal {
    return this.early.signal;
  }

  /** Aborted by the first Ctrl-C after the proof was sent: no more resends. */
  get finishing(): AbortSignal {
    return this.finish.signal;
  }

  /** Aborted by the second: the answer in flight is no longer awaited. */
  get stopping(): AbortSignal {
    return this.stop.signal;
  }

  /** Aborted by a Ctrl-C while the chain is read. */
  get readingChain(): AbortSignal {
    return this.reading.signal;
  }

  get interrupted(): boolean {
    return this.early.signal.aborted || this.finish.signal.aborted || this.reading.signal.aborted;
  }

  /** The proof is about to leave: from now on a Ctrl-C may leave a payment behind. */
  startSending(): void {
    this.phase = "sending";
  }

  startReading(): void {
    this.phase = "reading";
  }

  private readonly onSignal = () => {
    const now = performance.now();
    if (now - this.lastPress < SAME_CTRL_C_MS) return;
    this.lastPress = now;
    if (this.phase === "unsent") {
      this.early.abort();
    } else if (this.phase === "reading") {
      this.reading.abort();
    } else if (!this.finish.signal.aborted) {
      this.stderr.write(
        "secsnap pay: interrupted: the proof is sent; waiting for its answer to tell whether it " +
          "was charged (Ctrl-C again to stop waiting)\n",
      );
      this.finish.abort();
    } else {
      this.stop.abort();
    }
  };
}

/** What stops the sends: no more resends (`finishing`), no more waiting (`stopping`). */
export interface SendSignals {
  readonly finishing: AbortSignal;
  readonly stopping: AbortSignal;
}

/** How the sends of one proof ended. */
export interface PaidSends {
  /** The answer of the last send, if it got one. */
  answer?: Answer;
  /** Why the last send got no answer. */
  lost?: string;
  sends: number;
}

/**
 * Sends one signed proof until it gets an answer other than a 503 or a 409 in progress, at
 * most MAX_SENDS times within `timeoutS`: never a second proof, so a resend cannot cost more.
 */
export async function sendPaid(
  send: (signal: AbortSignal) => Promise<Answer>,
  timeoutS: number,
  interrupts: SendSignals,
  say: (line: string) => void,
  describe: (answer: Answer) => string,
): Promise<PaidSends> {
  const deadline = performance.now() + timeoutS * 1000;
  let losses = 0;
  let busy = 0;
  for (let sends = 1; ; sends++) {
    const remainingMs = Math.max(1_000, Math.ceil(deadline - performance.now()));
    const answerTimeout = AbortSignal.timeout(Math.min(ANSWER_TIMEOUT_S * 1000, remainingMs));
    let answer: Answer | undefined;
    let lost: string | undefined;
    try {
      answer = await send(AbortSignal.any([answerTimeout, interrupts.stopping]));
    } catch (err) {
      lost = interrupts.stopping.aborted ? "stopped waiting for the answer" : noAnswer(err);
    }
    let waitS: number;
    let what: string;
    if (answer === undefined) {
      losses++;
      waitS = Math.min(LOST_ANSWER_WAIT_S * 2 ** (losses - 1), MAX_RETRY_WAIT_S);
      what = `the service did not answer (${lost})`;
    } else if (answer.response.status === 503) {
      waitS = retryAfter(answer.response) ?? LOST_ANSWER_WAIT_S;
      what = `the API answered 503 (${describe(answer)})`;
    } else if (inProgress(answer)) {
      // Its first request still runs; the wait grows in case that takes a while (a settlement).
      busy++;
      waitS = Math.max(
        retryAfter(answer.response) ?? 0,
        Math.min(2 ** (busy - 1), MAX_RETRY_WAIT_S),
      );
      what = `the API answered 409, in progress (${describe(answer)})`;
    } else {
      return { answer, sends };
    }
    const outOfTime = performance.now() + waitS * 1000 >= deadline;
    if (sends >= MAX_SENDS || outOfTime || interrupts.finishing.aborted) {
      return { ...(answer ? { answer } : { lost: lost ?? "no answer" }), sends };
    }
    // The same proof is one authorization: however many sends, it is settled at most once.
    say(
      `${what}; whether you were charged is not known yet — sending the same proof again ` +
        `in ${waitS}s is safe (charged at most once)`,
    );
    await sleep(waitS * 1000, undefined, { signal: interrupts.finishing }).catch(() => undefined);
    if (interrupts.finishing.aborted) {
      return { ...(answer ? { answer } : { lost: lost ?? "no answer" }), sends };
    }
  }
}
