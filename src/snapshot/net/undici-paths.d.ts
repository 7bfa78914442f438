// Types for the undici modules src/snapshot/net/undici.ts loads by path; undici types only its index.
declare module "undici/lib/dispatcher/agent.js" {
  import { Agent } from "undici";
  export = Agent;
}
declare module "undici/lib/dispatcher/client.js" {
  import { Client } from "undici";
  export = Client;
}
declare module "undici/lib/dispatcher/dispatcher.js" {
  import { Dispatcher } from "undici";
  export = Dispatcher;
}
declare module "undici/lib/core/connect.js" {
  import { buildConnector } from "undici";
  export = buildConnector;
}
declare module "undici/lib/core/errors.js" {
  import { errors } from "undici";
  export = errors;
}
declare module "undici/lib/handler/unwrap-handler.js" {
  import type { Dispatcher } from "undici";
  /** A handler of either of undici's handler APIs, as the legacy one (onConnect, onError, …). */
  const UnwrapHandler: {
    unwrap(handler: Dispatcher.DispatchHandler): Dispatcher.DispatchHandler;
  };
  export = UnwrapHandler;
}
declare module "undici/lib/api/index.js" {
  import type { Dispatcher } from "undici";
  const api: {
    request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  };
  export = api;
}
declare module "undici/lib/web/cookies/parse.js" {
  import type { Cookie } from "undici";
  /** null for a cookie browsers refuse too (RFC 6265bis 5.6). */
  export function parseSetCookie(header: string): Cookie | null;
}
