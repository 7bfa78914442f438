import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A plain-HTTP target site on 127.0.0.1 for CLI and server tests. `/` answers with some security
 * headers; it can be held back (`hold()`) until the test releases it, to make a request slow
 * without any timing. Everything else is 404.
 */
export async function startTarget() {
  let held: Promise<void> | undefined;
  let release = () => {};
  let onArrival = () => {};
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url !== "/") {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    onArrival();
    void (held ?? Promise.resolve()).then(() => {
      res
        .writeHead(200, {
          "content-type": "text/html",
          "x-frame-options": "DENY",
          "x-content-type-options": "nosniff",
        })
        .end("<!doctype html><title>target</title>");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}/`,
    /** Holds answers to `/`; resolves `arrived` when the first held request comes in. */
    hold() {
      held = new Promise<void>((resolve) => (release = resolve));
      return new Promise<void>((resolve) => (onArrival = resolve));
    },
    release: () => release(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
