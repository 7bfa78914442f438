/**
 * The one walk over nested errors. undici and Node wrap the error that says what happened (in
 * `cause`, or among an AggregateError's `errors`), so every question about a failed request is
 * asked of the whole chain, nearest first. Cycles are skipped and the walk is bounded.
 */

const MAX_ERRORS = 32;

/** `err` and every error it wraps, nearest first. */
export function errorChain(err: unknown): object[] {
  const chain: object[] = [];
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < MAX_ERRORS) {
    const e = queue.shift();
    if (e === null || typeof e !== "object" || seen.has(e)) continue;
    seen.add(e);
    chain.push(e);
    const { cause, errors } = e as { cause?: unknown; errors?: unknown };
    queue.push(cause);
    if (Array.isArray(errors)) queue.push(...(errors as unknown[]));
  }
  return chain;
}

/** Every string `code` in the chain, nearest first. */
export function errorCodes(err: unknown): string[] {
  return errorChain(err)
    .map((e) => (e as { code?: unknown }).code)
    .filter((code): code is string => typeof code === "string");
}
