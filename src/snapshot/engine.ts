/**
 * The engine as callers get it: its heavy parts (undici, the rules, the HTML parser and the
 * public suffix list they load on use) are imported when it is created, not with this module,
 * so a caller that refuses its input first (`secsnap scan` with a URL the policy refuses) never
 * loads them (docs/benchmarks-history.md, "Start-up").
 */
import type { EngineOptions, SnapshotEngine, SnapshotOptions } from "./snapshot.js";
import type { SnapshotResult } from "./result.js";

export function createSnapshotEngine(options: EngineOptions): SnapshotEngine {
  const engine = import("./snapshot.js").then((m) => m.createSnapshotEngine(options));
  // A failed import surfaces on use; here it must not be an unhandled rejection.
  engine.catch(() => undefined);
  return {
    async snapshot(rawUrl: string, snapshotOptions?: SnapshotOptions): Promise<SnapshotResult> {
      return (await engine).snapshot(rawUrl, snapshotOptions);
    },
    async close(): Promise<void> {
      await (await engine).close();
    },
  };
}
