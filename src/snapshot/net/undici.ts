/**
 * The parts of undici the engine uses, each loaded by its own path: undici's index.js loads the
 * whole package (fetch, WebSocket, caches, mocks), which cost more start-up than the rest of
 * `secsnap scan` (docs/benchmarks.md "Start-up"). They are the same modules the index exports,
 * so errors and classes are the ones undici's users see.
 */
import type { Dispatcher } from "undici";
import api from "undici/lib/api/index.js";

export { default as Agent } from "undici/lib/dispatcher/agent.js";
export { default as Client } from "undici/lib/dispatcher/client.js";
export { default as Dispatcher } from "undici/lib/dispatcher/dispatcher.js";
export { default as buildConnector } from "undici/lib/core/connect.js";
export { default as errors } from "undici/lib/core/errors.js";
export { default as UnwrapHandler } from "undici/lib/handler/unwrap-handler.js";

export type RequestOptions = Omit<Dispatcher.RequestOptions, "origin" | "path"> & {
  dispatcher: Dispatcher;
};

/** undici's `request(url, options)` for an http(s) URL, as its index builds it. */
export function request(url: URL, options: RequestOptions): Promise<Dispatcher.ResponseData> {
  const { dispatcher, ...rest } = options;
  return api.request.call(dispatcher, {
    ...rest,
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
  });
}
