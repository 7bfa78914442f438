import type { Socket } from "node:net";

/**
 * RFC 9110 §15.2: a client must parse 1xx responses it did not ask for. undici passes every
 * interim response to the request's handler and reads on — except `100 Continue`, on which it
 * destroys the connection ("bad response"), since it never sends `Expect: 100-continue` and has
 * no use for one. Neither do we, so a 100 that arrives before an answer is unsolicited and
 * carries nothing: it is taken out of the connection's byte stream before undici's parser sees
 * it, and the answer after it is read as usual. Nothing else in the stream is touched.
 */

/** An interim response longer than this (headers included) is left to undici to refuse. */
const MAX_INTERIM_BYTES = 16 * 1024;

type Verdict = "continue" | "other" | "undecided";

const byte = (ch: string) => (c: number) => c === ch.charCodeAt(0);
/** One test per byte of "HTTP/1.0 100 " or "HTTP/1.1 100" followed by a space or line end. */
const CONTINUE_LINE: ((c: number) => boolean)[] = [
  ...[..."HTTP/1."].map(byte),
  (c) => c === 0x30 || c === 0x31,
  ...[..." 100"].map(byte),
  (c) => c === 0x20 || c === 0x0d || c === 0x0a,
];

function startsWithContinue(buf: Buffer): Verdict {
  const n = Math.min(buf.length, CONTINUE_LINE.length);
  for (let i = 0; i < n; i++) if (!CONTINUE_LINE[i]?.(buf[i] ?? -1)) return "other";
  return n === CONTINUE_LINE.length ? "continue" : "undecided";
}

/** End (exclusive) of the header block that starts `buf`: after its first empty line. */
function headerBlockEnd(buf: Buffer): number {
  for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a, nl + 1)) {
    if (buf[nl + 1] === 0x0a) return nl + 2;
    if (buf[nl + 1] === 0x0d && buf[nl + 2] === 0x0a) return nl + 3;
  }
  return -1;
}

/**
 * Makes `socket` drop unsolicited `100 Continue` responses in front of each answer. An answer
 * can only begin after a request was written, so the check is armed by every write and
 * disarmed by the first byte that is not part of an interim 100.
 */
export function dropUnsolicitedContinue<S extends Socket>(socket: S): S {
  let armed = false;
  let held: Buffer | null = null;
  const push = socket.push.bind(socket);
  const write = socket.write.bind(socket);

  socket.write = ((...args: Parameters<Socket["write"]>) => {
    armed = true;
    return write(...args);
  }) as Socket["write"];

  socket.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (chunk === null) {
      // The connection ended: whatever was held goes to the parser, which judges it.
      if (held) push(held);
      held = null;
      return push(null);
    }
    if (!armed || !Buffer.isBuffer(chunk)) return push(chunk, encoding);
    let buf = held ? Buffer.concat([held, chunk]) : chunk;
    held = null;
    for (;;) {
      const verdict = startsWithContinue(buf);
      if (verdict === "other") {
        armed = false;
        return push(buf);
      }
      const end = verdict === "continue" ? headerBlockEnd(buf) : -1;
      if (end < 0) {
        if (buf.length > MAX_INTERIM_BYTES) {
          armed = false;
          return push(buf);
        }
        held = buf;
        return true;
      }
      buf = buf.subarray(end);
      if (buf.length === 0) return true;
    }
  };
  return socket;
}
