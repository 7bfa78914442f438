/**
 * undici's Set-Cookie parser by its own path, apart from net/undici.ts: the rules judge cookies
 * with it, and must not load undici's dispatchers with it (a command that loads the rules but
 * makes no request, `secsnap scan` refusing its input, would pay for them).
 */
export { parseSetCookie } from "undici/lib/web/cookies/parse.js";
