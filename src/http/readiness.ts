import { jsonAnswer, type Answer } from "../payment/index.js";
import type { SnapshotAdmission } from "./admission.js";

/** Something paid work depends on: the facilitator's /supported, a shared store. */
export interface ReadinessCheck {
  /** Named in the 503's `down` list. */
  name: string;
  /** True when usable; false or a rejection means down. */
  check(): Promise<boolean>;
}

/** A check that has not answered by then counts as down: a load balancer's probe must not hang. */
const CHECK_TIMEOUT_MS = 2_000;

/**
 * GET /ready (docs/operations.md, "Readiness and draining"): 200 `{"status":"ready"}` when every
 * check passes and the instance is not draining, else 503 `{"status":"not_ready","down":[…]}`
 * naming each failed check, or `draining`.
 */
export async function readinessAnswer(
  checks: readonly ReadinessCheck[],
  admission: SnapshotAdmission,
): Promise<Answer> {
  const down = admission.draining ? ["draining"] : [];
  const results = await Promise.all(checks.map((c) => passes(c)));
  checks.forEach((c, i) => {
    if (!results[i]) down.push(c.name);
  });
  return down.length === 0
    ? jsonAnswer(200, { status: "ready" })
    : jsonAnswer(503, { status: "not_ready", down });
}

async function passes(check: ReadinessCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.check().catch(() => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
