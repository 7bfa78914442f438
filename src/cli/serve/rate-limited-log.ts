import { RateLimiterMemory, type RateLimiterRes } from "rate-limiter-flexible";

/** Longest line written: a per-request line is short, whatever a client sent. */
const MAX_LINE_CHARS = 300;

export interface RateLimitedLogOptions {
  /** Lines written per window at most; the rest are counted, then summed up in one line. */
  linesPerWindow?: number;
  windowSeconds?: number;
}

/**
 * The log of per-request events (refused proofs, facilitator errors, bugs): each event one
 * short line, and at most `linesPerWindow` lines per window, so a flood of hostile requests
 * cannot fill a disk. What is dropped is said once, when its window ends.
 */
export function rateLimitedLog(
  write: (line: string) => void,
  { linesPerWindow = 10, windowSeconds = 60 }: RateLimitedLogOptions = {},
): (line: string) => void {
  const limiter = new RateLimiterMemory({ points: linesPerWindow, duration: windowSeconds });
  let suppressed = 0;
  let summary: NodeJS.Timeout | undefined;
  const summarize = () => {
    write(`${suppressed} log lines suppressed (at most ${linesPerWindow} per ${windowSeconds} s)`);
    suppressed = 0;
    summary = undefined;
  };
  return (line) => {
    const short = oneLine(line);
    limiter.consume("log").then(
      () => write(short),
      (refused: RateLimiterRes) => {
        suppressed++;
        summary ??= setTimeout(summarize, refused.msBeforeNext).unref();
      },
    );
  };
}

function oneLine(text: string): string {
  const flat = text.replace(/\s*[\r\n]+\s*/g, " ").trim();
  return flat.length > MAX_LINE_CHARS ? `${flat.slice(0, MAX_LINE_CHARS - 1)}…` : flat;
}
