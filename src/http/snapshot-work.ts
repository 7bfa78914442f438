import type * as z from "zod";
import { jsonAnswer, type Answer } from "../payment/index.js";
import { SnapshotError, type SnapshotEngine, type SnapshotTarget } from "../snapshot/index.js";
import { SnapshotErrorBodySchema, SnapshotResultSchema } from "./documents/report-schemas.js";
import { snapshotErrorAnswer, snapshotErrorBody } from "./snapshot-input.js";

type Logger = (message: string, error?: unknown) => void;

/**
 * Responses are checked against the published schemas. A mismatch is a bug in this service:
 * it is logged, and the answer is still sent as it is, because withholding a (possibly paid)
 * report over a schema slip would hurt the client more than the slip itself.
 */
export type ShapeCheck = (schema: z.ZodType, value: unknown, what: string) => void;

export function shapeChecker(log: Logger): ShapeCheck {
  return (schema, value, what) => {
    const parsed = schema.safeParse(value);
    if (!parsed.success) log(`response drifted from the ${what} schema`, parsed.error.issues);
  };
}

/** The paid work of every door: a checked target's snapshot as an answer. */
export type SnapshotWork = (target: SnapshotTarget, signal: AbortSignal) => Promise<Answer>;

/**
 * The engine's snapshot of a target parsed where the request arrived: the report (200) or its
 * SnapshotError (400, never charged), each checked against its schema.
 */
export function snapshotWork(engine: SnapshotEngine, checkShape: ShapeCheck): SnapshotWork {
  return async (target, signal) => {
    try {
      const result = await engine.snapshot(target, { signal });
      checkShape(SnapshotResultSchema, result, "SnapshotResult");
      return jsonAnswer(200, result);
    } catch (err) {
      if (!(err instanceof SnapshotError)) throw err;
      const body = snapshotErrorBody(err, target.raw);
      checkShape(SnapshotErrorBodySchema, body, "SnapshotError");
      return snapshotErrorAnswer(body);
    }
  };
}
