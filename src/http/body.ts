import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

export type BodyText =
  { ok: true; text: string } | { ok: false; reason: "too_large" | "unreadable" };

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

/**
 * Reads a request body as UTF-8, refusing it as soon as it passes `max` bytes (a larger
 * Content-Length is refused without reading). Hand-written rather than hono/body-limit plus
 * `c.req.text()`: on @hono/node-server that builds a WHATWG Request and ReadableStream per
 * request, which cost more than the rest of the route together and made the unpaid 402 path
 * half as fast as GET /health (bench/payment.ts). Reading the Node stream directly avoids it;
 * other runtimes (and `app.request()` in tests) read the web body with the same limit.
 */
export async function readBodyText(c: Context, max: number): Promise<BodyText> {
  if (declaredTooLarge(c, max)) return { ok: false, reason: "too_large" };
  const chunks: Uint8Array[] = [];
  let size = 0;
  const add = (chunk: Uint8Array): boolean => {
    size += chunk.byteLength;
    if (size > max) return false;
    chunks.push(chunk);
    return true;
  };

  const incoming = nodeRequest(c);
  if (incoming) {
    const outcome = await new Promise<"ok" | "too_large" | "unreadable">((resolve) => {
      const finish = (result: "ok" | "too_large" | "unreadable") => {
        incoming.off("data", onData).off("end", onEnd).off("error", onError);
        if (result === "too_large") incoming.pause();
        resolve(result);
      };
      const onData = (chunk: Buffer) => {
        if (!add(chunk)) finish("too_large");
      };
      const onEnd = () => finish("ok");
      const onError = () => finish("unreadable");
      incoming.on("data", onData).once("end", onEnd).once("error", onError);
      if (incoming.readableEnded) finish("ok");
    });
    if (outcome !== "ok") return { ok: false, reason: outcome };
  } else {
    const body = c.req.raw.body;
    if (body) {
      const reader = body.getReader();
      try {
        for (let r = await reader.read(); !r.done; r = await reader.read()) {
          if (!add(r.value)) {
            void reader.cancel().catch(() => {});
            return { ok: false, reason: "too_large" };
          }
        }
      } catch {
        return { ok: false, reason: "unreadable" };
      }
    }
  }
  return { ok: true, text: Buffer.concat(chunks, size).toString("utf8") };
}
