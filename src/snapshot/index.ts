// TEMPORARY interface stub, replaced by the real orchestration (snapshot.ts) — see the engine work.
import type { SnapshotConfig } from "../config.js";
import type { SnapshotResult } from "./result.js";

export interface EngineOptions extends SnapshotConfig {
  /** Port of the HTTPS probe for http final URLs; 443 in production, overridable by tests. */
  httpsProbePort?: number;
}

export interface SnapshotEngine {
  /** Validates (SPEC §2, throws SnapshotError) and runs one snapshot; rejects only with SnapshotError. */
  snapshot(rawUrl: string): Promise<SnapshotResult>;
  close(): Promise<void>;
}

export function createSnapshotEngine(_options: EngineOptions): SnapshotEngine {
  throw new Error("not implemented yet");
}
