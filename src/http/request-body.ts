import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

/** A body read within its limit: its bytes as received, and their UTF-8 text. */
export type BodyText =
  { ok: true; text: string; bytes: Uint8Array } | { ok: false; reason: "too_large" | "unreadable" };

const EMPTY = new Uint8Array(0);

/** @hono/node-server hands the Node request to the app as `env.incoming`. */
function nodeRequest(c: Context): IncomingMessage | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return incoming && typeof (incoming as IncomingMessage).on === "function"
    ? (incoming as IncomingMessage)
    : undefined;
}

function declaredTooLarge(c: Context, max: number): boolean {
  const declared = Number(c.req.header("content-length"));
  return Number.isFinite(declared) && declared > max;
}

type ReadOutcome = "ok" | "too_large" | "unreadable";

/**
 * Collects one Node request body up to `max` bytes. A class with bound methods rather than
 * closures: esbuild's keepNames wraps every named closure made per request, a cost the hot 402
 * path shows (docs/benchmarks.md "Payment").
 */
class NodeBodyReader {
  readonly chunks: Buffer[] = [];
  size = 0;
  private settle: ((outcome: ReadOutcome) => void) | undefined;
  private readonly onData = this.data.bind(this);
  private readonly onEnd = this.finish.bind(this, "ok");
  private readonly onError = this.finish.bind(this, "unreadable");

  constructor(
    private readonly incoming: IncomingMessage,
    private readonly max: number,
  ) {}

  read(): Promise<ReadOutcome> {
    return new Promise<ReadOutcome>((resolve) => {
      this.settle = resolve;
      this.incoming.on("data", this.onData).once("end", this.onEnd).once("error", this.onError);
      if (this.incoming.readableEnded) this.finish("ok");
    });
  }

  private data(chunk: Buffer): void {
    this.size += chunk.byteLength;
    if (this.size > this.max) this.finish("too_large");
    else this.chunks.push(chunk);
  }

  private finish(outcome: ReadOutcome): void {
    this.incoming.off("data", this.onData).off("end", this.onEnd).off("error", this.onError);
    if (outcome === "too_large") this.incoming.pause();
    this.settle?.(outcome);
  }
}

/** The body of a web Request (no Node request underneath), with the same limit. */
async function readWebBody(body: ReadableStream<Uint8Array>, max: number): Promise<BodyText> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  try {
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      size += r.value.byteLength;
      if (size > max) {
        void reader.cancel().catch(() => {});
        return { ok: false, reason: "too_large" };
      }
      chunks.push(r.value);
    }
  } catch {
    return { ok: false, reason: "unreadable" };
  }
  const bytes = Buffer.concat(chunks, size);
  return { ok: true, text: bytes.toString("utf8"), bytes };
}

/**
 * Reads a request body, refusing it as soon as it passes `max` bytes (a larger
 * Content-Length is refused without reading). The Node stream is read directly, not through
 * hono/body-limit and `c.req.text()`, which build a WHATWG Request and stream per request
 * (docs/benchmarks.md "Payment"); other runtimes (and `app.request()` in tests) read the
 * web body with the same limit.
 */
export async function readBodyText(c: Context, max: number): Promise<BodyText> {
  if (declaredTooLarge(c, max)) return { ok: false, reason: "too_large" };
  const incoming = nodeRequest(c);
  if (!incoming) {
    const body = c.req.raw.body;
    return body ? readWebBody(body, max) : { ok: true, text: "", bytes: EMPTY };
  }
  return readNodeBody(incoming, max);
}

/** A Node request's body, up to `max` bytes (the caller checks Content-Length first). */
export async function readNodeBody(incoming: IncomingMessage, max: number): Promise<BodyText> {
  const reader = new NodeBodyReader(incoming, max);
  const outcome = await reader.read();
  if (outcome !== "ok") return { ok: false, reason: outcome };
  const bytes = Buffer.concat(reader.chunks, reader.size);
  return { ok: true, text: bytes.toString("utf8"), bytes };
}
