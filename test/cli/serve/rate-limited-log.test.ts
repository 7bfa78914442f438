/** The per-request log of `serve`: short lines, a bounded number per window, then a summary. */
import { expect, it } from "vitest";
import { rateLimitedLog } from "../../../src/cli/serve/rate-limited-log.js";

it("writes at most linesPerWindow lines per window, one line each, then says how many it dropped", async () => {
  const written: string[] = [];
  const log = rateLimitedLog((line) => written.push(line), { linesPerWindow: 5, windowSeconds: 1 });
  log("first\n    at a stack frame\n    at another");
  log("x".repeat(5_000));
  for (let i = 0; i < 998; i++) log(`line ${i}`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(written).toEqual([
    "first at a stack frame at another",
    `${"x".repeat(299)}…`,
    "line 0",
    "line 1",
    "line 2",
  ]);
  // The summary comes when the window ends, well within a generous wait.
  for (let waited = 0; written.length < 6 && waited < 5_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(written.slice(5)).toEqual(["995 log lines suppressed (at most 5 per 1 s)"]);
  log("after the window");
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(written.at(-1)).toBe("after the window");
});
